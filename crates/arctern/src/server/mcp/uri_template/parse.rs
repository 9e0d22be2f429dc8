//! Parsing a template into literal and expression parts, and compiling the parts into the
//! tokens the matcher walks.

use std::ops::Range;

use iri_string::template::UriTemplateString;

use super::UriTemplate;

/// An RFC 6570 expression operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
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
pub(super) struct VarSpec {
    /// The variable name.
    pub(super) name: String,
    /// Maximum length from a `:N` prefix modifier.
    pub(super) prefix: Option<usize>,
    /// Whether the `*` explode modifier is present.
    pub(super) explode: bool,
}

/// A syntactic part of a template.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// Literal text: a byte range of the template.
    Literal(Range<usize>),
    /// An expression `{...}`.
    Expression(Operator, Vec<VarSpec>),
}

/// Splits a template into literal and expression parts, with RFC 6570 syntax
/// checks and readable error messages.
pub(super) fn parse_parts(template: &str) -> Result<Vec<Part>, String> {
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
pub(super) fn parse_expression(body: &str, offset: usize) -> Result<Part, String> {
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
pub(super) fn is_valid_varname(name: &str) -> bool {
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
pub(super) fn is_literal_byte(b: u8) -> bool {
    matches!(b, 0x21..=0x7e) && !matches!(b, b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'|')
}

/// Whether `bytes[at..at + 2]` are two hex digits.
pub(super) fn is_hex_pair(bytes: &[u8], at: usize) -> bool {
    bytes
        .get(at..at + 2)
        .is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit))
}

/// A set of ASCII bytes that may appear unencoded in a value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Class(u128);

impl Class {
    /// The class made of the given bytes.
    pub(super) const fn of(chars: &[u8]) -> Class {
        let mut bits = 0u128;
        let mut i = 0;
        while i < chars.len() {
            bits |= 1 << chars[i];
            i += 1;
        }
        Class(bits)
    }

    /// The union of two classes.
    pub(super) const fn or(self, other: Class) -> Class {
        Class(self.0 | other.0)
    }

    /// Whether the ASCII byte `b` is in the class.
    pub(super) fn allows(self, b: u8) -> bool {
        b < 128 && self.0 & (1 << b) != 0
    }
}

/// RFC 3986 `unreserved`.
pub(super) const UNRESERVED: Class =
    Class::of(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~");
/// RFC 3986 `unreserved / reserved`.
pub(super) const UNRESERVED_RESERVED: Class = UNRESERVED.or(Class::of(b":/?#[]@!$&'()*+,;="));
/// Values of path-style parameters (`{;x}`): unreserved, plus `,` of lists.
pub(super) const PATH_PARAM_VALUE: Class = UNRESERVED.or(Class::of(b","));
/// Values of query parameters: everything a query may hold except the
/// delimiters `&`, `=` and `#`.
pub(super) const QUERY_VALUE: Class = UNRESERVED.or(Class::of(b",/?:@!$'()*+;"));

/// One element of a compiled template.
#[derive(Debug, Clone)]
pub(super) enum Token {
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
pub(super) struct ValueToken {
    /// Index of the variable in `UriTemplate::vars`.
    pub(super) var: usize,
    /// Bytes allowed unencoded.
    pub(super) class: Class,
    /// Maximum number of characters.
    pub(super) prefix: Option<usize>,
    /// Whether the value may be empty.
    pub(super) allow_empty: bool,
}

/// Optional `name=value` parameters in any order.
#[derive(Debug, Clone)]
pub(super) struct ParamGroup {
    /// Character before the first parameter (`?`, `&` or `;`).
    pub(super) lead: u8,
    /// Character between parameters (`&` or `;`).
    pub(super) sep: u8,
    /// Bytes allowed unencoded in values.
    pub(super) class: Class,
    /// The parameters.
    pub(super) params: Vec<Param>,
}

/// A parameter of a [`ParamGroup`].
#[derive(Debug, Clone)]
pub(super) struct Param {
    /// Index of the variable in `UriTemplate::vars`.
    pub(super) var: usize,
    /// Maximum number of characters.
    pub(super) prefix: Option<usize>,
    /// Whether the parameter may repeat.
    pub(super) explode: bool,
}

/// What the URI must hold where a token starts, used to skip hopeless
/// candidate ends of the preceding value without recursing.
#[derive(Debug, Clone, Copy)]
pub(super) enum Start {
    /// The end of the URI.
    End,
    /// This byte.
    Byte(u8),
    /// Anything.
    Any,
}

/// Turns parsed parts into tokens.
pub(super) fn compile(template: UriTemplateString, parts: &[Part]) -> UriTemplate {
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
    UriTemplate {
        template,
        vars,
        tokens,
        starts,
        memoizable,
    }
}
