//! Executable address ranges of a process, from `/proc/PID/maps`.
//!
//! The kernel side hashes only stack words that point into these ranges (see
//! `caller_hash` in `offcpu.bpf.c`), so the table must be small and sorted:
//! at most [`MAX_RANGES`] entries, searched by binary search in eBPF.

use std::path::PathBuf;

use crate::BpfError;

/// Capacity of the kernel-side table (`MAX_RANGES` in offcpu.bpf.c).
pub(crate) const MAX_RANGES: usize = 64;

/// Parses the executable mappings out of the text of a `/proc/PID/maps` file.
///
/// Returns sorted, merged `(start, end)` pairs. Lines that do not parse are
/// skipped: the file comes from the kernel, and a partial table only makes the
/// caller hash coarser, never wrong.
pub(crate) fn exec_ranges(maps: &str) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        // [vsyscall] lives at the top of the address space and is never a return address.
        if lo >= 0xffff_8000_0000_0000 || hi <= lo {
            continue;
        }
        out.push((lo, hi));
    }
    out.sort_unstable();
    fit(&mut out, MAX_RANGES);
    out
}

/// Merges touching ranges, then closes the smallest gaps until at most `cap` remain.
///
/// Closing a gap over-approximates (a data word inside the gap may then count as
/// code), which costs precision, not correctness.
fn fit(ranges: &mut Vec<(u64, u64)>, cap: usize) {
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(lo, hi) in ranges.iter() {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    while merged.len() > cap {
        let Some(i) = (0..merged.len() - 1).min_by_key(|&i| merged[i + 1].0 - merged[i].1) else {
            break;
        };
        merged[i].1 = merged[i + 1].1;
        merged.remove(i + 1);
    }
    *ranges = merged;
}

/// Reads the executable ranges of process `tgid`.
pub(crate) fn read_exec_ranges(tgid: u32) -> Result<Vec<(u64, u64)>, BpfError> {
    let path = PathBuf::from(format!("/proc/{tgid}/maps"));
    // Bytes: a mapped file's path need not be UTF-8 (only the ranges and permissions are
    // read here).
    let bytes = std::fs::read(&path).map_err(|source| BpfError::Io { path, source })?;
    Ok(exec_ranges(&String::from_utf8_lossy(&bytes)))
}

/// Resolves a pid to its process (thread group) id via `/proc/PID/status`.
pub(crate) fn tgid_of(pid: u32) -> Result<u32, BpfError> {
    let path = PathBuf::from(format!("/proc/{pid}/status"));
    // Bytes: the process's name on the first line need not be UTF-8.
    let text = match std::fs::read(&path) {
        Ok(t) => String::from_utf8_lossy(&t).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BpfError::NoSuchProcess { pid })
        }
        Err(source) => return Err(BpfError::Io { path, source }),
    };
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or(BpfError::Io {
            path,
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "no Tgid line"),
        })
}

/// Every process currently on the system (for system-wide recording).
pub(crate) fn all_tgids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_executable_mappings_sorted() {
        let maps = "\
7f0000001000-7f0000002000 r-xp 00001000 08:01 12 /usr/lib/libc.so.6
555555554000-555555556000 r--p 00000000 08:01 11 /bin/x
555555556000-555555558000 r-xp 00002000 08:01 11 /bin/x
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
garbage line
";
        assert_eq!(
            exec_ranges(maps),
            vec![
                (0x5555_5555_6000, 0x5555_5555_8000),
                (0x7f00_0000_1000, 0x7f00_0000_2000)
            ]
        );
    }

    #[test]
    fn fit_closes_smallest_gaps_first() {
        let mut r = vec![(0, 10), (10, 20), (30, 40), (100, 110), (111, 120)];
        fit(&mut r, 2);
        assert_eq!(r, vec![(0, 40), (100, 120)]);
    }
}
