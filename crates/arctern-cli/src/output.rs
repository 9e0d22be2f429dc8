//! Printing results: text for people (text blocks as they are, structured content as pretty
//! JSON, images and audio saved to files, resources summarized), or one JSON document with
//! `--output json`.

use std::io::Write;
use std::path::{Path, PathBuf};

use arctern::types::content::{ContentBlock, ResourceContents};
use arctern::types::tools::CallToolResult;
use base64::Engine;
use serde::Serialize;
use serde_json::Value;

use crate::exit::{Exit, Failure};

/// The output format (`--output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Human-readable text.
    #[default]
    Text,
    /// One JSON document on stdout: `{"result": …}` or `{"error": …}`.
    Json,
}

/// A file written from a result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFile {
    /// The index of the content block (or resource) it came from.
    pub index: usize,
    /// Where it was written.
    pub path: PathBuf,
    /// Its MIME type.
    pub mime_type: String,
    /// Its size in bytes.
    pub bytes: usize,
}

/// Whether what this program writes on stderr may carry colour and other styles (ANSI
/// escapes): only on a terminal, and never when `NO_COLOR` is set to something
/// (<https://no-color.org>). Logs, bold text in forms and the forms themselves follow it.
pub fn stderr_styled() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Writes a line to stdout (or stderr), terminal-safe (server text passes through here); a
/// closed pipe is not an error worth a panic.
pub fn line(to_stderr: bool, text: &str) {
    raw_line(to_stderr, &crate::sanitize::text(text));
}

fn raw_line(to_stderr: bool, text: &str) {
    if to_stderr {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    } else {
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
}

/// Prints a JSON document on stdout. The document is exact (it parses back to the same
/// values) and terminal-safe: serde_json escapes C0 controls, and DEL, C1 controls and bidi
/// controls, which it leaves raw, are escaped here (they can only occur inside strings).
pub fn json(value: &Value) {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    raw_line(false, &crate::sanitize::json_escapes(&text));
}

/// The file extension for a MIME type.
pub fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "audio/wav" | "audio/wave" | "audio/x-wav" | "audio/vnd.wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/opus" => "opus",
        "audio/flac" | "audio/x-flac" => "flac",
        "audio/aac" => "aac",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
        "audio/webm" => "weba",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/zip" => "zip",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/csv" => "csv",
        _ => "bin",
    }
}

/// A file name stem from a tool name or URI: letters, digits, `-`, `_` and `.` kept.
fn stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_matches(['.', '_']).to_owned();
    if s.is_empty() { "result".into() } else { s }
}

/// The most files one command saves: a result may hold any number of media blocks.
pub const MAX_SAVED_FILES: usize = 100;

/// Files saved so far by this command.
static SAVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Creates `<dir>/<stem>-<index>.<ext>`, or `…-<index>-1.<ext>` and so on when the name is
/// taken: a new file every time (never an existing file, never through a symlink).
fn create_new(
    dir: &Path,
    stem: &str,
    index: usize,
    ext: &str,
) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut last = None;
    for n in 0..100u32 {
        let name = match n {
            0 => format!("{stem}-{index}.{ext}"),
            n => format!("{stem}-{index}-{n}.{ext}"),
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free file name")))
}

/// Decodes base64 data and writes it to a new file `<dir>/<stem>-<index>.<ext>` (with `-1`,
/// `-2`… added when that name is taken; existing files and symlinks are never written
/// through). At most [`MAX_SAVED_FILES`] per command.
pub fn save(
    dir: &Path,
    name: &str,
    index: usize,
    mime: &str,
    base64_data: &str,
) -> Result<SavedFile, Failure> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64_data.trim())
        .map_err(|e| {
            Failure::new(
                Exit::Connection,
                format!("content block {index} ({mime}) is not valid base64: {e}"),
            )
        })?;
    use std::sync::atomic::Ordering;
    if SAVED.fetch_add(1, Ordering::SeqCst) >= MAX_SAVED_FILES {
        return Err(Failure::new(
            Exit::Local,
            format!("the result holds more than {MAX_SAVED_FILES} files to save; not saving more"),
        ));
    }
    let (path, mut file) = create_new(dir, &stem(name), index, extension(mime)).map_err(|e| {
        Failure::new(
            Exit::Local,
            format!(
                "could not save content block {index} in {}: {e}",
                dir.display()
            ),
        )
    })?;
    file.write_all(&bytes).map_err(|e| {
        Failure::new(
            Exit::Local,
            format!("could not save {}: {e}", path.display()),
        )
    })?;
    Ok(SavedFile {
        index,
        path,
        mime_type: mime.to_owned(),
        bytes: bytes.len(),
    })
}

fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Content blocks for people: returns the lines to print and saves media files (named from
/// `name` and the block's index).
pub fn render_blocks(
    blocks: &[ContentBlock],
    name: &str,
    dir: &Path,
    skip_json_equal_to: Option<&Value>,
) -> Result<(Vec<String>, Vec<SavedFile>), Failure> {
    let mut lines = Vec::new();
    let mut saved = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let (more, file) = render_block(block, index, name, dir, skip_json_equal_to)?;
        lines.extend(more);
        saved.extend(file);
    }
    Ok((lines, saved))
}

/// One content block for people (see [`render_blocks`]).
pub fn render_block(
    block: &ContentBlock,
    index: usize,
    name: &str,
    dir: &Path,
    skip_json_equal_to: Option<&Value>,
) -> Result<(Vec<String>, Option<SavedFile>), Failure> {
    let media = |kind: &str, mime: &str, data: &str| {
        save(dir, name, index, mime, data).map(|file| {
            let text = format!(
                "[{kind} {mime}, {}] saved to {}",
                size(file.bytes),
                file.path.display()
            );
            (vec![text], Some(file))
        })
    };
    Ok(match block {
        ContentBlock::Text(t) => {
            // Servers often repeat structured content as text; it is printed once.
            let duplicate = skip_json_equal_to
                .is_some_and(|s| serde_json::from_str::<Value>(&t.text).is_ok_and(|v| &v == s));
            if duplicate {
                (Vec::new(), None)
            } else {
                (vec![t.text.clone()], None)
            }
        }
        ContentBlock::Image(i) => media("image", &i.mime_type, &i.data)?,
        ContentBlock::Audio(a) => media("audio", &a.mime_type, &a.data)?,
        ContentBlock::ResourceLink(l) => {
            let mut text = format!(
                "[resource link] {} <{}>",
                l.title.as_deref().unwrap_or(&l.name),
                l.uri
            );
            if let Some(m) = &l.mime_type {
                text.push_str(&format!(" ({m})"));
            }
            if let Some(d) = &l.description {
                text.push_str(&format!(": {d}"));
            }
            (vec![text], None)
        }
        ContentBlock::Resource(r) => (resource_lines(&r.resource), None),
        // A newer revision's kind of block: named, not interpreted (`--output json` shows
        // it whole).
        other => (vec![format!("[{} content]", other.kind())], None),
    })
}

/// An embedded resource, summarized: its URI and type, then its text (binary data is only
/// measured).
pub fn resource_lines(contents: &ResourceContents) -> Vec<String> {
    let mime = contents
        .mime_type()
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    match contents {
        ResourceContents::Text(t) => vec![format!("[resource {}{mime}]", t.uri), t.text.clone()],
        ResourceContents::Blob(b) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.blob.trim())
                .map(|d| d.len())
                .unwrap_or(0);
            vec![format!(
                "[resource {}{mime}, {} of binary data]",
                b.uri,
                size(bytes)
            )]
        }
        other => vec![format!("[resource {}{mime}]", other.uri())],
    }
}

/// Prints a tool's result and says how the command ends.
pub fn call_result(
    tool: &str,
    result: &CallToolResult,
    dir: &Path,
    format: Format,
) -> Result<Exit, Failure> {
    let failed = result.is_error == Some(true);
    let structured = result.structured_content.as_ref();
    let (lines, saved) = render_blocks(&result.content, tool, dir, structured)?;
    match format {
        Format::Json => json(&serde_json::json!({
            "result": result,
            "savedFiles": saved,
        })),
        Format::Text => {
            for l in &lines {
                line(failed, l);
            }
            if let Some(s) = structured {
                let pretty = serde_json::to_string_pretty(s).unwrap_or_else(|_| s.to_string());
                line(failed, &pretty);
            }
            if failed {
                line(
                    true,
                    &format!("arctern: the tool {tool:?} reported an error"),
                );
            }
        }
    }
    Ok(if failed { Exit::ToolError } else { Exit::Ok })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arctern::types::content::TextResourceContents;
    use serde_json::json;

    #[cfg(unix)]
    #[test]
    fn saving_never_overwrites_nor_follows_a_symlink() {
        let dir = std::env::temp_dir().join(format!("arctern-save-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("t-0.png")).unwrap();
        std::fs::write(dir.join("t-0-1.png"), "older").unwrap();
        let saved = save(&dir, "t", 0, "image/png", "aGVsbG8=").unwrap();
        assert_eq!(saved.path, dir.join("t-0-2.png"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert_eq!(
            std::fs::read_to_string(dir.join("t-0-1.png")).unwrap(),
            "older"
        );
        assert_eq!(std::fs::read(&saved.path).unwrap(), b"hello");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn extensions_and_names() {
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("IMAGE/JPEG"), "jpg");
        assert_eq!(extension("audio/wav; codecs=1"), "wav");
        assert_eq!(extension("application/x-unknown"), "bin");
        assert_eq!(stem("test_image_content"), "test_image_content");
        assert_eq!(stem("../etc/passwd"), "etc_passwd");
        assert_eq!(stem("config://prod"), "config___prod");
        assert_eq!(stem("///"), "result");
    }

    #[test]
    fn blocks_render_and_media_is_saved() {
        let dir = std::env::temp_dir().join(format!("arctern-cli-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let blocks = vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::text("{\"a\":1}"),
            ContentBlock::resource(TextResourceContents::new("test://r", "body")),
            ContentBlock::resource_link("file:///x.txt", "x.txt"),
        ];
        let (lines, saved) = render_blocks(&blocks, "draw", &dir, Some(&json!({"a": 1}))).unwrap();
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].path, dir.join("draw-1.png"));
        assert_eq!(std::fs::read(&saved[0].path).unwrap(), b"hi");
        assert_eq!(lines[0], "hello");
        assert!(lines[1].starts_with("[image image/png, 2 bytes] saved to "));
        assert_eq!(lines[2], "[resource test://r]");
        assert_eq!(lines[3], "body");
        assert_eq!(lines[4], "[resource link] x.txt <file:///x.txt>");
        let bad = vec![ContentBlock::image("***", "image/png")];
        assert!(render_blocks(&bad, "draw", &dir, None).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
