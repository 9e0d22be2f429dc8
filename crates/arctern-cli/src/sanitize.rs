//! Server text made safe for a terminal. A server's strings reach the terminal in results,
//! listings, logs, progress, errors and forms; an escape sequence among them could retitle
//! the window, write the clipboard, hide or fake lines, or turn the consent screen into a
//! link elsewhere. Every control character but newline and tab is shown as a visible
//! escape (`\x1b`, `\u{9b}`), and so are the characters that reorder text (bidi controls).
//! Linear in the input, with no recursion: a huge sequence costs nothing special.
//! `--output json` is not cleaned: serde_json escapes control characters itself, and the
//! document stays exact.

use std::borrow::Cow;
use std::fmt::Write as _;

use arctern::types::elicitation::ElicitRequestParams;
use serde_json::Value;

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char, keep_newlines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_newlines,
        // C0, DEL, C1.
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        // Bidi embeddings, overrides and isolates; the marks that flip neighbouring text.
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn clean(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !unsafe_char(c, keep_newlines) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character but newline and tab made visible.
pub fn text(text: &str) -> Cow<'_, str> {
    clean(text, true)
}

/// `text` as one line: newlines and tabs are made visible too (names, titles, URLs).
pub fn line(text: &str) -> Cow<'_, str> {
    clean(text, false)
}

/// Whether `text` would reach a terminal unchanged as one line.
pub fn is_clean_line(text: &str) -> bool {
    !text.chars().any(|c| unsafe_char(c, false))
}

/// JSON text with the characters serde_json leaves raw but a terminal interprets (DEL, C1,
/// bidi controls) written as `\uXXXX` escapes: the same document, safe to print.
pub fn json_escapes(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| c > '\x7e' && unsafe_char(c, true)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c > '\x7e' && unsafe_char(c, true) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A copy of an elicitation whose text is terminal-safe: the message, the URL and every
/// title, description, default and label of the schema. Values that go back to the server
/// as they are (property names, `enum` and `const` values) cannot be changed: when one of
/// them holds a control character, the question cannot be shown safely and this fails.
pub fn elicitation(params: &ElicitRequestParams) -> Result<ElicitRequestParams, String> {
    let mut value = serde_json::to_value(params).map_err(|e| e.to_string())?;
    clean_value(&mut value, false)?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Cleans every string in `value` for display; `exact` strings (values sent back) must
/// already be clean.
fn clean_value(value: &mut Value, exact: bool) -> Result<(), String> {
    match value {
        Value::String(s) => {
            if exact {
                if !is_clean_line(s) {
                    return Err(format!(
                        "the question offers a value with control characters ({})",
                        line(s)
                    ));
                }
            } else if let Cow::Owned(clean) = text(s) {
                *s = clean;
            }
        }
        Value::Array(items) => {
            for item in items {
                clean_value(item, exact)?;
            }
        }
        Value::Object(map) => {
            if let Some(bad) = map.keys().find(|k| !is_clean_line(k)) {
                return Err(format!(
                    "the question has a field name with control characters ({})",
                    line(bad)
                ));
            }
            for (key, item) in map.iter_mut() {
                let exact = exact || matches!(key.as_str(), "enum" | "const" | "type" | "mode");
                clean_value(item, exact)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elicitation_is_cleaned_for_display_and_keeps_its_values() {
        let params: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "form",
            "message": "Sign in\n\u{1b}]8;;https://evil.example/\u{7}",
            "requestedSchema": {"type": "object", "properties": {
                "region": {"type": "string", "title": "\u{1b}[60000000000m",
                    "enum": ["eu", "us"], "enumNames": ["\u{1b}[2JEurope", "US"]}}}
        }))
        .unwrap();
        let clean = elicitation(&params).unwrap();
        let shown = serde_json::to_string(&clean).unwrap();
        assert!(!shown.contains("\\u001b"), "{shown}");
        assert!(shown.contains(r#"\\x1b[2JEurope"#), "{shown}");
        assert!(shown.contains(r#"["eu","us"]"#), "{shown}");
        assert_eq!(
            clean.message(),
            "Sign in\n\\x1b]8;;https://evil.example/\\x07"
        );

        let bad: ElicitRequestParams = serde_json::from_value(serde_json::json!({
            "mode": "form", "message": "m",
            "requestedSchema": {"type": "object", "properties": {
                "r": {"type": "string", "enum": ["\u{1b}[2J"]}}}
        }))
        .unwrap();
        assert!(elicitation(&bad).is_err());
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(text("héllo\n\tworld"), Cow::Borrowed(_)));
        assert!(is_clean_line("plain"));
        assert!(!is_clean_line("two\nlines"));
    }

    #[test]
    fn escapes_become_visible() {
        let osc8 = "\x1b]8;;https://evil.example/\x1b\\https://accounts.google.com/\x1b]8;;\x07";
        let shown = text(osc8);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07'),
            "{shown}"
        );
        assert_eq!(
            shown,
            "\\x1b]8;;https://evil.example/\\x1b\\https://accounts.google.com/\\x1b]8;;\\x07"
        );
        assert_eq!(text("a\rb\x7f\u{9b}2J"), "a\\x0db\\x7f\\u{9b}2J");
        assert_eq!(text("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(text("a\nb\tc"), "a\nb\tc");
    }

    #[test]
    fn json_stays_the_same_document() {
        let value = serde_json::json!({"t": "a\u{9b}2J\u{7f}\u{202e}b\u{1b}"});
        let text = serde_json::to_string(&value).unwrap();
        let safe = json_escapes(&text);
        assert!(safe.chars().all(|c| !unsafe_char(c, true)), "{safe}");
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), value);
    }

    #[test]
    fn a_huge_sequence_is_linear() {
        let huge = format!("\x1b[{}m", "1".repeat(1_000_000));
        let shown = text(&huge);
        assert!(shown.starts_with("\\x1b[111"));
        assert_eq!(shown.len(), huge.len() + 3);
    }
}
