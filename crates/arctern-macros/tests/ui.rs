//! The derive's error messages, as users see them.

#[test]
fn derive_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
