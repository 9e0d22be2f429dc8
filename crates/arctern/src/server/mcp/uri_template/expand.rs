//! RFC 6570 expansion, for the tests only: they check that matching recovers the values a
//! template was expanded with. (Servers never expand templates, so it is not part of the
//! API.) `iri-string` expands; the workarounds below avoid its bugs with multi-byte
//! characters.

use std::fmt;

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateString;
use iri_string::template::context::{Context, Visitor};

use super::UriTemplate;
use super::matcher::decode_triplet;
use super::parse::{Operator, Part, parse_parts};

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
pub(super) struct Rewrite {
    /// The rewritten template.
    pub(super) template: UriTemplateString,
    /// The synthetic variables.
    pub(super) synthetic: Vec<Synthetic>,
}

/// A synthetic variable of a [`Rewrite`].
#[derive(Debug, Clone)]
pub(super) struct Synthetic {
    /// Name of the synthetic variable in the rewritten template.
    pub(super) name: String,
    /// Index of the original variable.
    pub(super) var: usize,
    /// The prefix length, if any.
    pub(super) prefix: Option<usize>,
}

impl Synthetic {
    /// The value of the synthetic variable given the original one.
    pub(super) fn value(&self, value: &str) -> String {
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

impl UriTemplate {
    /// Expands the template (RFC 6570) with the given variable values.
    ///
    /// Values are percent-encoded as the operators require. Variables missing
    /// from `vars` are undefined and dropped from the output as RFC 6570
    /// specifies; names that are not in the template are ignored, and when a
    /// name is given twice the later value wins.
    #[must_use]
    pub(super) fn expand(&self, vars: &[(&str, &str)]) -> String {
        let mut context = ExpandContext {
            vars,
            synthetic: Vec::new(),
        };
        let parts = parse_parts(self.template.as_str()).expect("a parsed template");
        let rewritten = rewrite(self.template.as_str(), &parts, &self.vars);
        let template = match &rewritten {
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
}

/// The operator as written in a template.
pub(super) fn operator_str(operator: Operator) -> &'static str {
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
pub(super) fn rewrite(template: &str, parts: &[Part], vars: &[String]) -> Option<Rewrite> {
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
pub(super) fn truncate(value: &str, max: usize) -> &str {
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
pub(super) fn encoded_char_len(bytes: &[u8], at: usize) -> usize {
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
pub(super) struct ExpandContext<'a> {
    /// Values given by the caller; the last one of a name wins.
    pub(super) vars: &'a [(&'a str, &'a str)],
    /// Values of the synthetic variables of a [`Rewrite`].
    pub(super) synthetic: Vec<(&'a str, String)>,
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
pub(super) struct OneCharAtATime<'a>(&'a str);

impl fmt::Display for OneCharAtATime<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        self.0.chars().try_for_each(|c| f.write_char(c))
    }
}
