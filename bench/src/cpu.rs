//! CPU time of a process, read from `/proc`. On a shared machine a server pinned to a core
//! may still lose that core to other work; its own CPU time per call does not depend on that,
//! and it shows whether the server or the load generator was the bottleneck.

use std::time::Duration;

/// CPU time (user + system) `pid` has used so far, from the tick counts of
/// `/proc/<pid>/stat`, or `None` when the process is gone. The process-wide counts include
/// threads that have already exited (summing per-thread counters would lose them).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = stat_ticks(&text)?;
    // USER_HZ is 100 on every Linux configuration this runs on.
    Some(Duration::from_millis(ticks * 10))
}

/// `utime + stime` of a `/proc/<pid>/stat` line, in clock ticks. The command name (field 2)
/// may contain spaces and parentheses, so fields are counted after its closing parenthesis.
fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: state is field 3, utime field 14, stime field 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// CPU time the calling process has used so far (all threads).
pub fn own_cpu() -> Option<Duration> {
    process_cpu(std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_names() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 5 1000 200";
        assert_eq!(stat_ticks(stat), Some(280));
    }

    #[test]
    fn own_cpu_grows() {
        let before = own_cpu().unwrap();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(own_cpu().unwrap() >= before);
    }
}
