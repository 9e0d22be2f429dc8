//! RFC 6570 URI Template matching for MCP resource templates; see [`UriTemplate`].

use std::fmt;
use std::ops::Range;

use iri_string::spec::UriSpec;
use iri_string::template::context::{Context, Visitor};
use iri_string::template::{UriTemplateStr, UriTemplateString};

/// Longest URI, in bytes, that [`UriTemplate::matches`] looks at; longer URIs
/// never match.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// Work budget of a single [`UriTemplate::matches`] call, in elementary steps
/// (bytes scanned plus states visited). Realistic templates need a few steps
/// per URI byte; only hostile, highly ambiguous inputs exhaust it.
const MAX_WORK: usize = 200_000;

/// A parsed RFC 6570 URI template that can be matched against URIs and
/// expanded.
///
/// RFC 6570 URI Template *matching* for MCP resource templates.
///
/// A server advertises resource templates such as `file:///{+path}` or
/// `users/{id}{?fields,sort}`. When a client sends `resources/read` with a
/// concrete URI, the server has to find out which template the URI is an
/// expansion of and recover the values of the template's variables. That is
/// the reverse of RFC 6570 expansion, and this module implements it.
///
/// Validation and expansion are delegated to the `iri-string` crate; the
/// split of a template into literal and expression parts and the matching
/// itself are done here, because `iri-string` does not expose its syntax tree.
///
/// # Matching rules
///
/// * Literal text must appear in the URI exactly as written in the template;
///   the hex digits of a percent-encoded triplet in a literal are compared
///   case-insensitively. A template without expressions therefore matches only
///   the identical URI.
/// * Values are percent-decoded (a `+` stays a `+`; it is not a space). A
///   value whose decoded bytes are not valid UTF-8 does not match. Raw
///   non-ASCII characters (as found in IRIs) are accepted inside values as
///   they are.
/// * The whole URI must match; matching is case-sensitive.
/// * `{var}` (simple): a non-empty value made of unreserved characters and
///   percent-encoded triplets. Reserved characters such as `/ ? # , &` must be
///   percent-encoded to be part of the value. Several variables, as in
///   `{x,y}`, are all required and separated by `,`.
/// * `{+var}` (reserved) and `{#var}` (fragment): the value may also contain
///   reserved characters, so `file:///{+path}` matches nested paths. A
///   reserved value must be non-empty; a fragment value may be empty (the
///   `#` marks its presence).
/// * `{.var}` (label) and `{/var}` (path segment): every variable is
///   required and introduced by its `.` or `/`; the value may be empty.
///   `{/var*}` (explode) matches one or more segments and yields them joined
///   with `/`, for example `/a/b/c` gives `a/b/c`.
/// * `{;x,y}` (path-style parameters), `{?x,y}` (form-style query) and `{&x}`
///   (query continuation): parameters are optional and may come in any order;
///   absent ones are missing from the result, a parameter name that is not in
///   the expression (or a repeated non-exploded one) makes the URI not match.
///   `name` without `=` gives an empty value. An exploded parameter (`{?x*}`)
///   may repeat and its values are joined with `,`. A `{?..}` expression
///   directly followed by `{&..}` expressions forms one query (so
///   `{?q}{&page}` accepts `?page=2&q=x`), and adjacent `{;..}` expressions
///   are merged the same way.
/// * Other exploded variables accept the separator of their list form inside
///   the value: `,` for `{var*}`, `.` for `{.var*}`.
/// * A prefix modifier `{var:N}` limits the decoded value to at most `N`
///   characters.
/// * A variable that occurs more than once must have the same value at every
///   occurrence.
///
/// ## Ambiguity: leftmost-shortest
///
/// When a URI can be split between variables in more than one way, variables
/// are assigned from left to right and each one takes the **shortest** value
/// that still lets the rest of the template match. So `x://{a}-{b}` against
/// `x://1-2-3` gives `a = 1`, `b = 2-3`, and `{+path}{?q}` against `a/b?q=1`
/// gives `path = a/b`, `q = 1` (rather than swallowing the query into `path`).
///
/// ## Bounded work
///
/// The URI comes from the network, so matching is protected against
/// pathological backtracking: URIs longer than `MAX_URI_LEN` (8 KiB) are rejected
/// immediately, literals are checked for presence in order before any
/// backtracking starts, failed (part, position) states are memoized, and a
/// hard work budget turns an excessively ambiguous match into "no match".
#[derive(Clone)]
pub struct UriTemplate {
    /// The validated template text.
    template: UriTemplateString,
    /// Variable names, unique, in order of first appearance.
    vars: Vec<String>,
    /// The template compiled into a sequence of tokens to match in order.
    tokens: Vec<Token>,
    /// For each token, what the URI must look like where the token starts.
    starts: Vec<Start>,
    /// Whether failed states may be memoized; false when a variable occurs
    /// more than once, because then the outcome depends on earlier bindings.
    memoizable: bool,
    /// Expansion plan for templates with reserved expressions (see
    /// [`Rewrite`]); `None` when the template has none.
    rewrite: Option<Rewrite>,
}

/// How templates with reserved expressions (`{+var}`, `{#var}`) are
/// expanded.
///
/// `iri-string` 0.7 (checked with 0.7.14) has two bugs in reserved expansion:
/// it slices inside a multi-byte character (a panic) when such a character
/// starts the value or follows a percent-encoded triplet, and it miscounts
/// characters for a prefix modifier. So the template is expanded in a
/// rewritten form where each variable occurrence in a reserved expression is
/// replaced by a synthetic variable without prefix modifier, whose value is
/// prepared here: truncated to the prefix length, with non-ASCII characters
/// percent-encoded (which is what reserved expansion does to them anyway).
///
/// Its third bug, miscounting multi-byte characters when truncating a value
/// for a prefix modifier in other expressions (an arithmetic overflow that
/// panics in debug builds), is avoided by [`ExpandContext`], which hands
/// values over one character at a time.
#[derive(Debug, Clone)]
struct Rewrite {
    /// The rewritten template.
    template: UriTemplateString,
    /// The synthetic variables.
    synthetic: Vec<Synthetic>,
}

/// A synthetic variable of a [`Rewrite`].
#[derive(Debug, Clone)]
struct Synthetic {
    /// Name of the synthetic variable in the rewritten template.
    name: String,
    /// Index of the original variable.
    var: usize,
    /// The prefix length, if any.
    prefix: Option<usize>,
}

impl Synthetic {
    /// The value of the synthetic variable given the original one.
    fn value(&self, value: &str) -> String {
        let value = match self.prefix {
            Some(max) => truncate(value, max),
            None => value,
        };
        let mut encoded = String::with_capacity(value.len());
        for c in value.chars() {
            if c.is_ascii() {
                encoded.push(c);
            } else {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                for b in c.encode_utf8(&mut [0; 4]).bytes() {
                    encoded.push('%');
                    encoded.push(char::from(HEX[usize::from(b >> 4)]));
                    encoded.push(char::from(HEX[usize::from(b & 0xf)]));
                }
            }
        }
        encoded
    }
}

/// Error returned by [`UriTemplate::parse`] for a string that is not a valid
/// RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplateError(String);

impl fmt::Display for UriTemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UriTemplateError {}

impl UriTemplateError {
    /// Builds the error for `template` with a description of the problem.
    fn new(template: &str, detail: impl fmt::Display) -> Self {
        Self(format!("invalid URI template `{template}`: {detail}"))
    }
}

impl fmt::Debug for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UriTemplate").field(&self.as_str()).finish()
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl UriTemplate {
    /// Parses and validates an RFC 6570 (level 4) URI template.
    ///
    /// Fails on syntax errors such as an unclosed `{`, an invalid variable
    /// name, an operator reserved for future use (`=`, `,`, `!`, `@`, `|`),
    /// a prefix length outside `1..=9999` or a character that is not allowed
    /// in a template literal.
    ///
    /// # Errors
    ///
    /// A [`UriTemplateError`] describing the first problem found.
    pub fn parse(template: &str) -> Result<UriTemplate, UriTemplateError> {
        let validated = UriTemplateStr::new(template);
        let parts = parse_parts(template).map_err(|e| UriTemplateError::new(template, e))?;
        let validated = validated.map_err(|e| UriTemplateError::new(template, e))?;
        Ok(compile(validated.into(), &parts))
    }

    /// The template text, as given to [`parse`](Self::parse).
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.template.as_str()
    }

    /// Names of the template's variables, in order of first appearance, each
    /// once.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.vars.iter().map(String::as_str)
    }

    /// Matches `uri` against the template.
    ///
    /// Returns `None` when the URI is not an expansion of the template (see
    /// [`UriTemplate`] for the exact rules), and otherwise
    /// the percent-decoded value of every variable that is present in the URI,
    /// in the order of [`variables`](Self::variables). Optional (query and
    /// path-parameter) variables that are absent are left out.
    #[must_use]
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        if uri.len() > MAX_URI_LEN || !self.literals_in_order(uri.as_bytes()) {
            return None;
        }
        let mut matcher = Matcher {
            tpl: self,
            uri,
            work: 0,
            failed: Vec::new(),
            bindings: Vec::new(),
            result: None,
        };
        match matcher.run(0, 0) {
            Ok(true) => matcher.result,
            Ok(false) | Err(Exhausted) => None,
        }
    }

    /// Expands the template (RFC 6570) with the given variable values.
    ///
    /// Values are percent-encoded as the operators require. Variables missing
    /// from `vars` are undefined and dropped from the output as RFC 6570
    /// specifies; names that are not in the template are ignored, and when a
    /// name is given twice the later value wins.
    #[must_use]
    pub fn expand(&self, vars: &[(&str, &str)]) -> String {
        let mut context = ExpandContext {
            vars,
            synthetic: Vec::new(),
        };
        let template = match &self.rewrite {
            None => &self.template,
            Some(rewrite) => {
                for synthetic in &rewrite.synthetic {
                    let name = self.vars[synthetic.var].as_str();
                    if let Some(&(_, value)) = vars.iter().rev().find(|(n, _)| *n == name) {
                        context
                            .synthetic
                            .push((synthetic.name.as_str(), synthetic.value(value)));
                    }
                }
                &rewrite.template
            }
        };
        // Expansion only fails for list or associative values used with a
        // prefix modifier, or when the writer fails; neither can happen with
        // string values written into a `String`.
        template
            .expand_dynamic_to_string::<UriSpec, _>(&mut context)
            .expect("expanding a validated template with string values cannot fail")
    }

    /// Cheap necessary condition checked before backtracking: all fixed text
    /// (literals and operator characters) occurs in the URI in template order,
    /// anchored at the start and end when the template starts or ends with it.
    fn literals_in_order(&self, uri: &[u8]) -> bool {
        let mut cursor = 0;
        let last = self.tokens.len().wrapping_sub(1);
        for (index, token) in self.tokens.iter().enumerate() {
            let text = match token {
                Token::Literal(range) => &self.template.as_str().as_bytes()[range.clone()],
                Token::Char(c) => std::slice::from_ref(c),
                Token::Value(_) | Token::Params(_) => continue,
            };
            if index == last {
                let Some(start) = uri.len().checked_sub(text.len()) else {
                    return false;
                };
                return start >= cursor && match_literal(text, uri, start).is_some();
            }
            let found = if index == 0 {
                match_literal(text, uri, 0)
            } else {
                (cursor..uri.len()).find_map(|pos| match_literal(text, uri, pos))
            };
            match found {
                Some(end) => cursor = end,
                None => return false,
            }
        }
        true
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/// An RFC 6570 expression operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    /// `{var}`
    Simple,
    /// `{+var}`
    Reserved,
    /// `{#var}`
    Fragment,
    /// `{.var}`
    Label,
    /// `{/var}`
    Path,
    /// `{;var}`
    PathParam,
    /// `{?var}`
    Query,
    /// `{&var}`
    QueryContinuation,
}

/// A variable reference inside an expression.
#[derive(Debug, Clone)]
struct VarSpec {
    /// The variable name.
    name: String,
    /// Maximum length from a `:N` prefix modifier.
    prefix: Option<usize>,
    /// Whether the `*` explode modifier is present.
    explode: bool,
}

/// A syntactic part of a template.
#[derive(Debug, Clone)]
enum Part {
    /// Literal text: a byte range of the template.
    Literal(Range<usize>),
    /// An expression `{...}`.
    Expression(Operator, Vec<VarSpec>),
}

/// Splits a template into literal and expression parts, with RFC 6570 syntax
/// checks and readable error messages.
fn parse_parts(template: &str) -> Result<Vec<Part>, String> {
    let bytes = template.as_bytes();
    let mut parts = Vec::new();
    let mut literal_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                if literal_start < i {
                    parts.push(Part::Literal(literal_start..i));
                }
                let Some(len) = bytes[i + 1..].iter().position(|&b| b == b'}') else {
                    return Err(format!(
                        "the expression starting at byte {i} is not closed with `}}`"
                    ));
                };
                let body = &template[i + 1..i + 1 + len];
                parts.push(parse_expression(body, i)?);
                i += len + 2;
                literal_start = i;
            }
            b'}' => return Err(format!("unexpected `}}` at byte {i} outside an expression")),
            b'%' => {
                if !is_hex_pair(bytes, i + 1) {
                    return Err(format!("invalid percent-encoding at byte {i}"));
                }
                i += 3;
            }
            b if is_literal_byte(b) => i += 1,
            _ => {
                let c = template[i..].chars().next().unwrap_or_default();
                return Err(format!(
                    "character {c:?} at byte {i} is not allowed in a template literal \
                     (percent-encode it)"
                ));
            }
        }
    }
    if literal_start < bytes.len() {
        parts.push(Part::Literal(literal_start..bytes.len()));
    }
    Ok(parts)
}

/// Parses the body of an expression (between the braces); `offset` is the
/// byte position of the `{`, for error messages.
fn parse_expression(body: &str, offset: usize) -> Result<Part, String> {
    let Some(&first) = body.as_bytes().first() else {
        return Err(format!("empty expression `{{}}` at byte {offset}"));
    };
    let (operator, list) = match first {
        b'+' => (Operator::Reserved, &body[1..]),
        b'#' => (Operator::Fragment, &body[1..]),
        b'.' => (Operator::Label, &body[1..]),
        b'/' => (Operator::Path, &body[1..]),
        b';' => (Operator::PathParam, &body[1..]),
        b'?' => (Operator::Query, &body[1..]),
        b'&' => (Operator::QueryContinuation, &body[1..]),
        b'=' | b',' | b'!' | b'@' | b'|' => {
            return Err(format!(
                "operator `{}` in the expression at byte {offset} is reserved for future \
                 extensions and not supported",
                first as char
            ));
        }
        _ => (Operator::Simple, body),
    };
    let mut specs = Vec::new();
    for spec in list.split(',') {
        let (name, prefix, explode) = if let Some(name) = spec.strip_suffix('*') {
            (name, None, true)
        } else if let Some((name, len)) = spec.split_once(':') {
            let valid = (1..=4).contains(&len.len())
                && len.bytes().all(|b| b.is_ascii_digit())
                && !len.starts_with('0');
            if !valid {
                return Err(format!(
                    "invalid prefix length `{len}` for variable `{name}` in the expression at \
                     byte {offset} (expected 1 to 9999)"
                ));
            }
            (name, len.parse::<usize>().ok(), false)
        } else {
            (spec, None, false)
        };
        if !is_valid_varname(name) {
            return Err(format!(
                "invalid variable name `{name}` in the expression at byte {offset}"
            ));
        }
        specs.push(VarSpec {
            name: name.to_owned(),
            prefix,
            explode,
        });
    }
    Ok(Part::Expression(operator, specs))
}

/// RFC 6570 `varname`: `varchar *( ["."] varchar )` where `varchar` is
/// `ALPHA / DIGIT / "_" / pct-encoded`.
fn is_valid_varname(name: &str) -> bool {
    let bytes = name.as_bytes();
    let mut after_dot = true; // a name may neither start nor end with `.`
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if is_hex_pair(bytes, i + 1) => i += 3,
            b if b.is_ascii_alphanumeric() || b == b'_' => i += 1,
            b'.' if !after_dot => {
                i += 1;
                after_dot = true;
                continue;
            }
            _ => return false,
        }
        after_dot = false;
    }
    !bytes.is_empty() && !after_dot
}

/// Whether `b` may appear as itself in a template literal (RFC 6570 section
/// 2.1, with `'` allowed as per erratum 6937, like `iri-string` does).
fn is_literal_byte(b: u8) -> bool {
    matches!(b, 0x21..=0x7e) && !matches!(b, b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'|')
}

/// Whether `bytes[at..at + 2]` are two hex digits.
fn is_hex_pair(bytes: &[u8], at: usize) -> bool {
    bytes
        .get(at..at + 2)
        .is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit))
}

// ---------------------------------------------------------------------------
// Compilation into tokens
// ---------------------------------------------------------------------------

/// A set of ASCII bytes that may appear unencoded in a value.
#[derive(Debug, Clone, Copy)]
struct Class(u128);

impl Class {
    /// The class made of the given bytes.
    const fn of(chars: &[u8]) -> Class {
        let mut bits = 0u128;
        let mut i = 0;
        while i < chars.len() {
            bits |= 1 << chars[i];
            i += 1;
        }
        Class(bits)
    }

    /// The union of two classes.
    const fn or(self, other: Class) -> Class {
        Class(self.0 | other.0)
    }

    /// Whether the ASCII byte `b` is in the class.
    fn allows(self, b: u8) -> bool {
        b < 128 && self.0 & (1 << b) != 0
    }
}

/// RFC 3986 `unreserved`.
const UNRESERVED: Class =
    Class::of(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~");
/// RFC 3986 `unreserved / reserved`.
const UNRESERVED_RESERVED: Class = UNRESERVED.or(Class::of(b":/?#[]@!$&'()*+,;="));
/// Values of path-style parameters (`{;x}`): unreserved, plus `,` of lists.
const PATH_PARAM_VALUE: Class = UNRESERVED.or(Class::of(b","));
/// Values of query parameters: everything a query may hold except the
/// delimiters `&`, `=` and `#`.
const QUERY_VALUE: Class = UNRESERVED.or(Class::of(b",/?:@!$'()*+;"));

/// One element of a compiled template.
#[derive(Debug, Clone)]
enum Token {
    /// Literal text of the template (a byte range of it).
    Literal(Range<usize>),
    /// An operator's prefix or separator character, which must appear as is.
    Char(u8),
    /// The value of one variable.
    Value(ValueToken),
    /// A group of optional named parameters (`{;..}`, `{?..}`, `{&..}`).
    Params(ParamGroup),
}

/// A variable value to be matched.
#[derive(Debug, Clone)]
struct ValueToken {
    /// Index of the variable in `UriTemplate::vars`.
    var: usize,
    /// Bytes allowed unencoded.
    class: Class,
    /// Maximum number of characters.
    prefix: Option<usize>,
    /// Whether the value may be empty.
    allow_empty: bool,
}

/// Optional `name=value` parameters in any order.
#[derive(Debug, Clone)]
struct ParamGroup {
    /// Character before the first parameter (`?`, `&` or `;`).
    lead: u8,
    /// Character between parameters (`&` or `;`).
    sep: u8,
    /// Bytes allowed unencoded in values.
    class: Class,
    /// The parameters.
    params: Vec<Param>,
}

/// A parameter of a [`ParamGroup`].
#[derive(Debug, Clone)]
struct Param {
    /// Index of the variable in `UriTemplate::vars`.
    var: usize,
    /// Maximum number of characters.
    prefix: Option<usize>,
    /// Whether the parameter may repeat.
    explode: bool,
}

/// What the URI must hold where a token starts, used to skip hopeless
/// candidate ends of the preceding value without recursing.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// The end of the URI.
    End,
    /// This byte.
    Byte(u8),
    /// Anything.
    Any,
}

/// The operator as written in a template.
fn operator_str(operator: Operator) -> &'static str {
    match operator {
        Operator::Simple => "",
        Operator::Reserved => "+",
        Operator::Fragment => "#",
        Operator::Label => ".",
        Operator::Path => "/",
        Operator::PathParam => ";",
        Operator::Query => "?",
        Operator::QueryContinuation => "&",
    }
}

/// Builds the [`Rewrite`] of a template, if it has reserved expressions.
fn rewrite(template: &str, parts: &[Part], vars: &[String]) -> Option<Rewrite> {
    let is_reserved =
        |operator: Operator| matches!(operator, Operator::Reserved | Operator::Fragment);
    let needed = parts.iter().any(|part| match part {
        Part::Literal(_) => false,
        Part::Expression(operator, _) => is_reserved(*operator),
    });
    if !needed {
        return None;
    }
    let mut rewritten = String::with_capacity(template.len() + 16);
    let mut synthetic: Vec<Synthetic> = Vec::new();
    for part in parts {
        match part {
            Part::Literal(range) => rewritten.push_str(&template[range.clone()]),
            Part::Expression(operator, specs) => {
                rewritten.push('{');
                rewritten.push_str(operator_str(*operator));
                for (k, spec) in specs.iter().enumerate() {
                    if k > 0 {
                        rewritten.push(',');
                    }
                    if is_reserved(*operator) {
                        let mut name = format!("_s{}", synthetic.len());
                        while vars.contains(&name) {
                            name.insert(0, '_');
                        }
                        rewritten.push_str(&name);
                        synthetic.push(Synthetic {
                            name,
                            var: vars.iter().position(|v| *v == spec.name)?,
                            prefix: spec.prefix,
                        });
                    } else {
                        rewritten.push_str(&spec.name);
                        if let Some(max) = spec.prefix {
                            rewritten.push(':');
                            rewritten.push_str(&max.to_string());
                        }
                    }
                    if spec.explode {
                        rewritten.push('*');
                    }
                }
                rewritten.push('}');
            }
        }
    }
    let template = UriTemplateString::try_from(rewritten).ok()?;
    Some(Rewrite {
        template,
        synthetic,
    })
}

/// The longest prefix of `value` with at most `max` characters, for reserved
/// expansion: a percent-encoded character (one or more triplets forming one
/// UTF-8 character, or a lone triplet) counts as one character, as reserved
/// expansion keeps it as it is.
fn truncate(value: &str, max: usize) -> &str {
    let bytes = value.as_bytes();
    let mut end = 0;
    for _ in 0..max {
        if end >= bytes.len() {
            break;
        }
        end += if decode_triplet(bytes, end).is_some() {
            encoded_char_len(bytes, end)
        } else {
            value[end..].chars().next().map_or(1, char::len_utf8)
        };
    }
    &value[..end]
}

/// Length in bytes of the percent-encoded UTF-8 character starting with the
/// triplet at `at`; 3 (a single triplet) if the triplets there do not form
/// one.
fn encoded_char_len(bytes: &[u8], at: usize) -> usize {
    let Some(lead) = decode_triplet(bytes, at) else {
        return 3;
    };
    let len = match lead {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return 3,
    };
    let mut buf = [lead, 0, 0, 0];
    for (k, slot) in buf.iter_mut().enumerate().take(len).skip(1) {
        match decode_triplet(bytes, at + 3 * k) {
            Some(b) => *slot = b,
            None => return 3,
        }
    }
    if std::str::from_utf8(&buf[..len]).is_ok() {
        3 * len
    } else {
        3
    }
}

/// The variable values of one [`UriTemplate::expand`] call, for
/// `iri-string`'s expander.
struct ExpandContext<'a> {
    /// Values given by the caller; the last one of a name wins.
    vars: &'a [(&'a str, &'a str)],
    /// Values of the synthetic variables of a [`Rewrite`].
    synthetic: Vec<(&'a str, String)>,
}

impl Context for ExpandContext<'_> {
    fn visit<V: Visitor>(&self, visitor: V) -> V::Result {
        let name = visitor.var_name().as_str();
        if let Some((_, value)) = self.synthetic.iter().find(|(n, _)| *n == name) {
            // Pure ASCII: no character can be split.
            return visitor.visit_string(value);
        }
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some(&(_, value)) => visitor.visit_string(OneCharAtATime(value)),
            None => visitor.visit_undefined(),
        }
    }
}

/// Displays a string with one `write_str` call per character, so that
/// `iri-string`'s prefix truncation, which counts the characters of each
/// written chunk wrongly when it has multi-byte characters, sees only
/// single-character chunks (which it counts right). An empty string writes
/// nothing, which expansion treats as an empty value.
struct OneCharAtATime<'a>(&'a str);

impl fmt::Display for OneCharAtATime<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        self.0.chars().try_for_each(|c| f.write_char(c))
    }
}

/// Turns parsed parts into tokens.
fn compile(template: UriTemplateString, parts: &[Part]) -> UriTemplate {
    let mut vars: Vec<String> = Vec::new();
    let mut memoizable = true;
    let mut var_index = |name: String| match vars.iter().position(|v| *v == name) {
        Some(index) => {
            memoizable = false;
            index
        }
        None => {
            vars.push(name);
            vars.len() - 1
        }
    };
    let mut tokens = Vec::new();
    for part in parts.iter().cloned() {
        let (operator, specs) = match part {
            Part::Literal(range) => {
                tokens.push(Token::Literal(range));
                continue;
            }
            Part::Expression(operator, specs) => (operator, specs),
        };
        let (lead, sep, class) = match operator {
            Operator::PathParam => (b';', b';', PATH_PARAM_VALUE),
            Operator::Query => (b'?', b'&', QUERY_VALUE),
            Operator::QueryContinuation => (b'&', b'&', QUERY_VALUE),
            _ => {
                if operator == Operator::Fragment {
                    tokens.push(Token::Char(b'#'));
                }
                for (k, spec) in specs.into_iter().enumerate() {
                    match operator {
                        Operator::Label => tokens.push(Token::Char(b'.')),
                        Operator::Path => tokens.push(Token::Char(b'/')),
                        _ if k > 0 => tokens.push(Token::Char(b',')),
                        _ => {}
                    }
                    let class = match operator {
                        Operator::Simple if spec.explode => UNRESERVED.or(Class::of(b",")),
                        Operator::Path if spec.explode => UNRESERVED.or(Class::of(b"/")),
                        Operator::Simple | Operator::Label | Operator::Path => UNRESERVED,
                        _ => UNRESERVED_RESERVED,
                    };
                    tokens.push(Token::Value(ValueToken {
                        var: var_index(spec.name),
                        class,
                        prefix: spec.prefix,
                        allow_empty: !matches!(operator, Operator::Simple | Operator::Reserved),
                    }));
                }
                continue;
            }
        };
        let params: Vec<Param> = specs
            .into_iter()
            .map(|spec| Param {
                var: var_index(spec.name),
                prefix: spec.prefix,
                explode: spec.explode,
            })
            .collect();
        // `{?a}{&b}` is one query and `{;a}{;b}` one parameter list.
        if let Some(Token::Params(group)) = tokens.last_mut() {
            let continues = match operator {
                Operator::QueryContinuation => group.sep == b'&',
                _ => group.lead == b';' && lead == b';',
            };
            if continues {
                group.params.extend(params);
                continue;
            }
        }
        tokens.push(Token::Params(ParamGroup {
            lead,
            sep,
            class,
            params,
        }));
    }
    let bytes = template.as_str().as_bytes();
    let mut starts: Vec<Start> = tokens
        .iter()
        .map(|token| match token {
            Token::Literal(range) => Start::Byte(bytes[range.start]),
            Token::Char(c) => Start::Byte(*c),
            Token::Value(_) | Token::Params(_) => Start::Any,
        })
        .collect();
    starts.push(Start::End);
    let rewrite = rewrite(template.as_str(), parts, &vars);
    UriTemplate {
        template,
        vars,
        tokens,
        starts,
        memoizable,
        rewrite,
    }
}

// ---------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------

/// Matches `literal` (template text, ASCII, possibly with percent-encoded
/// triplets) at `uri[pos..]`; returns the end position.
fn match_literal(literal: &[u8], uri: &[u8], pos: usize) -> Option<usize> {
    let end = pos.checked_add(literal.len())?;
    let got = uri.get(pos..end)?;
    let mut i = 0;
    while i < literal.len() {
        if literal[i] == b'%' {
            // The template was validated, so two hex digits follow.
            let same = got[i] == b'%'
                && got[i + 1].eq_ignore_ascii_case(&literal[i + 1])
                && got[i + 2].eq_ignore_ascii_case(&literal[i + 2]);
            if !same {
                return None;
            }
            i += 3;
        } else {
            if got[i] != literal[i] {
                return None;
            }
            i += 1;
        }
    }
    Some(end)
}

/// Value of a hex digit.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes the percent-encoded triplet at `bytes[at..at + 3]`.
fn decode_triplet(bytes: &[u8], at: usize) -> Option<u8> {
    match bytes.get(at..at + 3)? {
        [b'%', hi, lo] => Some(hex_value(*hi)? << 4 | hex_value(*lo)?),
        _ => None,
    }
}

/// Percent-decodes `raw`; `None` if the result is not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(b) = decode_triplet(bytes, i) {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Walks a value from its start and reports the positions where it could end:
/// after each complete character that keeps the percent-decoded value valid
/// UTF-8 and within the prefix limit.
struct Scanner<'a> {
    /// The URI.
    uri: &'a str,
    /// Current position.
    pos: usize,
    /// Bytes allowed unencoded.
    class: Class,
    /// Maximum number of characters.
    prefix: Option<usize>,
    /// Characters decoded so far.
    chars: usize,
    /// Continuation bytes still expected by the UTF-8 decoder.
    pending: u8,
    /// Smallest acceptable next continuation byte.
    low: u8,
    /// Largest acceptable next continuation byte.
    high: u8,
}

impl<'a> Scanner<'a> {
    /// A scanner for a value starting at `pos`.
    fn new(uri: &'a str, pos: usize, class: Class, prefix: Option<usize>) -> Self {
        Scanner {
            uri,
            pos,
            class,
            prefix,
            chars: 0,
            pending: 0,
            low: 0x80,
            high: 0xbf,
        }
    }

    /// The next position where the value may end, or `None` when the value
    /// cannot extend further.
    fn next_end(&mut self) -> Option<usize> {
        let bytes = self.uri.as_bytes();
        loop {
            let b = *bytes.get(self.pos)?;
            if b == b'%' {
                let decoded = decode_triplet(bytes, self.pos)?;
                if !self.feed(decoded) {
                    return None;
                }
                self.pos += 3;
            } else if self.pending != 0 {
                return None;
            } else if b >= 0x80 {
                // Only whole characters are ever stepped over, so `pos` is on
                // a character boundary.
                self.pos += self.uri[self.pos..].chars().next()?.len_utf8();
                self.chars += 1;
            } else if self.class.allows(b) {
                self.pos += 1;
                self.chars += 1;
            } else {
                return None;
            }
            if self.pending == 0 {
                if self.prefix.is_some_and(|max| self.chars > max) {
                    return None;
                }
                return Some(self.pos);
            }
        }
    }

    /// Feeds one percent-decoded byte to the UTF-8 validator.
    fn feed(&mut self, b: u8) -> bool {
        if self.pending == 0 {
            let (pending, low, high) = match b {
                0x00..=0x7f => {
                    self.chars += 1;
                    return true;
                }
                0xc2..=0xdf => (1, 0x80, 0xbf),
                0xe0 => (2, 0xa0, 0xbf),
                0xe1..=0xec | 0xee..=0xef => (2, 0x80, 0xbf),
                0xed => (2, 0x80, 0x9f),
                0xf0 => (3, 0x90, 0xbf),
                0xf1..=0xf3 => (3, 0x80, 0xbf),
                0xf4 => (3, 0x80, 0x8f),
                _ => return false,
            };
            self.pending = pending;
            self.low = low;
            self.high = high;
        } else {
            if !(self.low..=self.high).contains(&b) {
                return false;
            }
            self.pending -= 1;
            self.low = 0x80;
            self.high = 0xbf;
            if self.pending == 0 {
                self.chars += 1;
            }
        }
        true
    }
}

/// The work budget ran out.
struct Exhausted;

/// A variable value found in the URI: raw (still encoded) text.
#[derive(Debug, Clone, Copy)]
struct Binding {
    /// Index of the variable.
    var: usize,
    /// Index of the token that bound it.
    token: usize,
    /// Start of the raw value in the URI.
    start: usize,
    /// End of the raw value in the URI.
    end: usize,
    /// Prefix modifier of this occurrence of the variable.
    prefix: Option<usize>,
}

/// State of one [`UriTemplate::matches`] call: a depth-first search over
/// (token, position) with the leftmost-shortest preference.
struct Matcher<'a> {
    /// The template.
    tpl: &'a UriTemplate,
    /// The URI.
    uri: &'a str,
    /// Work done so far.
    work: usize,
    /// Bit set of (token, position) states known not to match; allocated on
    /// first use.
    failed: Vec<u64>,
    /// Values bound on the current search path.
    bindings: Vec<Binding>,
    /// Decoded values once the whole URI matched.
    result: Option<Vec<(String, String)>>,
}

impl Matcher<'_> {
    /// Charges `amount` units of work.
    fn charge(&mut self, amount: usize) -> Result<(), Exhausted> {
        self.work += amount;
        if self.work > MAX_WORK {
            Err(Exhausted)
        } else {
            Ok(())
        }
    }

    /// Index of a state in the `failed` bit set, if the state is memoized.
    fn memo_index(&self, token: usize, pos: usize) -> Option<usize> {
        (self.tpl.memoizable && token < self.tpl.tokens.len())
            .then(|| token * (self.uri.len() + 1) + pos)
    }

    /// Whether the rest of the template, from `token` on, matches the rest of
    /// the URI, from `pos` on.
    fn run(&mut self, token: usize, pos: usize) -> Result<bool, Exhausted> {
        self.charge(1)?;
        let memo = self.memo_index(token, pos);
        if let Some(index) = memo
            && self
                .failed
                .get(index / 64)
                .is_some_and(|word| word & (1 << (index % 64)) != 0)
        {
            return Ok(false);
        }
        let matched = self.try_token(token, pos)?;
        if let (false, Some(index)) = (matched, memo) {
            if self.failed.is_empty() {
                let states = self.tpl.tokens.len() * (self.uri.len() + 1);
                self.failed = vec![0; states.div_ceil(64)];
            }
            self.failed[index / 64] |= 1 << (index % 64);
        }
        Ok(matched)
    }

    /// [`run`](Self::run) without the memoization.
    fn try_token(&mut self, index: usize, pos: usize) -> Result<bool, Exhausted> {
        let tpl = self.tpl;
        let bytes = self.uri.as_bytes();
        match tpl.tokens.get(index) {
            None => Ok(pos == bytes.len() && self.finish()),
            Some(Token::Literal(range)) => {
                let literal = &tpl.template.as_str().as_bytes()[range.clone()];
                match match_literal(literal, bytes, pos) {
                    Some(end) => self.run(index + 1, end),
                    None => Ok(false),
                }
            }
            Some(Token::Char(c)) => {
                if bytes.get(pos) == Some(c) {
                    self.run(index + 1, pos + 1)
                } else {
                    Ok(false)
                }
            }
            Some(Token::Value(value)) => self.match_value(index, value, pos),
            Some(Token::Params(group)) => self.match_params(index, group, pos),
        }
    }

    /// Matches a single variable value starting at `pos`, shortest first.
    fn match_value(
        &mut self,
        index: usize,
        value: &ValueToken,
        pos: usize,
    ) -> Result<bool, Exhausted> {
        let bytes = self.uri.as_bytes();
        let next = self.tpl.starts[index + 1];
        let mut scanner = Scanner::new(self.uri, pos, value.class, value.prefix);
        let mut end = if value.allow_empty {
            Some(pos)
        } else {
            scanner.next_end()
        };
        let mut scanned = pos;
        while let Some(candidate) = end {
            self.charge(candidate - scanned)?;
            scanned = candidate;
            let viable = match next {
                Start::End => candidate == bytes.len(),
                Start::Byte(b) => bytes.get(candidate) == Some(&b),
                Start::Any => true,
            };
            if viable {
                self.bindings.push(Binding {
                    var: value.var,
                    token: index,
                    start: pos,
                    end: candidate,
                    prefix: value.prefix,
                });
                if self.run(index + 1, candidate)? {
                    return Ok(true);
                }
                self.bindings.pop();
            }
            end = scanner.next_end();
        }
        Ok(false)
    }

    /// Matches a group of optional parameters starting at `start`: zero
    /// parameters first, then one more at a time.
    fn match_params(
        &mut self,
        index: usize,
        group: &ParamGroup,
        start: usize,
    ) -> Result<bool, Exhausted> {
        let bytes = self.uri.as_bytes();
        let mark = self.bindings.len();
        let mut pos = start;
        'params: loop {
            // The group may end here.
            if self.run(index + 1, pos)? {
                return Ok(true);
            }
            // Otherwise another parameter must follow.
            let lead = if pos == start { group.lead } else { group.sep };
            if bytes.get(pos) != Some(&lead) {
                break;
            }
            let name_start = pos + 1;
            let name_end = varname_end(bytes, name_start);
            self.charge(name_end - pos)?;
            let name = &self.uri[name_start..name_end];
            let Some(param) = group
                .params
                .iter()
                .find(|param| self.tpl.vars[param.var] == name)
            else {
                break;
            };
            let repeated = self.bindings[mark..].iter().any(|b| b.var == param.var);
            if repeated && !param.explode {
                break;
            }
            if bytes.get(name_end) != Some(&b'=') {
                // `name` alone: an empty value.
                self.bindings.push(Binding {
                    var: param.var,
                    token: index,
                    start: name_end,
                    end: name_end,
                    prefix: param.prefix,
                });
                pos = name_end;
                continue;
            }
            let value_start = name_end + 1;
            let mut scanner = Scanner::new(self.uri, value_start, group.class, param.prefix);
            let mut end = Some(value_start);
            let mut scanned = value_start;
            while let Some(candidate) = end {
                self.charge(candidate - scanned)?;
                scanned = candidate;
                self.bindings.push(Binding {
                    var: param.var,
                    token: index,
                    start: value_start,
                    end: candidate,
                    prefix: param.prefix,
                });
                if bytes.get(candidate) == Some(&group.sep) {
                    // The separator cannot be part of a value, so this is the
                    // longest candidate: go on with the following parameter
                    // (after trying to end the group here).
                    pos = candidate;
                    continue 'params;
                }
                if self.run(index + 1, candidate)? {
                    return Ok(true);
                }
                self.bindings.pop();
                end = scanner.next_end();
            }
            break;
        }
        self.bindings.truncate(mark);
        Ok(false)
    }

    /// Decodes the bound values into `result`; false if they are
    /// inconsistent (a repeated variable with different values) or not UTF-8.
    fn finish(&mut self) -> bool {
        // One entry per (variable, token): values bound by one token are
        // joined with `,` (repeated exploded parameters).
        let mut per_token: Vec<(&Binding, String)> = Vec::new();
        for binding in &self.bindings {
            let Some(value) = percent_decode(&self.uri[binding.start..binding.end]) else {
                return false;
            };
            match per_token
                .iter_mut()
                .find(|(b, _)| b.var == binding.var && b.token == binding.token)
            {
                Some((_, joined)) => {
                    joined.push(',');
                    joined.push_str(&value);
                }
                None => per_token.push((binding, value)),
            }
        }
        let mut values: Vec<Option<String>> = vec![None; self.tpl.vars.len()];
        if self.tpl.memoizable {
            // Every variable occurs once.
            for (binding, value) in per_token {
                values[binding.var] = Some(value);
            }
        } else {
            for (var, slot) in values.iter_mut().enumerate() {
                let occurrences = || per_token.iter().filter(|(b, _)| b.var == var);
                // The full value: from an occurrence without prefix modifier
                // if any, else the longest.
                let Some((_, full)) = occurrences()
                    .find(|(b, _)| b.prefix.is_none())
                    .or_else(|| occurrences().max_by_key(|(_, v)| v.chars().count()))
                else {
                    continue;
                };
                let consistent = occurrences().all(|(b, value)| match b.prefix {
                    None => value == full,
                    Some(max) => {
                        let end = full.char_indices().nth(max).map_or(full.len(), |(i, _)| i);
                        *value == full[..end]
                    }
                });
                if !consistent {
                    return false;
                }
                *slot = Some(full.clone());
            }
        }
        self.result = Some(
            self.tpl
                .vars
                .iter()
                .zip(values)
                .filter_map(|(name, value)| Some((name.clone(), value?)))
                .collect(),
        );
        true
    }
}

/// End of a parameter name starting at `pos`: the longest run of `varname`
/// characters (letters, digits, `_`, `.` and percent-encoded triplets).
fn varname_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&b) = bytes.get(pos) {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            pos += 1;
        } else if b == b'%' && is_hex_pair(bytes, pos + 1) {
            pos += 3;
        } else {
            break;
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tpl(s: &str) -> UriTemplate {
        UriTemplate::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Matches and returns owned pairs for easy comparison.
    fn m(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        tpl(template).matches(uri)
    }

    fn pairs(list: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn brief_examples() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/data"),
            pairs(&[("id", "123")])
        );
        assert_eq!(
            m("config://{env}", "config://prod"),
            pairs(&[("env", "prod")])
        );
        assert_eq!(
            m("file:///{+path}", "file:///a/b/c.txt"),
            pairs(&[("path", "a/b/c.txt")])
        );
        assert_eq!(
            m("users/{id}{?fields,sort}", "users/42?sort=asc"),
            pairs(&[("id", "42"), ("sort", "asc")])
        );
        // Leftmost-shortest.
        assert_eq!(
            m("x://{a}-{b}", "x://1-2-3"),
            pairs(&[("a", "1"), ("b", "2-3")])
        );
    }

    #[test]
    fn empty_simple_value_does_not_match() {
        assert_eq!(m("config://{env}", "config://"), None);
        assert_eq!(m("file:///{+path}", "file:///"), None);
        assert_eq!(m("a/{x}/b", "a//b"), None);
    }

    #[test]
    fn no_variables_matches_only_identical() {
        let t = tpl("mcp://static/readme.md");
        assert_eq!(t.matches("mcp://static/readme.md"), Some(vec![]));
        assert_eq!(t.matches("mcp://static/readme.mdx"), None);
        assert_eq!(t.matches("mcp://static/readme.m"), None);
        assert_eq!(t.matches("MCP://static/readme.md"), None);
        assert_eq!(t.matches(""), None);
        assert_eq!(tpl("").matches(""), Some(vec![]));
        assert_eq!(tpl("").matches("x"), None);
        // Percent-encoded literal: hex case does not matter, decoding does.
        let t = tpl("a%2Fb");
        assert_eq!(t.matches("a%2fb"), Some(vec![]));
        assert_eq!(t.matches("a/b"), None);
    }

    #[test]
    fn simple_operator() {
        assert_eq!(m("{x}", "hello"), pairs(&[("x", "hello")]));
        assert_eq!(m("{x}", "a-b.c_d~e"), pairs(&[("x", "a-b.c_d~e")]));
        // Reserved characters must be encoded.
        for uri in ["a/b", "a?b", "a#b", "a,b", "a&b", "a:b", "a=b", "a b"] {
            assert_eq!(m("{x}", uri), None, "{uri}");
        }
        assert_eq!(m("{x}", "a%2Fb%3F"), pairs(&[("x", "a/b?")]));
        assert_eq!(m("{x,y}", "1,2"), pairs(&[("x", "1"), ("y", "2")]));
        assert_eq!(m("{x,y}", "1"), None);
        assert_eq!(m("{x,y}", "1,"), None);
        assert_eq!(m("{x,y}", "a%2Cb,c"), pairs(&[("x", "a,b"), ("y", "c")]));
        // Exploded: the list stays joined with `,`.
        assert_eq!(m("{list*}", "a,b,c"), pairs(&[("list", "a,b,c")]));
        assert_eq!(m("{a}{b}", "xyz"), pairs(&[("a", "x"), ("b", "yz")]));
        assert_eq!(
            m("{name}.{ext}", "archive.tar.gz"),
            pairs(&[("name", "archive"), ("ext", "tar.gz")])
        );
    }

    #[test]
    fn reserved_operator() {
        assert_eq!(
            m("file:///{+path}", "file:///dir/sub%20dir/f.txt"),
            pairs(&[("path", "dir/sub dir/f.txt")])
        );
        assert_eq!(
            m("{+base}/index.html", "http://example.com/a/index.html"),
            pairs(&[("base", "http://example.com/a")])
        );
        assert_eq!(
            m("{+path}{?q}", "a/b?q=1"),
            pairs(&[("path", "a/b"), ("q", "1")])
        );
        assert_eq!(
            m("file:///{+path}", "file:///a?b#c"),
            pairs(&[("path", "a?b#c")])
        );
        assert_eq!(m("{+x,y}", "a,b,c"), pairs(&[("x", "a"), ("y", "b,c")]));
        assert_eq!(m("file:///{+path}", "file:///a b"), None);
    }

    #[test]
    fn fragment_operator() {
        assert_eq!(
            m("page{#section}", "page#intro/part"),
            pairs(&[("section", "intro/part")])
        );
        assert_eq!(m("page{#section}", "page#"), pairs(&[("section", "")]));
        assert_eq!(m("page{#section}", "page"), None);
        assert_eq!(
            m("page{#a,b}", "page#x,y"),
            pairs(&[("a", "x"), ("b", "y")])
        );
        assert_eq!(
            m("{+path}{#frag}", "a/b#c#d"),
            pairs(&[("path", "a/b"), ("frag", "c#d")])
        );
    }

    #[test]
    fn label_operator() {
        assert_eq!(m("file{.ext}", "file.json"), pairs(&[("ext", "json")]));
        assert_eq!(m("file{.ext}", "file.tar.gz"), pairs(&[("ext", "tar.gz")]));
        assert_eq!(m("file{.ext}", "file"), None);
        assert_eq!(m("file{.ext}", "file/json"), None);
        assert_eq!(
            m("host{.a,b}", "host.x.y"),
            pairs(&[("a", "x"), ("b", "y")])
        );
        assert_eq!(
            m("www{.dom*}", "www.example.com"),
            pairs(&[("dom", "example.com")])
        );
    }

    #[test]
    fn path_operator() {
        assert_eq!(
            m("api{/version}/x", "api/v1/x"),
            pairs(&[("version", "v1")])
        );
        assert_eq!(m("api{/a,b}", "api/x/y"), pairs(&[("a", "x"), ("b", "y")]));
        assert_eq!(m("api{/a,b}", "api/x"), None);
        assert_eq!(m("api{/a}", "api/x/y"), None);
        assert_eq!(m("api{/a}", "api/x%2Fy"), pairs(&[("a", "x/y")]));
        assert_eq!(m("repo{/path*}", "repo/a/b/c"), pairs(&[("path", "a/b/c")]));
        assert_eq!(
            m("repo{/path*}/raw", "repo/a/b/raw"),
            pairs(&[("path", "a/b")])
        );
        assert_eq!(
            m("repo{/path*}{?ref}", "repo/src/lib.rs?ref=main"),
            pairs(&[("path", "src/lib.rs"), ("ref", "main")])
        );
        assert_eq!(m("repo{/path*}", "repo"), None);
    }

    #[test]
    fn path_param_operator() {
        assert_eq!(
            m("map{;x,y}", "map;x=1;y=2"),
            pairs(&[("x", "1"), ("y", "2")])
        );
        assert_eq!(
            m("map{;x,y}", "map;y=2;x=1"),
            pairs(&[("x", "1"), ("y", "2")])
        );
        assert_eq!(m("map{;x,y}", "map;y=2"), pairs(&[("y", "2")]));
        assert_eq!(m("map{;x,y}", "map"), pairs(&[]));
        assert_eq!(m("map{;x,y}", "map;x"), pairs(&[("x", "")]));
        assert_eq!(m("map{;x,y}", "map;z=1"), None);
        assert_eq!(m("map{;x,y}", "map;x=1;x=2"), None);
        assert_eq!(m("map{;x}/end", "map;x=1/end"), pairs(&[("x", "1")]));
        assert_eq!(
            m("map{;x}{;y}", "map;y=2;x=1"),
            pairs(&[("x", "1"), ("y", "2")])
        );
    }

    #[test]
    fn query_operators() {
        let t = tpl("users/{id}{?fields,sort}");
        assert_eq!(t.matches("users/42"), pairs(&[("id", "42")]));
        assert_eq!(
            t.matches("users/42?fields=name,email&sort=asc"),
            pairs(&[("id", "42"), ("fields", "name,email"), ("sort", "asc")])
        );
        assert_eq!(
            t.matches("users/42?sort=asc&fields=name"),
            pairs(&[("id", "42"), ("fields", "name"), ("sort", "asc")])
        );
        assert_eq!(
            t.matches("users/42?sort=asc&page=2"),
            None,
            "unknown parameter"
        );
        assert_eq!(
            t.matches("users/42?sort=asc&sort=desc"),
            None,
            "repeated parameter"
        );
        assert_eq!(t.matches("users/42?"), None);
        assert_eq!(t.matches("users/42&sort=asc"), None);
        assert_eq!(
            t.matches("users/42?sort="),
            pairs(&[("id", "42"), ("sort", "")])
        );
        assert_eq!(
            t.matches("users/42?sort"),
            pairs(&[("id", "42"), ("sort", "")])
        );
        assert_eq!(
            t.matches("users/42?sort=a%26b%3Dc"),
            pairs(&[("id", "42"), ("sort", "a&b=c")])
        );
        assert_eq!(
            t.matches("users/42?sort=/x:y@z"),
            pairs(&[("id", "42"), ("sort", "/x:y@z")])
        );

        // Continuation after a literal query.
        let t = tpl("search?q=fixed{&page,size}");
        assert_eq!(t.matches("search?q=fixed"), pairs(&[]));
        assert_eq!(
            t.matches("search?q=fixed&size=10&page=2"),
            pairs(&[("page", "2"), ("size", "10")])
        );
        assert_eq!(t.matches("search?q=other&page=2"), None);

        // `{?..}{&..}` form one query, any order.
        let t = tpl("search{?q}{&page}");
        assert_eq!(
            t.matches("search?page=2&q=rust"),
            pairs(&[("q", "rust"), ("page", "2")])
        );
        assert_eq!(t.matches("search?q=rust"), pairs(&[("q", "rust")]));

        // Exploded query parameter may repeat.
        assert_eq!(m("s{?tag*}", "s?tag=a&tag=b"), pairs(&[("tag", "a,b")]));

        // Query followed by a fragment.
        assert_eq!(
            m("doc{?v}{#sec}", "doc?v=2#intro"),
            pairs(&[("v", "2"), ("sec", "intro")])
        );
    }

    #[test]
    fn prefix_modifier() {
        assert_eq!(m("{x:3}", "abc"), pairs(&[("x", "abc")]));
        assert_eq!(m("{x:3}", "abcd"), None);
        assert_eq!(
            m("{x:3}{y}", "abcdef"),
            pairs(&[("x", "a"), ("y", "bcdef")])
        );
        assert_eq!(m("{x:3}-{y}", "abcd-e"), None);
        // Characters, not bytes: "é" is one character, six encoded bytes.
        assert_eq!(m("{x:2}", "%C3%A9%C3%A9"), pairs(&[("x", "éé")]));
        assert_eq!(m("{x:1}", "%C3%A9%C3%A9"), None);
        assert_eq!(m("s{?q:2}", "s?q=ab"), pairs(&[("q", "ab")]));
        assert_eq!(m("s{?q:2}", "s?q=abc"), None);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(m("{x}", "hello%20world"), pairs(&[("x", "hello world")]));
        assert_eq!(m("{x}", "%E2%9C%93"), pairs(&[("x", "✓")]));
        assert_eq!(m("{x}", "%e2%9c%93"), pairs(&[("x", "✓")]));
        // Raw non-ASCII (IRI) characters are accepted as is.
        assert_eq!(m("{x}", "café"), pairs(&[("x", "café")]));
        // Invalid UTF-8 after decoding.
        assert_eq!(m("{x}", "%FF"), None);
        assert_eq!(m("{x}", "%C3"), None);
        assert_eq!(m("{x}", "%C3x"), None);
        assert_eq!(m("{x}", "%C3%28"), None);
        assert_eq!(m("{x}", "%ED%A0%80"), None, "surrogate");
        assert_eq!(m("{x}", "%C0%AF"), None, "overlong");
        // Malformed percent-encoding.
        assert_eq!(m("{x}", "a%2"), None);
        assert_eq!(m("{x}", "a%zz"), None);
        assert_eq!(m("{x}", "100%"), None);
    }

    #[test]
    fn no_match_cases() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/other"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            m("test://template/{id}/data", "other://template/1/data"),
            None
        );
        assert_eq!(m("config://{env}", "config://prod/extra"), None);
        assert_eq!(m("config://{env}", "config:/prod"), None);
        assert_eq!(m("users/{id}", "users/42?x=1"), None);
    }

    #[test]
    fn repeated_variable_must_agree() {
        let t = tpl("{x}/{x}");
        assert_eq!(t.variables().collect::<Vec<_>>(), ["x"]);
        assert_eq!(t.matches("a/a"), pairs(&[("x", "a")]));
        assert_eq!(t.matches("a/%61"), pairs(&[("x", "a")]));
        assert_eq!(t.matches("a/b"), None);
        // With a prefix modifier, the prefixed occurrence holds the start.
        let t = tpl("{x:3}/{x}");
        assert_eq!(t.matches("abc/abcdef"), pairs(&[("x", "abcdef")]));
        assert_eq!(t.matches("ab/ab"), pairs(&[("x", "ab")]));
        assert_eq!(t.matches("abd/abcdef"), None);
        assert_eq!(t.expand(&[("x", "abcdef")]), "abc/abcdef");
        // Query parameters repeated in two groups.
        let t = tpl("{id}{?id}");
        assert_eq!(t.matches("7?id=7"), pairs(&[("id", "7")]));
        assert_eq!(t.matches("7"), pairs(&[("id", "7")]));
        assert_eq!(t.matches("7?id=8"), None);
    }

    #[test]
    fn variables_in_order_unique() {
        let t = tpl("{b}/{a}{?c,b}{#d}");
        assert_eq!(t.variables().collect::<Vec<_>>(), ["b", "a", "c", "d"]);
        assert_eq!(t.as_str(), "{b}/{a}{?c,b}{#d}");
        assert_eq!(t.to_string(), "{b}/{a}{?c,b}{#d}");
    }

    #[test]
    fn long_uri_rejected() {
        let t = tpl("file:///{+path}");
        let ok = format!("file:///{}", "a".repeat(MAX_URI_LEN - 8));
        assert_eq!(ok.len(), MAX_URI_LEN);
        assert!(t.matches(&ok).is_some());
        let too_long = format!("file:///{}", "a".repeat(MAX_URI_LEN));
        assert_eq!(t.matches(&too_long), None);
    }

    #[test]
    fn pathological_inputs_finish() {
        let t = tpl("{a}{b}{c}{d}{e}{f}x");
        // Rejected by the literal pre-check.
        assert_eq!(t.matches(&"a".repeat(5000)), None);
        // Passes the pre-check (ends with `x`) but cannot match; bounded by
        // memoization and the work budget.
        assert_eq!(t.matches(&format!("{}!x", "a".repeat(5000))), None);
        let t = tpl("{a}-{b}-{c}-{d}-{e}-{f}!");
        assert_eq!(t.matches(&format!("{}%!", "a-".repeat(3000))), None);
        let t = tpl("{+a}{+b}{+c}{+d}x");
        assert_eq!(t.matches(&format!("{}%zzx", "/".repeat(7000))), None);
        let t = tpl("s{?x*}");
        let uri = format!("s{}", "&x=1".repeat(2000).replacen('&', "?", 1));
        assert!(t.matches(&uri).is_some());
        // Repeated variables disable memoization; the budget still bounds it.
        let t = tpl("{x}{y}{x}{y}{x}!");
        assert_eq!(t.matches(&format!("{}%!", "a".repeat(4000))), None);
    }

    #[test]
    fn expand_encodes() {
        let t = tpl("users/{id}{?fields,sort}");
        assert_eq!(t.expand(&[("id", "42")]), "users/42");
        assert_eq!(
            t.expand(&[("id", "a b"), ("sort", "x&y")]),
            "users/a%20b?sort=x%26y"
        );
        assert_eq!(
            tpl("file:///{+path}").expand(&[("path", "a/b c")]),
            "file:///a/b%20c"
        );
        assert_eq!(tpl("{x:3}").expand(&[("x", "abcdef")]), "abc");
        assert_eq!(tpl("{x}").expand(&[]), "");
        assert_eq!(
            tpl("{x}").expand(&[("x", "1"), ("x", "2"), ("y", "3")]),
            "2"
        );
    }

    #[test]
    fn expand_prefix_counts_characters() {
        // iri-string 0.7 miscounts multi-byte characters here; the rewritten
        // template works around it.
        assert_eq!(
            tpl("{x:2}").expand(&[("x", "日本語")]),
            "%E6%97%A5%E6%9C%AC"
        );
        assert_eq!(
            tpl("{+x:2}").expand(&[("x", "日本語")]),
            "%E6%97%A5%E6%9C%AC"
        );
        assert_eq!(tpl("{#x:1}").expand(&[("x", "éa")]), "#%C3%A9");
        assert_eq!(
            tpl("{?q:2,r}").expand(&[("q", "ñño"), ("r", "x")]),
            "?q=%C3%B1%C3%B1&r=x"
        );
        // In reserved expansion an encoded character counts as one.
        assert_eq!(tpl("{+x:3}").expand(&[("x", "ab%20cd")]), "ab%20");
        assert_eq!(tpl("{+x:2}").expand(&[("x", "a%C3%A9b")]), "a%C3%A9");
        assert_eq!(tpl("{+x:2}").expand(&[("x", "a%ZZ")]), "a%25");
        assert_eq!(tpl("{x:2}").expand(&[("x", "a%b")]), "a%25");
        assert_eq!(
            tpl("{;x:3}").expand(&[("x", "ééé")]),
            ";x=%C3%A9%C3%A9%C3%A9"
        );
        assert_eq!(tpl("{;x:3}").expand(&[("x", "")]), ";x");
        assert_eq!(
            tpl("{/x:1,y}").expand(&[("x", "日本"), ("y", "語")]),
            "/%E6%97%A5/%E8%AA%9E"
        );
        // A synthetic name never collides with a real one.
        let t = tpl("{_s0}/{+x:1}");
        assert_eq!(t.expand(&[("_s0", "keep"), ("x", "yz")]), "keep/y");
        assert_eq!(t.matches("keep/y"), pairs(&[("_s0", "keep"), ("x", "y")]));
    }

    #[test]
    fn expand_reserved_non_ascii() {
        // iri-string 0.7 panics on these; the rewritten template avoids it.
        assert_eq!(
            tpl("{+x}").expand(&[("x", "日本/x")]),
            "%E6%97%A5%E6%9C%AC/x"
        );
        assert_eq!(tpl("{+x}").expand(&[("x", "%41é")]), "%41%C3%A9");
        assert_eq!(tpl("{#x}").expand(&[("x", "é#a b")]), "#%C3%A9#a%20b");
        assert_eq!(tpl("{+x*}").expand(&[("x", "ü,v")]), "%C3%BC,v");
        assert_eq!(
            tpl("{x}/{+x}").expand(&[("x", "a b/日")]),
            "a%20b%2F%E6%97%A5/a%20b/%E6%97%A5"
        );
    }

    #[test]
    fn round_trip() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("test://template/{id}/data", &[("id", "123")]),
            ("test://template/{id}/data", &[("id", "with space/slash?")]),
            ("config://{env}", &[("env", "héllo wörld ✓")]),
            ("file:///{+path}", &[("path", "dir/sub dir/naïve file.txt")]),
            ("file:///{+path}", &[("path", "100% sure?#x")]),
            ("{x,y}", &[("x", "a,b"), ("y", "c d")]),
            ("page{#section}", &[("section", "part 1/2")]),
            ("file{.ext}", &[("ext", "tar gz")]),
            ("api{/a,b}", &[("a", "x/y"), ("b", "z")]),
            ("repo{/path*}", &[("path", "a/b c")]),
            ("map{;x,y}", &[("x", "1 2"), ("y", "")]),
            ("map{;x,y}", &[("y", "só")]),
            (
                "users/{id}{?fields,sort}",
                &[("id", "42"), ("fields", "name, email"), ("sort", "a&b=c")],
            ),
            ("users/{id}{?fields,sort}", &[("id", "日本")]),
            ("search{?q}{&page}", &[("q", "rust lang"), ("page", "2")]),
            ("search?q=fixed{&page}", &[("page", "3/4")]),
            ("{x:3}", &[("x", "日本語")]),
            ("x://{a}-{b}", &[("a", "1"), ("b", "2-3")]),
            ("mcp://static", &[]),
        ];
        for (template, vars) in cases {
            let t = tpl(template);
            let uri = t.expand(vars);
            assert!(uri.is_ascii(), "{template}: {uri}");
            let got = t.matches(&uri);
            let mut want: Vec<(String, String)> = Vec::new();
            for name in t.variables() {
                if let Some((_, v)) = vars.iter().find(|(k, _)| *k == name) {
                    want.push((name.to_owned(), (*v).to_owned()));
                }
            }
            assert_eq!(got, Some(want), "template {template}, uri {uri}");
        }
    }

    #[test]
    fn round_trip_generated_values() {
        // Deterministic pseudo-random values over a pool of awkward characters.
        let pool: Vec<char> = "aZ09-._~ /?#&=,;:@+!*'()[]%éß日本😀\t\n\u{0}\u{7f}"
            .chars()
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        // (template, prefix length, may the value contain `%`)
        let templates: &[(&str, Option<usize>, bool)] = &[
            ("t://{x}", None, true),
            ("t://{x}/end", None, true),
            ("t://{+x}", None, false),
            ("t://{+x}/end", None, false),
            ("t{#x}", None, false),
            ("t{.x}", None, true),
            ("t{/x}", None, true),
            ("t{/x*}", None, true),
            ("t{;x}", None, true),
            ("t{?x}", None, true),
            ("t?a=b{&x}", None, true),
            ("t://{x:3}", Some(3), true),
            ("t://{+x:3}", Some(3), false),
            ("t{;x:2}", Some(2), true),
            ("t{?x:5}", Some(5), true),
            ("t{/x:1}/end", Some(1), true),
        ];
        for _ in 0..300 {
            let len = 1 + next(12);
            let value: String = (0..len).map(|_| pool[next(pool.len())]).collect();
            for &(template, prefix, percent) in templates {
                let value = if percent {
                    value.clone()
                } else {
                    value.replace('%', "x")
                };
                let t = tpl(template);
                let uri = t.expand(&[("x", &value)]);
                assert!(uri.is_ascii(), "{template} {value:?} -> {uri}");
                let want: String = match prefix {
                    Some(n) => value.chars().take(n).collect(),
                    None => value.clone(),
                };
                assert_eq!(
                    t.matches(&uri),
                    pairs(&[("x", &want)]),
                    "{template} {value:?} -> {uri}"
                );
            }
        }
    }

    #[test]
    fn invalid_templates_rejected() {
        for (bad, needle) in [
            ("users/{id", "not closed"),
            ("users/{", "not closed"),
            ("users/id}", "unexpected `}`"),
            ("{}", "empty expression"),
            ("{a-b}", "invalid variable name `a-b`"),
            ("{a b}", "invalid variable name"),
            ("{.a.}", "invalid variable name `a.`"),
            ("{a..b}", "invalid variable name"),
            ("{a,}", "invalid variable name ``"),
            ("{+}", "invalid variable name"),
            ("{=a}", "reserved for future"),
            ("{|a}", "reserved for future"),
            ("{a:0}", "prefix length"),
            ("{a:10000}", "prefix length"),
            ("{a:x}", "prefix length"),
            ("{a:3*}", "invalid variable name"),
            ("a b/{x}", "not allowed"),
            ("café/{x}", "not allowed"),
            ("a%2/{x}", "percent-encoding"),
            ("a%zz", "percent-encoding"),
        ] {
            let err = UriTemplate::parse(bad).expect_err(bad);
            let message = err.to_string();
            assert!(message.contains(bad), "{message}");
            assert!(message.contains(needle), "{bad}: {message}");
        }
        // The error is a std error.
        let err: Box<dyn std::error::Error> = Box::new(UriTemplate::parse("{").unwrap_err());
        assert!(err.to_string().starts_with("invalid URI template"));
    }

    #[test]
    fn valid_templates_accepted() {
        for good in [
            "",
            "plain",
            "{a.b}",
            "{%41x}",
            "{_x9}",
            "{x:9999}",
            "{+a,b*,c:2}",
            "x%20y{?a}",
            "{;a}{;b}{?c}{&d}{#e}",
            "it's/{x}",
        ] {
            let t = UriTemplate::parse(good);
            assert!(t.is_ok(), "{good}: {t:?}");
        }
    }
}
