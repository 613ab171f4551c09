//! The clock every kiln timestamp is on: CLOCK_MONOTONIC, in nanoseconds.
//!
//! perf samples (`use_clockid`), eBPF programs (`bpf_ktime_get_ns`), the load engine's
//! per-second series and `kiln run`'s resource samples all use it, so a window of a run
//! selects the same seconds in every one of them.

/// CLOCK_MONOTONIC now, in nanoseconds: the one function every part of kiln reads it with.
///
/// `clock_gettime` fails only for a clock that does not exist or a pointer it cannot write
/// (EINVAL, EFAULT); CLOCK_MONOTONIC exists on every Linux and the timespec is ours, so
/// it cannot fail here (checked in debug builds).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time now, in milliseconds since the Unix epoch.
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A Unix time in ms as UTC `YYYY-MM-DD HH:MM:SS` (days to a civil date by H. Hinnant's
/// `civil_from_days`): how runs are dated in listings and reports.
pub fn utc_date_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_utc() {
        assert_eq!(super::utc_date_time(0), "1970-01-01 00:00:00");
        assert_eq!(
            super::utc_date_time(1_795_449_600_000),
            "2026-11-23 16:00:00"
        );
        assert_eq!(super::utc_date_time(-1), "1969-12-31 23:59:59");
        assert_eq!(super::utc_date_time(951_782_400_000), "2000-02-29 00:00:00");
    }
}
