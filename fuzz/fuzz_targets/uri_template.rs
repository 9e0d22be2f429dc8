//! The URI-template matcher. Two halves of the input: a template (the server's) and a URI
//! (the client's). Parsing and matching never panic and stay within their work budget; a
//! match binds only the template's variables, each once, in template order. Then a round
//! trip: a value expanded into one of a few single-variable templates is recovered by
//! matching (the rules of `UriTemplate`'s documentation).
#![no_main]

use arctern::server::UriTemplate;
use libfuzzer_sys::fuzz_target;

/// `arctern`'s limit on the URIs it matches (`uri_template::MAX_URI_LEN`).
const MAX_URI_LEN: usize = 8 * 1024;

/// (template, prefix length, may the value contain `%`): reserved expansion keeps a `%` as it
/// is, so a value with `%` does not survive `{+x}` and `{#x}` (RFC 6570).
const ROUND_TRIP: &[(&str, Option<usize>, bool)] = &[
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(t) = UriTemplate::parse(template) {
        assert_eq!(t.as_str(), template);
        let vars: Vec<&str> = t.variables().collect();
        if let Some(bound) = t.matches(uri) {
            let mut order = vars.iter();
            for (name, _) in &bound {
                assert!(
                    order.any(|v| v == name),
                    "{template:?} on {uri:?}: {name:?} out of order or not a variable: {bound:?}"
                );
            }
        }
    }
    // The round trip, with the URI half as the value (non-empty: an empty value is absent).
    if uri.is_empty() {
        return;
    }
    let pick = usize::from(data[0]) % ROUND_TRIP.len();
    let (template, prefix, percent) = ROUND_TRIP[pick];
    let value = if percent {
        uri.to_owned()
    } else {
        uri.replace('%', "x")
    };
    let t = UriTemplate::parse(template).expect("a valid template");
    let expanded = t.fuzz_expand(&[("x", &value)]);
    assert!(expanded.is_ascii(), "{template} {value:?} -> {expanded}");
    if expanded.len() > MAX_URI_LEN {
        // Longer URIs never match, by design.
        return;
    }
    let want: String = match prefix {
        Some(n) => value.chars().take(n).collect(),
        None => value.clone(),
    };
    assert_eq!(
        t.matches(&expanded),
        Some(vec![("x".to_owned(), want)]),
        "{template} {value:?} -> {expanded}"
    );
});
