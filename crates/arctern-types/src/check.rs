//! Checking JSON values against JSON Schemas: a tool call's arguments against the tool's
//! `inputSchema`, and a form's answer against the schema it was asked with. One checker,
//! one set of messages: a [`CheckError`] names the field at fault and says what is wrong
//! with it in words a person (or a model) can act on, such as `steps: must be at most 100`.
//!
//! A [`Checker`] is a schema compiled once (when a tool is registered, say) and then run on
//! every value. It understands JSON Schema 2020-12 (and the draft-07 spellings of tuples and
//! dependencies) as far as an argument object needs:
//!
//! | keywords | |
//! | --- | --- |
//! | any value | `type`, `enum`, `const`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref` (JSON pointers into the same document, `$defs` and `definitions` included; recursion is fine) |
//! | numbers | `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`; the integer `format`s schemars writes (`int8` … `uint64`) bound the value to the Rust type's range |
//! | strings | `minLength`, `maxLength` (in characters), `pattern`, `format` `email`, `uri`, `date` and `date-time` |
//! | arrays | `items`, `prefixItems`, `minItems`, `maxItems`, `uniqueItems`, `contains`, `minContains`, `maxContains` |
//! | objects | `properties`, `required`, `additionalProperties`, `patternProperties`, `propertyNames`, `minProperties`, `maxProperties`, `dependentRequired`, `unevaluatedProperties` |
//!
//! Annotations (`title`, `description`, `default`, `examples`, other `format`s, `x-…`
//! extensions) are not assertions and are not checked. A schema using an assertion this
//! checker does not implement (`unevaluatedItems`, `dependentSchemas`, `$dynamicRef`, a
//! reference to another document, a `pattern` it cannot compile) does not compile: the
//! [`CompileError`] says which keyword, and where, rather than leaving a bound unchecked.
//!
//! ```
//! use arctern_types::check::Checker;
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 100}},
//!     "required": ["steps"]
//! });
//! let checker = Checker::compile(schema.as_object().unwrap()).unwrap();
//! assert!(checker.check(&json!({"steps": 42})).is_ok());
//! let err = checker.check(&json!({"steps": 500})).unwrap_err();
//! assert_eq!(err.field(), "steps");
//! assert_eq!(err.to_string(), "steps: must be at most 100");
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde_json::{Number, Value};

use crate::meta::JsonObject;

/// Why a value does not fit a schema: the field at fault and the problem.
///
/// The field is a path from the checked value: `steps`, `address.city`, `tags[2]`; empty
/// when the value as a whole is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    field: String,
    problem: String,
}

impl CheckError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        CheckError {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The field at fault (empty for the value as a whole).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.field, self.problem)
        }
    }
}

impl std::error::Error for CheckError {}

/// Why a schema cannot be compiled into a [`Checker`]: where in the schema (a JSON pointer,
/// empty for the root), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    location: String,
    reason: String,
}

impl CompileError {
    fn new(location: &str, reason: impl Into<String>) -> Self {
        CompileError {
            location: location.to_owned(),
            reason: reason.into(),
        }
    }

    /// Where in the schema, as a JSON pointer (`/properties/code/pattern`); empty for the
    /// root.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Why it cannot be checked.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "at {}: {}", self.location, self.reason)
        }
    }
}

impl std::error::Error for CompileError {}

/// A JSON Schema compiled for checking values (see the [module](self) for what it checks).
/// Cheap to share: compile once, check many times.
#[derive(Debug, Clone)]
pub struct Checker {
    nodes: Vec<Node>,
    /// Whether any node has `unevaluatedProperties`, which needs every applicator to report
    /// the members it evaluated; otherwise nothing is collected.
    tracks: bool,
}

/// The JSON types, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types(u8);

impl Types {
    pub(crate) const NULL: Types = Types(1);
    pub(crate) const BOOLEAN: Types = Types(2);
    pub(crate) const INTEGER: Types = Types(4);
    pub(crate) const NUMBER: Types = Types(8);
    pub(crate) const STRING: Types = Types(16);
    pub(crate) const ARRAY: Types = Types(32);
    pub(crate) const OBJECT: Types = Types(64);

    /// Each type's name, and its words in a message (null last: "text or null").
    const NAMES: [(Types, &'static str, &'static str); 7] = [
        (Types::BOOLEAN, "boolean", "true or false"),
        (Types::INTEGER, "integer", "a whole number"),
        (Types::NUMBER, "number", "a number"),
        (Types::STRING, "string", "text"),
        (Types::ARRAY, "array", "a list"),
        (Types::OBJECT, "object", "an object"),
        (Types::NULL, "null", "null"),
    ];

    fn named(name: &str) -> Option<Types> {
        Types::NAMES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(t, _, _)| *t)
    }

    fn contains(self, other: Types) -> bool {
        self.0 & other.0 != 0
    }

    fn admits(self, value: &Value) -> bool {
        match value {
            Value::Null => self.contains(Types::NULL),
            Value::Bool(_) => self.contains(Types::BOOLEAN),
            Value::Number(n) => {
                self.contains(Types::NUMBER) || (self.contains(Types::INTEGER) && is_integer(n))
            }
            Value::String(_) => self.contains(Types::STRING),
            Value::Array(_) => self.contains(Types::ARRAY),
            Value::Object(_) => self.contains(Types::OBJECT),
        }
    }

    /// `must be text or null`, for a value of none of these types.
    fn problem(self) -> String {
        let names: Vec<&str> = Types::NAMES
            .iter()
            .filter(|(t, _, _)| self.contains(*t))
            // "a number" covers "a whole number".
            .filter(|(t, _, _)| *t != Types::INTEGER || !self.contains(Types::NUMBER))
            .map(|(_, _, words)| *words)
            .collect();
        match names.as_slice() {
            [] => "is not allowed".into(),
            [one] => format!("must be {one}"),
            [rest @ .., last] => format!("must be {} or {last}", rest.join(", ")),
        }
    }
}

impl std::ops::BitOr for Types {
    type Output = Types;
    fn bitor(self, other: Types) -> Types {
        Types(self.0 | other.0)
    }
}

/// A string format the checker asserts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Format {
    Email,
    Uri,
    Date,
    DateTime,
    /// An integer in a Rust type's range (schemars' `int32`, `uint8`, …).
    Int {
        min: i128,
        max: i128,
    },
}

impl Format {
    fn named(name: &str) -> Option<Format> {
        let int = |min: i128, max: i128| Some(Format::Int { min, max });
        match name {
            "email" => Some(Format::Email),
            "uri" => Some(Format::Uri),
            "date" => Some(Format::Date),
            "date-time" => Some(Format::DateTime),
            "int8" => int(i8::MIN.into(), i8::MAX.into()),
            "int16" => int(i16::MIN.into(), i16::MAX.into()),
            "int32" => int(i32::MIN.into(), i32::MAX.into()),
            "int64" => int(i64::MIN.into(), i64::MAX.into()),
            "uint8" => int(0, u8::MAX.into()),
            "uint16" => int(0, u16::MAX.into()),
            "uint32" => int(0, u32::MAX.into()),
            "uint64" | "uint" => int(0, u64::MAX.into()),
            "int" => int(i64::MIN.into(), i64::MAX.into()),
            _ => None,
        }
    }
}

/// A compiled `pattern`.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    source: String,
    regex: regex_lite::Regex,
}

impl Pattern {
    fn compile(source: &str, location: &str) -> Result<Pattern, CompileError> {
        regex_lite::Regex::new(source)
            .map(|regex| Pattern {
                source: source.to_owned(),
                regex,
            })
            .map_err(|e| {
                CompileError::new(
                    location,
                    format!("the pattern {source:?} is not supported: {e}"),
                )
            })
    }
}

/// `additionalProperties`, `items` and friends: a subschema by index.
type NodeId = usize;

/// One compiled schema. Every keyword is optional; an empty node admits anything.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    /// The `false` schema.
    pub(crate) never: bool,
    pub(crate) types: Option<Types>,
    pub(crate) options: Option<Vec<Value>>,
    pub(crate) constant: Option<Value>,
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_minimum: Option<f64>,
    pub(crate) exclusive_maximum: Option<f64>,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) format: Option<Format>,
    pub(crate) prefix_items: Vec<NodeId>,
    pub(crate) items: Option<NodeId>,
    pub(crate) contains: Option<NodeId>,
    pub(crate) min_contains: Option<u64>,
    pub(crate) max_contains: Option<u64>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) unique_items: bool,
    pub(crate) properties: BTreeMap<String, NodeId>,
    pub(crate) pattern_properties: Vec<(Pattern, NodeId)>,
    pub(crate) additional_properties: Option<NodeId>,
    pub(crate) unevaluated_properties: Option<NodeId>,
    pub(crate) required: Vec<String>,
    pub(crate) dependent_required: Vec<(String, Vec<String>)>,
    pub(crate) property_names: Option<NodeId>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) all_of: Vec<NodeId>,
    pub(crate) any_of: Vec<NodeId>,
    pub(crate) one_of: Vec<NodeId>,
    pub(crate) not: Option<NodeId>,
    pub(crate) condition: Option<(NodeId, Option<NodeId>, Option<NodeId>)>,
    pub(crate) reference: Option<NodeId>,
}

/// Keywords that assert something this checker does not implement.
const UNSUPPORTED: [&str; 6] = [
    "unevaluatedItems",
    "dependentSchemas",
    "$dynamicRef",
    "$recursiveRef",
    "contentSchema",
    "$vocabulary",
];

/// The compiler's state: the root document (for `$ref`), and the nodes compiled so far by
/// their JSON pointer (so that a reference and the walk share one node, and recursion ends).
struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    by_pointer: HashMap<String, NodeId>,
    tracks: bool,
}

impl Checker {
    /// Compiles a schema object. Fails, naming the keyword and its place, on an invalid
    /// schema or one with an assertion this checker does not implement.
    pub fn compile(schema: &JsonObject) -> Result<Checker, CompileError> {
        let root = Value::Object(schema.clone());
        let mut compiler = Compiler {
            root: &root,
            nodes: Vec::new(),
            by_pointer: HashMap::new(),
            tracks: false,
        };
        compiler.compile(&root, String::new())?;
        Ok(Checker {
            nodes: compiler.nodes,
            tracks: compiler.tracks,
        })
    }

    /// A checker of already compiled nodes, the first being the root.
    pub(crate) fn from_nodes(nodes: Vec<Node>) -> Checker {
        Checker {
            nodes,
            tracks: false,
        }
    }

    /// Checks `value`; the first problem found is the error.
    pub fn check(&self, value: &Value) -> Result<(), CheckError> {
        let mut path = Path::default();
        self.eval(0, value, &mut path).map(|_| ())
    }
}

impl Compiler<'_> {
    /// Compiles the schema at `pointer` (already resolved to `schema`), once.
    fn compile(&mut self, schema: &Value, pointer: String) -> Result<NodeId, CompileError> {
        if let Some(&id) = self.by_pointer.get(&pointer) {
            return Ok(id);
        }
        let id = self.nodes.len();
        self.nodes.push(Node::default());
        self.by_pointer.insert(pointer.clone(), id);
        let node = self.node(schema, &pointer)?;
        self.nodes[id] = node;
        Ok(id)
    }

    fn sub(&mut self, schema: &Value, pointer: &str, key: &str) -> Result<NodeId, CompileError> {
        self.compile(schema, format!("{pointer}/{}", escape(key)))
    }

    fn node(&mut self, schema: &Value, at: &str) -> Result<Node, CompileError> {
        let map = match schema {
            Value::Bool(true) => return Ok(Node::default()),
            Value::Bool(false) => {
                return Ok(Node {
                    never: true,
                    ..Node::default()
                });
            }
            Value::Object(map) => map,
            _ => {
                return Err(CompileError::new(
                    at,
                    "a schema must be an object or a boolean",
                ));
            }
        };
        if let Some(keyword) = UNSUPPORTED.iter().find(|k| map.contains_key(**k)) {
            return Err(CompileError::new(
                at,
                format!("the keyword {keyword} is not supported by the checker"),
            ));
        }
        let mut node = Node::default();
        for (key, value) in map {
            let here = format!("{at}/{}", escape(key));
            match key.as_str() {
                "type" => node.types = Some(types(value, &here)?),
                "enum" => match value {
                    Value::Array(options) => node.options = Some(options.clone()),
                    _ => return Err(CompileError::new(&here, "enum must be an array")),
                },
                "const" => node.constant = Some(value.clone()),
                "minimum" => node.minimum = Some(number(value, &here)?),
                "maximum" => node.maximum = Some(number(value, &here)?),
                "exclusiveMinimum" => node.exclusive_minimum = Some(number(value, &here)?),
                "exclusiveMaximum" => node.exclusive_maximum = Some(number(value, &here)?),
                "multipleOf" => {
                    let m = number(value, &here)?;
                    if m <= 0.0 {
                        return Err(CompileError::new(&here, "multipleOf must be above 0"));
                    }
                    node.multiple_of = Some(m);
                }
                "minLength" => node.min_length = Some(count(value, &here)?),
                "maxLength" => node.max_length = Some(count(value, &here)?),
                "pattern" => match value {
                    Value::String(p) => node.pattern = Some(Pattern::compile(p, &here)?),
                    _ => return Err(CompileError::new(&here, "pattern must be a string")),
                },
                "format" => node.format = value.as_str().and_then(Format::named),
                "prefixItems" => node.prefix_items = self.list(value, &here)?,
                "items" => match value {
                    // draft-07 tuples
                    Value::Array(_) => node.prefix_items = self.list(value, &here)?,
                    _ => node.items = Some(self.compile(value, here)?),
                },
                "additionalItems" if map.get("items").is_some_and(Value::is_array) => {
                    node.items = Some(self.compile(value, here)?);
                }
                "contains" => node.contains = Some(self.compile(value, here)?),
                "minContains" => node.min_contains = Some(count(value, &here)?),
                "maxContains" => node.max_contains = Some(count(value, &here)?),
                "minItems" => node.min_items = Some(count(value, &here)?),
                "maxItems" => node.max_items = Some(count(value, &here)?),
                "uniqueItems" => node.unique_items = value.as_bool().unwrap_or(false),
                "properties" => {
                    for (name, sub) in object(value, &here)? {
                        let id = self.sub(sub, &here, name)?;
                        node.properties.insert(name.clone(), id);
                    }
                }
                "patternProperties" => {
                    for (source, sub) in object(value, &here)? {
                        let pattern = Pattern::compile(source, &here)?;
                        let id = self.sub(sub, &here, source)?;
                        node.pattern_properties.push((pattern, id));
                    }
                }
                "additionalProperties" => {
                    node.additional_properties = Some(self.compile(value, here)?);
                }
                "unevaluatedProperties" => {
                    self.tracks = true;
                    node.unevaluated_properties = Some(self.compile(value, here)?);
                }
                "required" => node.required = names(value, &here)?,
                "dependentRequired" => {
                    for (name, deps) in object(value, &here)? {
                        let deps = names(deps, &format!("{here}/{}", escape(name)))?;
                        node.dependent_required.push((name.clone(), deps));
                    }
                }
                // draft-07: the array form is dependentRequired; the schema form is
                // dependentSchemas, which is not supported.
                "dependencies" => {
                    for (name, deps) in object(value, &here)? {
                        let at = format!("{here}/{}", escape(name));
                        if !deps.is_array() {
                            return Err(CompileError::new(
                                &at,
                                "schema dependencies are not supported by the checker",
                            ));
                        }
                        node.dependent_required
                            .push((name.clone(), names(deps, &at)?));
                    }
                }
                "propertyNames" => node.property_names = Some(self.compile(value, here)?),
                "minProperties" => node.min_properties = Some(count(value, &here)?),
                "maxProperties" => node.max_properties = Some(count(value, &here)?),
                "allOf" => node.all_of = self.list(value, &here)?,
                "anyOf" => node.any_of = self.list(value, &here)?,
                "oneOf" => node.one_of = self.list(value, &here)?,
                "not" => node.not = Some(self.compile(value, here)?),
                "if" => {
                    let condition = self.compile(value, here)?;
                    let then = match map.get("then") {
                        Some(v) => Some(self.sub(v, at, "then")?),
                        None => None,
                    };
                    let otherwise = match map.get("else") {
                        Some(v) => Some(self.sub(v, at, "else")?),
                        None => None,
                    };
                    node.condition = Some((condition, then, otherwise));
                }
                "$ref" => node.reference = Some(self.reference(value, &here)?),
                _ => {}
            }
        }
        Ok(node)
    }

    fn list(&mut self, value: &Value, at: &str) -> Result<Vec<NodeId>, CompileError> {
        let Value::Array(schemas) = value else {
            return Err(CompileError::new(at, "must be an array of schemas"));
        };
        schemas
            .iter()
            .enumerate()
            .map(|(i, s)| self.compile(s, format!("{at}/{i}")))
            .collect()
    }

    /// A `$ref` to a JSON pointer in this document (`#`, `#/$defs/Name`).
    fn reference(&mut self, value: &Value, at: &str) -> Result<NodeId, CompileError> {
        let Some(target) = value.as_str() else {
            return Err(CompileError::new(at, "$ref must be a string"));
        };
        let Some(fragment) = target.strip_prefix('#') else {
            return Err(CompileError::new(
                at,
                format!(
                    "the reference {target:?} points outside the schema, which the checker does not follow"
                ),
            ));
        };
        let pointer = percent_decode(fragment);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(CompileError::new(
                at,
                format!(
                    "the reference {target:?} names an anchor; only JSON pointers are supported"
                ),
            ));
        }
        let Some(schema) = self.root.pointer(&pointer) else {
            return Err(CompileError::new(
                at,
                format!("the reference {target:?} points at nothing"),
            ));
        };
        self.compile(schema, pointer)
    }
}

fn types(value: &Value, at: &str) -> Result<Types, CompileError> {
    let one = |v: &Value| {
        v.as_str()
            .and_then(Types::named)
            .ok_or_else(|| CompileError::new(at, format!("{v} is not a JSON type")))
    };
    match value {
        Value::Array(list) => list
            .iter()
            .try_fold(Types::default(), |t, v| Ok(t | one(v)?)),
        other => one(other),
    }
}

fn number(value: &Value, at: &str) -> Result<f64, CompileError> {
    value
        .as_f64()
        .ok_or_else(|| CompileError::new(at, "must be a number"))
}

fn count(value: &Value, at: &str) -> Result<u64, CompileError> {
    match value {
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or_default()),
        Value::Number(n) if n.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0) => {
            Ok(n.as_f64().unwrap_or_default() as u64)
        }
        _ => Err(CompileError::new(at, "must be a non-negative integer")),
    }
}

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v JsonObject, CompileError> {
    value
        .as_object()
        .ok_or_else(|| CompileError::new(at, "must be an object"))
}

fn names(value: &Value, at: &str) -> Result<Vec<String>, CompileError> {
    let Value::Array(list) = value else {
        return Err(CompileError::new(at, "must be an array of names"));
    };
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| CompileError::new(at, "must be an array of names"))
        })
        .collect()
}

/// A member name as a JSON pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `%20` and friends in a URI fragment.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the checker is in the value being checked.
#[derive(Default)]
struct Path {
    segments: Vec<Segment>,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl Path {
    fn error(&self, problem: impl Into<String>) -> CheckError {
        let mut field = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Key(key) => {
                    if !field.is_empty() {
                        field.push('.');
                    }
                    field.push_str(key);
                }
                Segment::Index(i) => {
                    field.push('[');
                    field.push_str(&i.to_string());
                    field.push(']');
                }
            }
        }
        CheckError::new(field, problem)
    }

    fn within<T>(&mut self, segment: Segment, f: impl FnOnce(&mut Path) -> T) -> T {
        self.segments.push(segment);
        let out = f(self);
        self.segments.pop();
        out
    }
}

/// The members of an object that a schema (and its applicators) evaluated: what
/// `unevaluatedProperties` leaves alone. Only collected when a schema needs it.
#[derive(Default)]
struct Evaluated {
    all: bool,
    names: Vec<String>,
}

impl Evaluated {
    fn merge(&mut self, other: Evaluated) {
        self.all |= other.all;
        self.names.extend(other.names);
    }

    fn covers(&self, name: &str) -> bool {
        self.all || self.names.iter().any(|n| n == name)
    }
}

impl Checker {
    fn eval(&self, id: NodeId, value: &Value, path: &mut Path) -> Result<Evaluated, CheckError> {
        let node = &self.nodes[id];
        if node.never {
            return Err(path.error("is not allowed"));
        }
        if let Some(types) = node.types
            && !types.admits(value)
        {
            return Err(path.error(types.problem()));
        }
        if let Some(constant) = &node.constant
            && !same(constant, value)
        {
            return Err(path.error(format!("must be {constant}")));
        }
        if let Some(options) = &node.options
            && !options.iter().any(|o| same(o, value))
        {
            return Err(path.error(format!("{value} is not one of the options")));
        }
        let mut evaluated = Evaluated::default();
        match value {
            Value::Number(n) => self.number(node, n, path)?,
            Value::String(s) => self.string(node, s, path)?,
            Value::Array(items) => self.array(node, items, path)?,
            Value::Object(map) => self.object(node, map, path, &mut evaluated)?,
            Value::Null | Value::Bool(_) => {}
        }
        for &sub in &node.all_of {
            evaluated.merge(self.eval(sub, value, path)?);
        }
        if !node.any_of.is_empty() {
            let mut best: Option<CheckError> = None;
            let mut matched = false;
            for &sub in &node.any_of {
                match self.eval(sub, value, path) {
                    Ok(e) => {
                        matched = true;
                        evaluated.merge(e);
                        if !self.tracks {
                            break;
                        }
                    }
                    Err(e) => best = Some(deeper(best, e)),
                }
            }
            if !matched {
                return Err(best.unwrap_or_else(|| path.error("is not allowed")));
            }
        }
        if !node.one_of.is_empty() {
            let mut best: Option<CheckError> = None;
            let mut matches = 0;
            for &sub in &node.one_of {
                match self.eval(sub, value, path) {
                    Ok(e) => {
                        matches += 1;
                        evaluated.merge(e);
                    }
                    Err(e) => best = Some(deeper(best, e)),
                }
            }
            match matches {
                1 => {}
                0 => return Err(best.unwrap_or_else(|| path.error("is not allowed"))),
                _ => return Err(path.error("matches more than one of the allowed forms")),
            }
        }
        if let Some(not) = node.not
            && self.eval(not, value, path).is_ok()
        {
            return Err(path.error("has a form that is not allowed"));
        }
        if let Some((condition, then, otherwise)) = node.condition {
            match self.eval(condition, value, path) {
                Ok(e) => {
                    evaluated.merge(e);
                    if let Some(then) = then {
                        evaluated.merge(self.eval(then, value, path)?);
                    }
                }
                Err(_) => {
                    if let Some(otherwise) = otherwise {
                        evaluated.merge(self.eval(otherwise, value, path)?);
                    }
                }
            }
        }
        if let Some(reference) = node.reference {
            evaluated.merge(self.eval(reference, value, path)?);
        }
        if let (Some(unevaluated), Value::Object(map)) = (node.unevaluated_properties, value) {
            for (name, member) in map {
                if !evaluated.covers(name) {
                    path.within(Segment::Key(name.clone()), |p| {
                        self.member(unevaluated, member, p)
                    })?;
                }
            }
            evaluated.all = true;
        }
        Ok(evaluated)
    }

    /// A member checked against a subschema; the `false` schema says the member is not
    /// expected at all.
    fn member(&self, id: NodeId, value: &Value, path: &mut Path) -> Result<(), CheckError> {
        if self.nodes[id].never {
            return Err(path.error("is not allowed here"));
        }
        self.eval(id, value, path).map(|_| ())
    }

    fn number(&self, node: &Node, n: &Number, path: &Path) -> Result<(), CheckError> {
        let Some(x) = n.as_f64() else {
            return Ok(());
        };
        if let Some(min) = node.minimum
            && x < min
        {
            return Err(path.error(format!("must be at least {min}")));
        }
        if let Some(max) = node.maximum
            && x > max
        {
            return Err(path.error(format!("must be at most {max}")));
        }
        if let Some(min) = node.exclusive_minimum
            && x <= min
        {
            return Err(path.error(format!("must be more than {min}")));
        }
        if let Some(max) = node.exclusive_maximum
            && x >= max
        {
            return Err(path.error(format!("must be less than {max}")));
        }
        if let Some(m) = node.multiple_of {
            let q = x / m;
            if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
                return Err(path.error(format!("must be a multiple of {m}")));
            }
        }
        if let Some(Format::Int { min, max }) = node.format {
            let whole = n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from));
            let fits = match whole {
                Some(w) => (min..=max).contains(&w),
                None => is_integer(n) && x >= min as f64 && x <= max as f64,
            };
            if !fits {
                return Err(path.error(if is_integer(n) {
                    format!("must be between {min} and {max}")
                } else {
                    "must be a whole number".to_owned()
                }));
            }
        }
        Ok(())
    }

    fn string(&self, node: &Node, text: &str, path: &Path) -> Result<(), CheckError> {
        if node.min_length.is_some() || node.max_length.is_some() {
            let chars = text.chars().count() as u64;
            if let Some(min) = node.min_length
                && chars < min
            {
                return Err(path.error(format!("must be at least {min} characters long")));
            }
            if let Some(max) = node.max_length
                && chars > max
            {
                return Err(path.error(format!("must be at most {max} characters long")));
            }
        }
        if let Some(pattern) = &node.pattern
            && !pattern.regex.is_match(text)
        {
            return Err(path.error(format!("must match the pattern {}", pattern.source)));
        }
        if let Some(format) = node.format
            && let Some(problem) = format_problem(text, format)
        {
            return Err(path.error(problem));
        }
        Ok(())
    }

    fn array(&self, node: &Node, items: &[Value], path: &mut Path) -> Result<(), CheckError> {
        let len = items.len() as u64;
        if let Some(min) = node.min_items
            && len < min
        {
            return Err(path.error(format!("must have at least {min} item{}", plural(min))));
        }
        if let Some(max) = node.max_items
            && len > max
        {
            return Err(path.error(format!("must have at most {max} item{}", plural(max))));
        }
        if node.unique_items
            && let Some(twice) = items
                .iter()
                .enumerate()
                .find(|(i, item)| items[..*i].iter().any(|earlier| same(earlier, item)))
                .map(|(_, item)| item)
        {
            return Err(path.error(format!("has {twice} twice")));
        }
        for (i, item) in items.iter().enumerate() {
            let schema = node.prefix_items.get(i).copied().or(node.items);
            if let Some(schema) = schema {
                path.within(Segment::Index(i), |p| self.member(schema, item, p))?;
            }
        }
        if let Some(contains) = node.contains {
            let matching = items
                .iter()
                .filter(|item| self.eval(contains, item, &mut Path::default()).is_ok())
                .count() as u64;
            let min = node.min_contains.unwrap_or(1);
            if matching < min {
                return Err(path.error(format!(
                    "must have at least {min} item{} of the required kind",
                    plural(min)
                )));
            }
            if let Some(max) = node.max_contains
                && matching > max
            {
                return Err(path.error(format!(
                    "must have at most {max} item{} of that kind",
                    plural(max)
                )));
            }
        }
        Ok(())
    }

    fn object(
        &self,
        node: &Node,
        map: &JsonObject,
        path: &mut Path,
        evaluated: &mut Evaluated,
    ) -> Result<(), CheckError> {
        for name in &node.required {
            if !map.contains_key(name) {
                return Err(path.within(Segment::Key(name.clone()), |p| {
                    p.error("a value is required")
                }));
            }
        }
        for (name, deps) in &node.dependent_required {
            if map.contains_key(name)
                && let Some(missing) = deps.iter().find(|d| !map.contains_key(*d))
            {
                return Err(path.within(Segment::Key(missing.clone()), |p| {
                    p.error(format!("a value is required with {name}"))
                }));
            }
        }
        let len = map.len() as u64;
        if let Some(min) = node.min_properties
            && len < min
        {
            return Err(path.error(format!("must have at least {min} member{}", plural(min))));
        }
        if let Some(max) = node.max_properties
            && len > max
        {
            return Err(path.error(format!("must have at most {max} member{}", plural(max))));
        }
        let open = node.properties.is_empty()
            && node.pattern_properties.is_empty()
            && node.additional_properties.is_none()
            && node.property_names.is_none();
        if open {
            return Ok(());
        }
        for (name, member) in map {
            path.within(Segment::Key(name.clone()), |p| {
                if let Some(names) = node.property_names
                    && self
                        .eval(names, &Value::String(name.clone()), &mut Path::default())
                        .is_err()
                {
                    return Err(p.error("is not an allowed name"));
                }
                let mut matched = false;
                if let Some(&schema) = node.properties.get(name) {
                    matched = true;
                    self.member(schema, member, p)?;
                }
                for (pattern, schema) in &node.pattern_properties {
                    if pattern.regex.is_match(name) {
                        matched = true;
                        self.member(*schema, member, p)?;
                    }
                }
                if !matched && let Some(schema) = node.additional_properties {
                    matched = true;
                    self.member(schema, member, p)?;
                }
                if matched && self.tracks {
                    evaluated.names.push(name.clone());
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// The error that got further into the value (ties: the earlier one), for a union that
/// matched no branch: its message is usually the one that helps.
fn deeper(best: Option<CheckError>, next: CheckError) -> CheckError {
    match best {
        Some(best) if best.field.len() >= next.field.len() => best,
        _ => next,
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// JSON Schema equality: numbers by value (`1` equals `1.0`), the rest structurally.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// What is wrong with `text` as a value of `format`, if anything.
fn format_problem(text: &str, format: Format) -> Option<&'static str> {
    let (ok, name) = match format {
        Format::Email => (is_email(text), "must be an email address"),
        Format::Uri => (
            is_uri(text),
            "must be a URI (with a scheme, such as https:)",
        ),
        Format::Date => (is_date(text), "must be a date (YYYY-MM-DD)"),
        Format::DateTime => (
            text.split_once(['T', 't'])
                .is_some_and(|(date, time)| is_date(date) && is_time_with_offset(time)),
            "must be a date and time (RFC 3339, such as 2026-07-28T09:30:00Z)",
        ),
        Format::Int { .. } => return None,
    };
    (!ok).then_some(name)
}

fn is_email(text: &str) -> bool {
    text.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && !domain.is_empty()
            && !domain.contains('@')
            && !text.chars().any(char::is_whitespace)
    })
}

fn is_uri(text: &str) -> bool {
    let scheme = text.split_once(':').map(|(s, _)| s).unwrap_or("");
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `YYYY-MM-DD`, a real calendar day.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `HH:MM:SS[.frac](Z|±HH:MM)` (RFC 3339 `full-time`; a leap second is allowed).
fn is_time_with_offset(text: &str) -> bool {
    let (time, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let offset_ok = match offset.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h @ ..] if h.len() == 5 && h[2] == b':' => {
            matches!((digits(&h[0..2]), digits(&h[3..5])), (Some(hh), Some(mm)) if hh < 24 && mm < 60)
        }
        _ => false,
    };
    let b = time.as_bytes();
    if !offset_ok || b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let fraction_ok = match &b[8..] {
        [] => true,
        [b'.', rest @ ..] => !rest.is_empty() && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    matches!(
        (digits(&b[0..2]), digits(&b[3..5]), digits(&b[6..8])),
        (Some(h), Some(m), Some(s)) if h < 24 && m < 60 && s <= 60
    ) && fraction_ok
}

fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checker(schema: Value) -> Checker {
        Checker::compile(schema.as_object().unwrap()).unwrap()
    }

    fn problem(schema: &Checker, value: Value) -> String {
        schema.check(&value).unwrap_err().to_string()
    }

    #[test]
    fn types_and_required_members() {
        let c = checker(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": ["integer", "null"]},
                "ok": {"type": "boolean"}
            },
            "required": ["name"]
        }));
        assert!(c.check(&json!({"name": "Ada", "age": null})).is_ok());
        assert!(c.check(&json!({"name": "Ada", "age": 7.0})).is_ok());
        assert_eq!(problem(&c, json!({})), "name: a value is required");
        assert_eq!(problem(&c, json!([])), "must be an object");
        assert_eq!(problem(&c, json!({"name": 1})), "name: must be text");
        assert_eq!(
            problem(&c, json!({"name": "Ada", "age": 7.5})),
            "age: must be a whole number or null"
        );
        assert_eq!(
            problem(&c, json!({"name": "Ada", "ok": "yes"})),
            "ok: must be true or false"
        );
        // Members the schema does not name are its business only when it says so.
        assert!(c.check(&json!({"name": "Ada", "x": 1})).is_ok());
        let closed = checker(json!({"properties": {"a": {}}, "additionalProperties": false}));
        assert_eq!(problem(&closed, json!({"b": 1})), "b: is not allowed here");
    }

    #[test]
    fn numbers() {
        let c = checker(json!({"properties": {
            "steps": {"type": "integer", "minimum": 1, "maximum": 100, "format": "uint32"},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "even": {"type": "integer", "multipleOf": 2},
            "tenth": {"type": "number", "multipleOf": 0.1},
            "byte": {"type": "integer", "format": "uint8"}
        }}));
        assert_eq!(
            problem(&c, json!({"steps": 500})),
            "steps: must be at most 100"
        );
        assert_eq!(
            problem(&c, json!({"steps": 0})),
            "steps: must be at least 1"
        );
        assert_eq!(
            problem(&c, json!({"steps": "5"})),
            "steps: must be a whole number"
        );
        assert_eq!(
            problem(&c, json!({"ratio": 1})),
            "ratio: must be less than 1"
        );
        assert_eq!(
            problem(&c, json!({"ratio": 0})),
            "ratio: must be more than 0"
        );
        assert_eq!(
            problem(&c, json!({"even": 3})),
            "even: must be a multiple of 2"
        );
        assert!(
            c.check(&json!({"tenth": 0.3, "even": 4, "ratio": 0.5}))
                .is_ok()
        );
        assert_eq!(
            problem(&c, json!({"byte": 256})),
            "byte: must be between 0 and 255"
        );
        assert!(c.check(&json!({"byte": 255.0})).is_ok());
    }

    #[test]
    fn strings() {
        let c = checker(json!({"properties": {
            "code": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-zäö]+$"},
            "mail": {"type": "string", "format": "email"},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"}
        }}));
        assert!(c.check(&json!({"code": "äö"})).is_ok());
        assert!(problem(&c, json!({"code": "a"})).contains("at least 2 characters"));
        assert!(problem(&c, json!({"code": "abcd"})).contains("at most 3 characters"));
        assert_eq!(
            problem(&c, json!({"code": "A1"})),
            "code: must match the pattern ^[a-zäö]+$"
        );
        assert_eq!(
            problem(&c, json!({"mail": "ada@"})),
            "mail: must be an email address"
        );
        assert!(problem(&c, json!({"when": "2026-07-28 09:30:00Z"})).contains("RFC 3339"));
        // Formats the checker does not know are annotations.
        assert!(c.check(&json!({"id": "not a uuid"})).is_ok());
    }

    #[test]
    fn options_and_constants() {
        let c = checker(json!({"properties": {
            "units": {"enum": ["metric", "imperial"]},
            "n": {"enum": [1, 2]},
            "v": {"const": "2"}
        }}));
        assert_eq!(
            problem(&c, json!({"units": "kelvin"})),
            "units: \"kelvin\" is not one of the options"
        );
        // Numbers compare by value.
        assert!(c.check(&json!({"n": 2.0})).is_ok());
        assert_eq!(problem(&c, json!({"v": 2})), "v: must be \"2\"");
    }

    #[test]
    fn arrays() {
        let c = checker(json!({"properties": {
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                     "minItems": 1, "maxItems": 2, "uniqueItems": true},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": false},
            "some": {"type": "array", "contains": {"const": 7}}
        }}));
        assert_eq!(
            problem(&c, json!({"tags": ["a", "z"]})),
            "tags[1]: \"z\" is not one of the options"
        );
        assert_eq!(
            problem(&c, json!({"tags": ["a", "a"]})),
            "tags: has \"a\" twice"
        );
        assert_eq!(
            problem(&c, json!({"tags": []})),
            "tags: must have at least 1 item"
        );
        assert!(problem(&c, json!({"tags": ["a", "b", "c"]})).contains("at most 2 items"));
        assert_eq!(
            problem(&c, json!({"pair": ["x", "y"]})),
            "pair[1]: must be a whole number"
        );
        assert_eq!(
            problem(&c, json!({"pair": ["x", 1, 2]})),
            "pair[2]: is not allowed here"
        );
        assert!(c.check(&json!({"pair": ["x", 1], "some": [1, 7]})).is_ok());
        assert!(problem(&c, json!({"some": [1]})).contains("at least 1 item of"));
    }

    #[test]
    fn references_and_recursion() {
        let c = checker(json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Tree"}},
            "$defs": {"Tree": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
                },
                "required": ["name"]
            }}
        }));
        let good = json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}});
        assert!(c.check(&good).is_ok());
        let bad = json!({"root": {"name": "a", "children": [{"children": []}]}});
        assert_eq!(
            problem(&c, bad),
            "root.children[0].name: a value is required"
        );
    }

    #[test]
    fn unions_report_the_branch_that_got_furthest() {
        let c = checker(json!({"properties": {
            "units": {"anyOf": [{"enum": ["metric", "imperial"]}, {"type": "null"}]},
            "shape": {"oneOf": [
                {"type": "object", "properties": {"circle": {"type": "object",
                    "properties": {"r": {"type": "number", "minimum": 0}}, "required": ["r"]}},
                 "required": ["circle"], "additionalProperties": false},
                {"type": "object", "properties": {"square": {"type": "number"}},
                 "required": ["square"], "additionalProperties": false}
            ]},
            "either": {"oneOf": [{"type": "integer"}, {"type": "number"}]}
        }}));
        assert!(c.check(&json!({"units": null})).is_ok());
        assert_eq!(
            problem(&c, json!({"units": "kelvin"})),
            "units: \"kelvin\" is not one of the options"
        );
        assert_eq!(
            problem(&c, json!({"shape": {"circle": {"r": -1}}})),
            "shape.circle.r: must be at least 0"
        );
        assert!(c.check(&json!({"shape": {"square": 2}})).is_ok());
        assert_eq!(
            problem(&c, json!({"either": 1})),
            "either: matches more than one of the allowed forms"
        );
    }

    #[test]
    fn conditions_negation_and_dependencies() {
        let c = checker(json!({
            "properties": {"kind": {"type": "string"}, "n": {"not": {"const": 13}}},
            "if": {"properties": {"kind": {"const": "box"}}, "required": ["kind"]},
            "then": {"required": ["size"]},
            "dependentRequired": {"card": ["expiry"]}
        }));
        assert_eq!(
            problem(&c, json!({"kind": "box"})),
            "size: a value is required"
        );
        assert!(c.check(&json!({"kind": "bag"})).is_ok());
        assert_eq!(
            problem(&c, json!({"n": 13})),
            "n: has a form that is not allowed"
        );
        assert_eq!(
            problem(&c, json!({"card": "x"})),
            "expiry: a value is required with card"
        );
    }

    #[test]
    fn unevaluated_properties_see_through_applicators() {
        // What schemars writes for a struct flattening an enum, with deny_unknown_fields.
        let c = checker(json!({
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "oneOf": [
                {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"]}
            ],
            "unevaluatedProperties": false
        }));
        assert!(c.check(&json!({"id": "x", "a": 1})).is_ok());
        assert_eq!(
            problem(&c, json!({"id": "x", "a": 1, "c": 2})),
            "c: is not allowed here"
        );
    }

    #[test]
    fn schemas_that_cannot_be_checked_do_not_compile() {
        let compile = |schema: Value| Checker::compile(schema.as_object().unwrap()).unwrap_err();
        let e = compile(json!({"properties": {"a": {"dependentSchemas": {}}}}));
        assert_eq!(e.location(), "/properties/a");
        assert!(e.reason().contains("dependentSchemas"), "{e}");
        let e = compile(json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}}));
        assert!(e.to_string().contains("outside the schema"), "{e}");
        let e = compile(json!({"properties": {"a": {"pattern": "(?=x)"}}}));
        assert_eq!(e.location(), "/properties/a/pattern");
        let e = compile(json!({"$ref": "#/$defs/missing"}));
        assert!(e.reason().contains("points at nothing"), "{e}");
        let e = compile(json!({"minimum": "1"}));
        assert_eq!(e.location(), "/minimum");
        // Boolean schemas and empty objects admit what they should.
        assert!(
            checker(json!({"properties": {"a": true}}))
                .check(&json!({"a": [1]}))
                .is_ok()
        );
        assert!(checker(json!({})).check(&json!(7)).is_ok());
    }
}
