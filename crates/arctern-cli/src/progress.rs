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
        let key = format!("{:?}", p.progress_token);
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        let at = match bars.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                if bars.len() >= MAX_BARS
                    && let Some((_, oldest)) = bars.pop_front()
                {
                    oldest.finish_and_clear();
                    self.multi.remove(&oldest);
                }
                bars.push_back((key, self.multi.add(ProgressBar::new(SCALE as u64))));
                bars.len() - 1
            }
        };
        let bar = &bars[at].1;
        let message = p
            .message
            .as_deref()
            .map(|m| crate::sanitize::line(m).into_owned());
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
                bar.set_message(match message {
                    Some(m) => m,
                    None => format!("{} of {}", p.progress, total),
                });
            }
            None => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(match message {
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
