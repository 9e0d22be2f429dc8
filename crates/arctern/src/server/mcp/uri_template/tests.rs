//! Matching, checked against the RFC's examples, edge cases, and expansions.

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
