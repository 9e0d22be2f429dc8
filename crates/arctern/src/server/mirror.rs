//! Checking the `Mcp-Param-{Name}` headers of a `tools/call` against its arguments
//! (SEP-2243). The annotation and encoding rules themselves live in
//! [`arctern_types::headers`], shared with the client.

pub use arctern_types::headers::MirroredParam;
use arctern_types::meta::JsonObject;

/// Checks the `Mcp-Param-*` headers of a `tools/call` against its arguments.
///
/// `headers` holds each `Mcp-Param-*` header as (name after the prefix, value decoded from
/// its base64 sentinel form or why it is malformed). Headers the tool does not declare are
/// ignored. `Err` says why the request must be rejected with `-32020`.
pub(crate) fn check_headers(
    mirrored: &[MirroredParam],
    arguments: Option<&JsonObject>,
    headers: &[(String, Result<String, String>)],
) -> Result<(), String> {
    for param in mirrored {
        let value = arguments.and_then(|args| param.value(args));
        let mut sent = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(&param.header));
        let header = sent.next().map(|(_, v)| v);
        if sent.next().is_some() {
            return Err(format!("Mcp-Param-{} header is repeated", param.header));
        }
        match (value, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "Missing Mcp-Param-{} header for argument {}",
                    param.header,
                    param.path.join(".")
                ));
            }
            (None, Some(_)) => {
                return Err(format!(
                    "Mcp-Param-{} header given, but argument {} is absent",
                    param.header,
                    param.path.join(".")
                ));
            }
            (Some(_), Some(Err(why))) => {
                return Err(format!(
                    "Malformed Mcp-Param-{} header: {why}",
                    param.header
                ));
            }
            (Some(value), Some(Ok(text))) => {
                if !MirroredParam::matches(value, text) {
                    return Err(format!(
                        "Mcp-Param-{} header does not match argument {}",
                        param.header,
                        param.path.join(".")
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn params(schema: Value) -> Result<Vec<MirroredParam>, String> {
        arctern_types::headers::mirrored_params(schema.as_object().unwrap())
    }

    fn check(args: Value, headers: &[(&str, Result<&str, &str>)]) -> Result<(), String> {
        let mirrored = params(json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"}
        }}))
        .unwrap();
        let headers: Vec<(String, Result<String, String>)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.map(str::to_owned).map_err(str::to_owned)))
            .collect();
        check_headers(&mirrored, args.as_object(), &headers)
    }

    #[test]
    fn headers_must_mirror_the_arguments() {
        let all = [
            ("region", Ok("us-west1")),
            ("COUNT", Ok("42")),
            ("Dry", Ok("true")),
        ];
        check(
            json!({"region": "us-west1", "count": 42, "dry": true}),
            &all,
        )
        .unwrap();
        check(
            json!({"region": "us-west1", "count": 42.0, "dry": true}),
            &all,
        )
        .unwrap();
        // Absent and null arguments expect no header; unknown headers are ignored.
        check(json!({"region": null}), &[("other", Err("bad"))]).unwrap();
        check(json!({}), &[]).unwrap();

        for (args, headers) in [
            (json!({"region": "us-west1"}), vec![]),
            (json!({"region": "us-west1"}), vec![("region", Ok("eu"))]),
            (
                json!({"region": "us-west1"}),
                vec![("region", Err("bad base64"))],
            ),
            (
                json!({"region": "us-west1"}),
                vec![("region", Ok("us-west1")), ("Region", Ok("us-west1"))],
            ),
            (json!({}), vec![("region", Ok("us-west1"))]),
            (json!({"count": 42}), vec![("count", Ok("43"))]),
            (json!({"dry": false}), vec![("dry", Ok("False"))]),
        ] {
            assert!(check(args.clone(), &headers).is_err(), "{args} {headers:?}");
        }
    }
}
