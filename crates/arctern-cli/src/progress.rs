//! Progress bars for `notifications/progress`, and the lines printed on stderr around them
//! (server log messages, notes). Bars draw only when stderr is a terminal.

use std::collections::HashMap;
use std::sync::Mutex;

use arctern::types::logging::LoggingMessageNotificationParams;
use arctern::types::progress::ProgressNotificationParams;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// Positions are kept in thousandths of the total, so that fractional progress draws too.
const SCALE: f64 = 1000.0;

/// The bars of one command, one per progress token (each round of a call has its own).
pub struct Progress {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
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
            bars: Mutex::new(HashMap::new()),
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
        let bar = bars
            .entry(key.to_owned())
            .or_insert_with(|| self.multi.add(ProgressBar::new(SCALE as u64)));
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
        for (_, bar) in bars.drain() {
            bar.finish();
        }
    }

    /// Removes every bar from the screen (before a form takes the terminal).
    pub fn clear(&self) {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        for (_, bar) in bars.drain() {
            bar.finish_and_clear();
        }
    }

    /// Prints a line on stderr without tearing the bars.
    pub fn println(&self, line: &str) {
        self.multi.suspend(|| eprintln!("{line}"));
    }

    /// Prints a server log message on stderr: `[level] logger: message`.
    pub fn log(&self, m: &LoggingMessageNotificationParams) {
        self.println(&log_line(m));
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
        Some(logger) => format!("[{}] {logger}: {text}", m.level),
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
