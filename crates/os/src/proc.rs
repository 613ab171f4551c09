//! `/proc` read as the kernel writes it: bytes.
//!
//! A process or thread names itself with any bytes (`prctl(PR_SET_NAME)`), and the kernel
//! cuts `comm` to 15 bytes wherever that falls — inside a multi-byte character when the
//! name is `aсервер-приложение`. `/proc/PID/stat` and `/proc/PID/status` carry that name,
//! so reading them as UTF-8 text fails for such a process and everything that reads them
//! that way loses it: it "does not exist", its CPU is not counted. Here every `/proc` file
//! is read as bytes; the numbers are parsed from the bytes, and a name stays bytes until
//! it is shown (through `kiln_model::text`, which escapes what is not UTF-8).
//!
//! ```
//! let me = kiln_os::proc::stat(std::process::id()).expect("this process exists");
//! assert!(!me.comm.is_empty());
//! assert!(kiln_os::proc::alive(std::process::id()));
//! ```
use std::io;
use std::path::Path;

/// A `/proc` (or `/sys`) file read whole.
pub fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// A `/proc` file whose contents are numbers and ASCII keys (`/proc/stat`, `meminfo`,
/// `/proc/sys/…`) as text, any byte that is not UTF-8 replaced: a path or name inside
/// (a mount point, a cgroup) never makes the whole file unreadable. `None` when it cannot
/// be read.
pub fn read_text(path: impl AsRef<Path>) -> Option<String> {
    let b = std::fs::read(path).ok()?;
    Some(match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// One line of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`), parsed from its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// The command name (field 2) as the kernel keeps it: up to 15 bytes, not
    /// necessarily UTF-8, without its parentheses.
    pub comm: Vec<u8>,
    /// The state (field 3): `R`, `S`, `D`, `Z`, `X`…
    pub state: u8,
    /// Fields 4 onwards, as numbers (a field that is not one is 0).
    rest: Vec<u64>,
}

impl Stat {
    /// Parses the bytes of a `stat` file: the name is everything between the first `(`
    /// and the last `)` (a name may hold spaces and parentheses).
    pub fn parse(b: &[u8]) -> Option<Stat> {
        let open = b.iter().position(|&c| c == b'(')?;
        let close = b.iter().rposition(|&c| c == b')')?;
        if close < open {
            return None;
        }
        let comm = b[open + 1..close].to_vec();
        let mut fields = b[close + 1..]
            .split(|c| c.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let state = *fields.next()?.first()?;
        let rest = fields
            .map(|f| {
                std::str::from_utf8(f)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .map_or(0, |v| v as u64)
            })
            .collect();
        Some(Stat { comm, state, rest })
    }

    /// Field `n` as `proc(5)` numbers them (1 is the PID, 14 `utime`, 15 `stime`, 20
    /// `num_threads`, 22 `starttime`); `None` for fields 1 to 3 and past the end.
    pub fn field(&self, n: usize) -> Option<u64> {
        n.checked_sub(4).and_then(|i| self.rest.get(i).copied())
    }

    /// Whether the process is a zombie or dead (it exited and waits to be reaped).
    pub fn is_gone(&self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

/// `/proc/PID/stat`; `None` when the process does not exist (or cannot be read).
pub fn stat(pid: u32) -> Option<Stat> {
    Stat::parse(&read(format!("/proc/{pid}/stat")).ok()?)
}

/// `/proc/PID/task/TID/stat`: one thread's.
pub fn task_stat(pid: u32, tid: u32) -> Option<Stat> {
    Stat::parse(&read(format!("/proc/{pid}/task/{tid}/stat")).ok()?)
}

/// Whether process `pid` exists and has not exited (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|s| !s.is_gone())
}

/// The command name of process `pid` (`/proc/PID/comm` without its newline), as bytes.
pub fn comm(pid: u32) -> Option<Vec<u8>> {
    let mut b = read(format!("/proc/{pid}/comm")).ok()?;
    if b.last() == Some(&b'\n') {
        b.pop();
    }
    Some(b)
}

/// The value of `key` in a `status`-like file (`Key:\tvalue` lines), trimmed; `None` when
/// there is no such line.
pub fn status_value<'a>(text: &'a [u8], key: &str) -> Option<&'a [u8]> {
    text.split(|&c| c == b'\n').find_map(|line| {
        let rest = line.strip_prefix(key.as_bytes())?.strip_prefix(b":")?;
        Some(rest.trim_ascii())
    })
}

/// The number `key` holds in a `status`-like file (the first word of its value:
/// `VmRSS:  1234 kB` → 1234).
pub fn status_number(text: &[u8], key: &str) -> Option<u64> {
    let v = status_value(text, key)?;
    let word = v.split(|c| c.is_ascii_whitespace()).next()?;
    std::str::from_utf8(word).ok()?.parse().ok()
}

/// Process and thread ids in a `/proc` directory (`/proc`, `/proc/PID/task`): the names
/// that are numbers.
pub fn ids(dir: impl AsRef<Path>) -> io::Result<Vec<u32>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_utf8_or_hold_parentheses_parse() {
        let line = b"4242 (a\xd1\x81\xd0\xb5\xd1\x80\xd0\xb2\xd0\xb5\xd1\x80-\xd0) R 1 4242 4242 0 -1 4194304 90 0 0 0 57 3 0 0 20 0 1 0 123456 1000 100";
        let s = Stat::parse(line).unwrap();
        assert_eq!(
            s.comm,
            b"a\xd1\x81\xd0\xb5\xd1\x80\xd0\xb2\xd0\xb5\xd1\x80-\xd0"
        );
        assert_eq!(s.state, b'R');
        assert_eq!(s.field(4), Some(1));
        assert_eq!(s.field(14), Some(57));
        assert_eq!(s.field(15), Some(3));
        assert_eq!(s.field(20), Some(1));
        assert_eq!(s.field(22), Some(123456));
        assert_eq!(s.field(3), None);
        assert_eq!(s.field(99), None);
        assert!(!s.is_gone());
        let s = Stat::parse(b"7 (x) (y)) Z 1 2").unwrap();
        assert_eq!(s.comm, b"x) (y)");
        assert!(s.is_gone());
        assert_eq!(s.field(5), Some(2));
        assert!(Stat::parse(b"7 x R").is_none());
        assert!(Stat::parse(b"7 )x( R").is_none());
        assert!(Stat::parse(b"7 (x)").is_none());
    }

    #[test]
    fn status_values_are_found_in_bytes() {
        let status = b"Name:\tspin\xff\nUmask:\t0022\nTgid:\t77\nVmRSS:\t  1234 kB\n";
        assert_eq!(status_value(status, "Name"), Some(&b"spin\xff"[..]));
        assert_eq!(status_number(status, "Tgid"), Some(77));
        assert_eq!(status_number(status, "VmRSS"), Some(1234));
        assert_eq!(status_number(status, "Name"), None);
        assert_eq!(status_value(status, "Tgi"), None);
    }

    #[test]
    fn this_process_reads() {
        let me = std::process::id();
        assert!(alive(me));
        let s = stat(me).unwrap();
        assert_eq!(Some(s.comm.clone()), comm(me));
        assert_eq!(task_stat(me, me).map(|t| t.comm), Some(s.comm));
        assert!(ids("/proc").unwrap().contains(&me));
        assert!(ids(format!("/proc/{me}/task")).unwrap().contains(&me));
        let text = read(format!("/proc/{me}/status")).unwrap();
        assert_eq!(status_number(&text, "Tgid"), Some(u64::from(me)));
        assert!(read_text("/proc/stat").unwrap().starts_with("cpu "));
        assert!(!alive(u32::MAX));
    }
}
