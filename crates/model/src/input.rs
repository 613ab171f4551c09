//! Inputs held in memory, within a limit.
//!
//! Some inputs cannot be streamed: a pprof file is one protobuf message, a stored blob is
//! one zstd frame, a server's answer is decoded whole. Others are compressed, and a
//! megabyte of gzip can inflate to a gigabyte of zeros. Whatever kiln reads whole or
//! inflates goes through one [`Bounded`] reader, so that no input — a file, a stored
//! run, a server's answer — can make kiln allocate more than its limit for it:
//! past the limit the reader fails with [`TooLarge`], which names the input ("'bomb.gz':
//! the inflated data exceeds the input limit of 1 GiB (--max-input raises it)").
//!
//! Sizes and counts read from a file are checked against what is really there before
//! anything is allocated for them, and buffers grow with [`Vec::try_reserve`]
//! ([`read_to_end`], [`vec_with_capacity`]): an allocation that cannot be made is an
//! error naming the input, never an abort.
//!
//! The limit travels with what reads: the formats' `ReadOptions`, a store (set when it is
//! opened), an agent's link. The `kiln` binary gives each the value of
//! `--max-input` ([`DEFAULT_LIMIT`] unless given); two readers in one process may hold
//! different limits.
use std::io::{self, Read};

/// The most frames one stack of an input may have (1,048,576). Deeper stacks are skipped,
/// each counted with its reason: a stack is a path in a tree that every frame of it adds a
/// node to, so one line of 52 million frames would cost gigabytes, and no profiler records
/// stacks that deep (perf: 127 frames by default, at most 65,535; Go: 100–128;
/// async-profiler: 2,048); deep recursion written out by a tool stays well below.
pub const MAX_STACK_DEPTH: usize = 1 << 20;

/// The most distinct names (frame names, a pprof's strings) one input may have; past it,
/// reading stops with an error. Tens of thousands is usual and a few million is a very
/// large profile.
pub const MAX_NAMES: usize = 1 << 24;

/// The default limit, the most bytes one input may inflate to or be read whole as when
/// `--max-input` is not given: 1 GiB.
pub const DEFAULT_LIMIT: u64 = 1 << 30;

/// Parses a size as `--max-input` takes it: bytes, or a number with K, M, G or T (powers
/// of 1024; `KiB`, `MB`… read the same).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let expected = || {
        format!("'{s}': expected a size such as 1G, 512M or 1048576 (a whole number, then K, M, G or T)")
    };
    let n: u64 = num.parse().map_err(|_| expected())?;
    if unit.starts_with(['.', ',']) {
        return Err(expected());
    }
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("'{s}': unknown unit (use K, M, G or T)")),
    };
    let v = n
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}': too large"))?;
    if v == 0 {
        return Err(format!("'{s}': the limit must be at least one byte"));
    }
    Ok(v)
}

/// A size for messages: `1 GiB`, `64 MiB`, `1000 bytes`.
pub fn format_size(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    if n >= 1 << 20 {
        return format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64);
    }
    format!("{n} bytes")
}

/// An input larger than the limit.
#[derive(Debug, Clone, thiserror::Error)]
#[error("'{name}': {what} exceeds the input limit of {} (--max-input raises it)", format_size(*limit))]
pub struct TooLarge {
    /// The input: a file, a URL, a stored blob.
    pub name: String,
    /// What grew too large: `the inflated data`, `the answer`.
    pub what: &'static str,
    /// The limit, bytes.
    pub limit: u64,
}

impl From<TooLarge> for io::Error {
    fn from(e: TooLarge) -> io::Error {
        io::Error::new(io::ErrorKind::FileTooLarge, e)
    }
}

/// The [`TooLarge`] an I/O error carries, if it is one.
pub fn too_large(e: &io::Error) -> Option<&TooLarge> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
}

/// An allocation that could not be made for an input.
#[derive(Debug, Clone, thiserror::Error)]
#[error("'{name}': cannot allocate {} for {what}", format_size(*bytes))]
pub struct NoMemory {
    /// The input.
    pub name: String,
    /// What the memory was for.
    pub what: &'static str,
    /// How much was asked for.
    pub bytes: u64,
}

impl From<NoMemory> for io::Error {
    fn from(e: NoMemory) -> io::Error {
        io::Error::new(io::ErrorKind::OutOfMemory, e)
    }
}

/// A reader that gives at most `limit` bytes of `inner` and fails with [`TooLarge`] when
/// there are more.
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
    name: String,
    what: &'static str,
}

impl<R: Read> Bounded<R> {
    /// `inner` read up to `limit` bytes; `name` and `what` go into the error.
    pub fn new(inner: R, limit: u64, name: impl Into<String>, what: &'static str) -> Self {
        Bounded {
            inner,
            left: limit,
            limit,
            name: name.into(),
            what,
        }
    }

    /// Counts `n` bytes of the input as read already (a head read before this reader
    /// took over).
    pub fn already_read(mut self, n: u64) -> Self {
        self.left = self.left.saturating_sub(n);
        self
    }

    /// The error for going past the limit.
    pub fn too_large(&self) -> TooLarge {
        TooLarge {
            name: self.name.clone(),
            what: self.what,
            limit: self.limit,
        }
    }

    /// The reader inside.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the limit: one more byte means the input is larger.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(self.too_large().into()),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Reads `r` to its end into `out`, growing `out` with [`Vec::try_reserve`]: memory that
/// cannot be had is an error naming `name`, not an abort. Bound `r` ([`Bounded`]) for a
/// limit.
pub fn read_to_end(r: &mut dyn Read, out: &mut Vec<u8>, name: &str) -> io::Result<usize> {
    let start = out.len();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(out.len() - start),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if out.try_reserve(n).is_err() {
            return Err(NoMemory {
                name: name.to_string(),
                what: "the input",
                bytes: (out.len() + n) as u64,
            }
            .into());
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// A vector with room for `n` items, or an error naming `name` when the memory cannot be
/// had (a count read from a file that passed its checks can still be large).
pub(crate) fn vec_with_capacity<T>(
    n: usize,
    name: &str,
    what: &'static str,
) -> Result<Vec<T>, NoMemory> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| NoMemory {
        name: name.to_string(),
        what,
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size(" 2 k").unwrap(), 2048);
        assert!(parse_size("0").is_err());
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("1Q").is_err());
        assert_eq!(format_size(1 << 30), "1 GiB");
        assert_eq!(format_size(64 << 20), "64 MiB");
        assert_eq!(format_size(1000), "1000 bytes");
    }

    #[test]
    fn the_reader_stops_at_the_limit_and_says_so() {
        let data = [7u8; 100];
        let mut out = Vec::new();
        let mut r = Bounded::new(&data[..], 100, "exact", "the data");
        assert_eq!(read_to_end(&mut r, &mut out, "exact").unwrap(), 100);
        let mut r = Bounded::new(&data[..], 99, "big.gz", "the inflated data");
        let e = read_to_end(&mut r, &mut Vec::new(), "big.gz").unwrap_err();
        let t = too_large(&e).expect("a TooLarge");
        assert_eq!(t.limit, 99);
        assert_eq!(
            e.to_string(),
            "'big.gz': the inflated data exceeds the input limit of 99 bytes (--max-input raises it)"
        );
    }

    #[test]
    fn impossible_allocations_are_errors() {
        let e = vec_with_capacity::<u64>(usize::MAX / 4, "x.kiln", "samples").unwrap_err();
        assert!(
            e.to_string().starts_with("'x.kiln': cannot allocate"),
            "{e}"
        );
    }
}
