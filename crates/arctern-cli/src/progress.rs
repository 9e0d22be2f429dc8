//! Progress bars for `notifications/progress`, and the lines printed on stderr around them
//! (server log messages, notes). Bars draw only when stderr is a terminal.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use arctern::types::logging::LoggingMessageNotificationParams;
use arctern::types::progress::ProgressNotificationParams;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Positions are kept in thousandths of the total, so that fractional progress draws too.
const SCALE: f64 = 1000.0;

/// The most bars on screen at once: one per call (a command makes one call at a time, and
/// the client passes on only its current request's token); a new token (the next round)
/// replaces the bar.
const MAX_BARS: usize = 1;

/// The most server log lines one command prints; the rest are counted, not printed.
pub const MAX_LOG_LINES: usize = 1000;

/// The progress bar of one command, and the lines printed around it.
pub struct Progress {
    multi: MultiProgress,
    bars: Mutex<VecDeque<(String, ProgressBar)>>,
    logs: AtomicUsize,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Bars on stderr.
    pub fn new() -> Self {
        Progress {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bars: Mutex::new(VecDeque::new()),
            logs: AtomicUsize::new(0),
        }
    }

    /// Shows one progress notification.
    pub fn update(&self, p: &ProgressNotificationParams) {
        let message = match (&p.message, p.total.filter(|t| *t > 0.0)) {
            (Some(m), Some(_)) => m.clone(),
            (None, Some(total)) => format!("{} of {}", p.progress, total),
            (Some(m), None) => format!("{m} ({})", p.progress),
            (None, None) => p.progress.to_string(),
        };
        self.draw(
            &format!("{:?}", p.progress_token),
            Some(p.progress),
            p.total,
            message,
        );
    }

    /// Shows a task's state: its status message as a bar when it reads `[done/total] text`
    /// (what arctern servers report), else as a spinner with the status.
    pub fn task(&self, id: &str, status: &str, message: Option<&str>) {
        let key = format!("task:{id}");
        match message.and_then(parse_task_progress) {
            Some((done, total, text)) => self.draw(&key, Some(done), total, text.to_owned()),
            None => self.draw(
                &key,
                None,
                None,
                match message {
                    Some(m) => format!("{status}: {m}"),
                    None => status.to_owned(),
                },
            ),
        }
    }

    fn draw(&self, key: &str, progress: Option<f64>, total: Option<f64>, message: String) {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let at = match bars.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                if bars.len() >= MAX_BARS
                    && let Some((_, oldest)) = bars.pop_front()
                {
                    oldest.finish_and_clear();
                    self.multi.remove(&oldest);
                }
                bars.push_back((
                    key.to_owned(),
                    self.multi.add(ProgressBar::new(SCALE as u64)),
                ));
                bars.len() - 1
            }
        };
        let bar = &bars[at].1;
        // Server-provided text: control and escape sequences neutralized.
        let message = crate::sanitize::line(&message).into_owned();
        match (progress, total.filter(|t| *t > 0.0)) {
            (Some(progress), Some(total)) => {
                bar.set_style(
                    ProgressStyle::with_template("[{bar:40}] {percent:>3}% {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("#>-"),
                );
                let fraction = (progress / total).clamp(0.0, 1.0);
                // In [0, SCALE] by the clamp above.
                bar.set_position((fraction * SCALE).round() as u64);
                bar.set_message(message);
            }
            _ => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(message);
                bar.tick();
            }
        }
    }

    /// Finishes every bar, leaving its last state on screen.
    pub fn finish(&self) {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (_, bar) in bars.drain(..) {
            bar.finish();
        }
    }

    /// Removes every bar from the screen (before a form takes the terminal).
    pub fn clear(&self) {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (_, bar) in bars.drain(..) {
            bar.finish_and_clear();
        }
    }

    /// Prints a line on stderr without tearing the bars, terminal-safe.
    pub fn println(&self, line: &str) {
        let line = crate::sanitize::text(line);
        self.multi.suspend(|| eprintln!("{line}"));
    }

    /// Prints a server log message on stderr: `[level] logger: message`. Beyond
    /// [`MAX_LOG_LINES`], one line says that the rest are not printed.
    pub fn log(&self, m: &LoggingMessageNotificationParams) {
        let n = self.logs.fetch_add(1, Ordering::Relaxed);
        if n < MAX_LOG_LINES {
            self.println(&log_line(m));
        } else if n == MAX_LOG_LINES {
            self.println(&format!(
                "arctern: the server sent more than {MAX_LOG_LINES} log messages; not printing \
                 the rest"
            ));
        }
    }
}

/// `[done/total] text` or `[done] text` (a task's status message) as its parts.
fn parse_task_progress(message: &str) -> Option<(f64, Option<f64>, &str)> {
    let rest = message.strip_prefix('[')?;
    let (counts, text) = rest.split_once(']')?;
    let (done, total) = match counts.split_once('/') {
        Some((done, total)) => (done.trim().parse().ok()?, Some(total.trim().parse().ok()?)),
        None => (counts.trim().parse().ok()?, None),
    };
    Some((done, total, text.trim_start()))
}

/// A log message as one line.
pub fn log_line(m: &LoggingMessageNotificationParams) -> String {
    let text = match &m.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match &m.logger {
        Some(logger) => format!("[{}] {}: {text}", m.level, crate::sanitize::line(logger)),
        None => format!("[{}] {text}", m.level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn log_lines() {
        let m: LoggingMessageNotificationParams =
            serde_json::from_value(json!({"level": "info", "logger": "db", "data": "ready"}))
                .unwrap();
        assert_eq!(log_line(&m), "[info] db: ready");
        let m: LoggingMessageNotificationParams =
            serde_json::from_value(json!({"level": "warning", "data": {"n": 1}})).unwrap();
        assert_eq!(log_line(&m), "[warning] {\"n\":1}");
    }

    #[test]
    fn a_flood_of_tokens_keeps_a_few_bars() {
        let p = Progress::new();
        for token in 0..1000 {
            let n: ProgressNotificationParams = serde_json::from_value(json!({
                "progressToken": token, "progress": 1, "total": 2,
                "message": "\u{1b}]0;pwned\u{7}"
            }))
            .unwrap();
            p.update(&n);
        }
        assert_eq!(p.bars.lock().unwrap().len(), MAX_BARS);
        p.finish();
    }

    #[test]
    fn task_status_messages_with_counts() {
        assert_eq!(
            parse_task_progress("[2/4] testing"),
            Some((2.0, Some(4.0), "testing"))
        );
        assert_eq!(parse_task_progress("[3] more"), Some((3.0, None, "more")));
        assert_eq!(parse_task_progress("running"), None);
        assert_eq!(parse_task_progress("[a/b] x"), None);
        let p = Progress::new();
        p.task("t1", "working", Some("[1/4] building"));
        p.task("t1", "input_required", None);
        p.finish();
    }

    #[test]
    fn updates_without_a_terminal_do_not_fail() {
        let p = Progress::new();
        for (progress, total) in [(1.0, Some(4.0)), (2.5, Some(4.0)), (7.0, None)] {
            let n: ProgressNotificationParams = serde_json::from_value(json!({
                "progressToken": 1, "progress": progress, "total": total
            }))
            .unwrap();
            p.update(&n);
        }
        p.clear();
        p.finish();
    }
}
