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
        let key = format!("{:?}", p.progress_token);
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let bar = bars
            .entry(key)
            .or_insert_with(|| self.multi.add(ProgressBar::new(SCALE as u64)));
        match p.total.filter(|t| *t > 0.0) {
            Some(total) => {
                bar.set_style(
                    ProgressStyle::with_template("[{bar:40}] {percent:>3}% {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("#>-"),
                );
                let fraction = (p.progress / total).clamp(0.0, 1.0);
                // In [0, SCALE] by the clamp above.
                bar.set_position((fraction * SCALE).round() as u64);
                bar.set_message(match &p.message {
                    Some(m) => m.clone(),
                    None => format!("{} of {}", p.progress, total),
                });
            }
            None => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(match &p.message {
                    Some(m) => format!("{m} ({})", p.progress),
                    None => p.progress.to_string(),
                });
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
