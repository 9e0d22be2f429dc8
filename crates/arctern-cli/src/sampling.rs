//! `--sampling-command`: a program that answers the server's sampling requests.
//!
//! The program gets the request as JSON on stdin —
//! `{"method":"sampling/createMessage","params":{"messages":[…],"maxTokens":…}}` — and prints
//! on stdout either a `CreateMessageResult` JSON object (`{"role":"assistant","content":
//! {"type":"text","text":"…"},"model":"…"}`), or plain text, which becomes the text of an
//! assistant message from model `<program name>`. A non-zero exit or empty output fails the
//! question.

use std::process::Stdio;

use arctern::types::sampling::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
};
use tokio::io::AsyncWriteExt;

/// Runs `command` (program and arguments) for one sampling request.
pub async fn run(
    command: &[String],
    params: &CreateMessageRequestParams,
) -> Result<CreateMessageResult, String> {
    let Some((program, args)) = command.split_first() else {
        return Err("the sampling command is empty".into());
    };
    let request = serde_json::to_vec(&CreateMessageRequest::new(params.clone()))
        .map_err(|e| format!("could not encode the request: {e}"))?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start {program:?}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that answers without reading its input closes the pipe early; its
        // answer still counts.
        let _ = stdin.write_all(&request).await;
        let _ = stdin.shutdown().await;
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("{program:?} failed: {e}"))?;
    if !output.status.success() {
        return Err(format!("{program:?} exited with {}", output.status));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("{program:?} printed nothing"));
    }
    if text.starts_with('{')
        && let Ok(result) = serde_json::from_str::<CreateMessageResult>(text)
    {
        return Ok(result);
    }
    let model = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.clone());
    Ok(CreateMessageResult::text(model, text))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use arctern::types::sampling::SamplingMessage;

    fn params() -> CreateMessageRequestParams {
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Hi")], 10)
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[tokio::test]
    async fn plain_text_becomes_a_text_result() {
        let r = run(&sh("cat >/dev/null; echo 'An old pond'"), &params())
            .await
            .unwrap();
        assert_eq!(r.content.first_text(), Some("An old pond"));
        assert_eq!(r.model, "sh");
    }

    #[tokio::test]
    async fn json_results_pass_through_and_the_request_arrives() {
        // Echo the request's first message back as the model's answer.
        let script = r#"read -r line; case "$line" in *'"method":"sampling/createMessage"'*'"text":"Hi"'*) echo '{"role":"assistant","content":{"type":"text","text":"seen"},"model":"m1"}';; *) echo "unexpected: $line";; esac"#;
        let r = run(&sh(script), &params()).await.unwrap();
        assert_eq!(r.model, "m1");
        assert_eq!(r.content.first_text(), Some("seen"));
    }

    #[tokio::test]
    async fn failures_are_reported() {
        assert!(
            run(&sh("exit 3"), &params())
                .await
                .unwrap_err()
                .contains("exited")
        );
        assert!(
            run(&sh("true"), &params())
                .await
                .unwrap_err()
                .contains("nothing")
        );
        assert!(run(&["/nonexistent/x".into()], &params()).await.is_err());
    }
}
