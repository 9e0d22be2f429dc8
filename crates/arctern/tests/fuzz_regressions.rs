//! Inputs the fuzz targets (`fuzz/`) found to crash, kept as tests so that they never come
//! back. Each names its target and what went wrong.

/// `uri_template`: a `%`, one ASCII character and a multi-byte one made
/// `UriTemplate::parse` panic inside `iri-string`'s validator (a string sliced inside a
/// character) instead of refusing the template.
#[cfg(feature = "server")]
#[test]
fn uri_template_percent_before_a_multibyte_character_is_refused() {
    use arctern::server::UriTemplate;
    for template in [
        "k%Eр",
        "%aé",
        "x/%1日本/{id}",
        "{id}%0\u{10348}",
        "%E\u{0440}9CEA8A%%9EX3}",
    ] {
        let err = UriTemplate::parse(template).expect_err(template);
        assert!(
            err.to_string().contains("percent-encoding"),
            "{template}: {err}"
        );
    }
    // The two artifacts, byte for byte.
    for artifact in [
        &b"k%E\xd1\x80\x009CEA8A%%9EX3}%%9,!"[..],
        &b"S%x\xc6\x8beg\x00\x00\x00,x\xc6\x8b"[..],
    ] {
        let template = std::str::from_utf8(artifact).unwrap();
        assert!(UriTemplate::parse(template).is_err(), "{template:?}");
    }
}
