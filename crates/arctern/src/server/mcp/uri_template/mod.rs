//! RFC 6570 URI Template matching for MCP resource templates; see [`UriTemplate`].

use std::fmt;

use iri_string::template::{UriTemplateStr, UriTemplateString};

/// Longest URI, in bytes, that [`UriTemplate::matches`] looks at; longer URIs
/// never match.
pub const MAX_URI_LEN: usize = 8 * 1024;

/// Work budget of a single [`UriTemplate::matches`] call, in elementary steps
/// (bytes scanned plus states visited). Realistic templates need a few steps
/// per URI byte; only hostile, highly ambiguous inputs exhaust it.
const MAX_WORK: usize = 200_000;

/// A parsed RFC 6570 URI template, matched against URIs (the reverse of RFC 6570
/// expansion).
///
/// A server advertises resource templates such as `file:///{+path}` or
/// `users/{id}{?fields,sort}`. When a client sends `resources/read` with a
/// concrete URI, the server has to find out which template the URI is an
/// expansion of and recover the values of the template's variables.
///
/// Validation is delegated to the `iri-string` crate; the split of a template
/// into literal and expression parts and the matching itself are done here,
/// because `iri-string` does not expose its syntax tree.
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
        // Our own parser first: `iri-string` 0.7.14 panics on a `%` followed by one ASCII
        // character and a multi-byte one (it splits the string inside that character), and
        // ours refuses every such template.
        let parts = parse_parts(template).map_err(|e| UriTemplateError::new(template, e))?;
        let validated =
            UriTemplateStr::new(template).map_err(|e| UriTemplateError::new(template, e))?;
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

mod matcher;
mod parse;

#[cfg(fuzzing)]
impl UriTemplate {
    /// RFC 6570 expansion, for the fuzz targets' round trip (see `crate::__fuzz`).
    #[doc(hidden)]
    pub fn fuzz_expand(&self, vars: &[(&str, &str)]) -> String {
        self.expand(vars)
    }
}

use matcher::{Exhausted, Matcher, match_literal};
use parse::{Start, Token, compile, parse_parts};

#[cfg(any(test, fuzzing))]
mod expand;
#[cfg(test)]
mod tests;
