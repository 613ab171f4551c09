//! The kernel's log (`/dev/kmsg`), read for what it says of one process: whether the
//! kernel's OOM killer ended it. A process kiln did not start ends without telling kiln
//! why; the kernel logs the kills it makes.
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

/// The kernel log's line saying its OOM killer killed `pid` (`Out of memory: Killed
/// process PID (NAME) …`, or `Memory cgroup out of memory: …` under a cgroup's limit) at
/// `since_ns` (CLOCK_MONOTONIC) or later — an older one was another process that had the
/// same PID — the part after the record's header; `None` when the log has none (or cannot
/// be read: it takes root while `kernel.dmesg_restrict` is on).
pub fn oom_kill_of(pid: u32, since_ns: u64) -> Option<String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/kmsg")
        .ok()?;
    let needle = format!("Killed process {pid} (");
    let mut buf = vec![0u8; 16 * 1024];
    let mut found = None;
    // One record per read, oldest first, until none is left (EAGAIN); records overwritten
    // while reading (EPIPE) are skipped.
    for _ in 0..1_000_000 {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                // "PRIORITY,SEQUENCE,MICROSECONDS,FLAGS;TEXT": the time is the kernel's
                // monotonic clock, in µs.
                let Some((head, text)) = rec.split_once(';') else {
                    continue;
                };
                let at_us: u64 = head
                    .split(',')
                    .nth(2)
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                let line = text.lines().next().unwrap_or("");
                if at_us >= since_ns / 1000 && line.contains(&needle) {
                    found = Some(line.trim().to_string());
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_never_killed_is_not_found() {
        // PID 4194303 is above any PID the kernel gives by default.
        assert_eq!(super::oom_kill_of(4_194_303, 0), None);
    }
}
