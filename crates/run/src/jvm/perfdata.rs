//! A HotSpot JVM's own counters: the `hsperfdata` file it keeps in memory shared with a
//! file (`/tmp/hsperfdata_USER/PID`), which `jstat` reads. Its heap (each generation's
//! space in use and its most) and its collectors' time are the JVM's own account of its
//! memory, beside the process's resident memory, which grows as the heap is committed
//! whether the program keeps what it allocates or not.
//!
//! The file: a prologue (magic `0xcafec0c0` big-endian, then the byte order of the rest,
//! the version, where the entries start and how many there are), then entries (their
//! length, their name's and their data's offsets, their type: `J` a 64-bit integer).
//! Only version 2 and 64-bit scalars are read; anything else is skipped or said.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file's magic number, big-endian.
const MAGIC: u32 = 0xcafe_c0c0;
/// The prologue's size (version 2).
const PROLOGUE: usize = 32;
/// An entry's fixed part (version 2).
const ENTRY: usize = 20;

/// Why a counters file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PerfDataError {
    /// It could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// It is not what a JVM writes.
    #[error("{path}: byte {at}: {what}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Where.
        at: usize,
        /// What is wrong.
        what: String,
    },
}

/// The 64-bit integer counters of a counters file's bytes, by name; or where and what is
/// wrong with them.
pub fn parse(b: &[u8]) -> Result<HashMap<String, i64>, (usize, String)> {
    if b.len() < PROLOGUE {
        return Err((0, format!("{} bytes: too short for the prologue", b.len())));
    }
    let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if magic != MAGIC {
        return Err((0, format!("magic {magic:#x}, not {MAGIC:#x}")));
    }
    let little = match b[4] {
        0 => false,
        1 => true,
        o => return Err((4, format!("byte order {o}: neither 0 (big) nor 1 (little)"))),
    };
    if b[5] != 2 {
        return Err((5, format!("version {}.{}: only 2 is read", b[5], b[6])));
    }
    let i32_at = |at: usize| -> Option<i32> {
        let s: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            i32::from_le_bytes(s)
        } else {
            i32::from_be_bytes(s)
        })
    };
    let i64_at = |at: usize| -> Option<i64> {
        let s: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if little {
            i64::from_le_bytes(s)
        } else {
            i64::from_be_bytes(s)
        })
    };
    let offset = |at: usize| -> Result<usize, (usize, String)> {
        i32_at(at)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or((at, "a negative or missing offset".to_string()))
    };
    let (mut at, count) = (offset(24)?, offset(28)?);
    let mut out = HashMap::new();
    for _ in 0..count {
        if at.checked_add(ENTRY).is_none_or(|end| end > b.len()) {
            return Err((at, "an entry past the end of the file".into()));
        }
        let len = offset(at)?;
        if len < ENTRY || at + len > b.len() {
            return Err((at, format!("an entry of {len} bytes")));
        }
        let (name_at, vector, kind, data_at) = (
            offset(at + 4)?,
            offset(at + 8)?,
            b[at + 12],
            offset(at + 16)?,
        );
        let name = b
            .get(at + name_at..at + len)
            .and_then(|s| s.split(|&c| c == 0).next())
            .ok_or((at + 4, "a name outside its entry".to_string()))?;
        if kind == b'J' && vector == 0 {
            let v = (data_at + 8 <= len)
                .then(|| i64_at(at + data_at))
                .flatten()
                .ok_or((at + 16, "a value outside its entry".to_string()))?;
            out.insert(String::from_utf8_lossy(name).into_owned(), v);
        }
        at += len;
    }
    Ok(out)
}

/// Reads and parses the counters file at `path`.
pub fn read(path: &Path) -> Result<HashMap<String, i64>, PerfDataError> {
    let b = std::fs::read(path).map_err(|source| PerfDataError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&b).map_err(|(at, what)| PerfDataError::Malformed {
        path: path.to_path_buf(),
        at,
        what,
    })
}

/// The counters file of the JVM that is process `pid` (seen through its root, so a
/// container's too): `None` when there is none (not a JVM, or one run with
/// `-XX:-UsePerfData`).
pub fn path_of(pid: u32) -> Option<PathBuf> {
    let jvm = super::attach::Jvm::of(pid).ok()?;
    let tmp = PathBuf::from(format!("/proc/{pid}/root/tmp"));
    std::fs::read_dir(&tmp)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .map(|e| e.path().join(jvm.nspid.to_string()))
        .find(|p| p.is_file())
}

/// What a JVM's counters say of its heap and its collectors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Heap {
    /// Bytes in use in every generation's spaces.
    pub used: f64,
    /// Bytes in use in the old generation (what survived the young collections).
    pub old_used: f64,
    /// The most the old generation may take (its `maxCapacity`: the whole heap's under
    /// G1, what the young generation leaves under the serial and parallel collectors).
    pub old_max: f64,
    /// Seconds the collectors have spent so far (their `time`, in the JVM's ticks, over
    /// its tick rate).
    pub gc_s: f64,
}

/// The heap of a JVM's counters; `None` when they have none (another collector's names).
pub fn heap(c: &HashMap<String, i64>) -> Option<Heap> {
    let sum = |f: &dyn Fn(&str) -> bool| -> f64 {
        c.iter()
            .filter(|(k, _)| f(k))
            .map(|(_, v)| (*v).max(0) as f64)
            .sum()
    };
    let used = sum(&|k| {
        k.starts_with("sun.gc.generation.") && k.contains(".space.") && k.ends_with(".used")
    });
    let old_used = *c.get("sun.gc.generation.1.space.0.used")?;
    let old_max = c
        .get("sun.gc.generation.1.maxCapacity")
        .copied()
        .unwrap_or(0);
    let hz = *c.get("sun.os.hrt.frequency")?;
    let ticks = sum(&|k| k.starts_with("sun.gc.collector.") && k.ends_with(".time"));
    (hz > 0).then_some(Heap {
        used,
        old_used: old_used.max(0) as f64,
        old_max: old_max.max(0) as f64,
        gc_s: ticks / hz as f64,
    })
}

/// Why counters hold no heap [`heap`] reads: a JVM makes its counters file first and
/// writes its collector's counters a moment later, so a file without any `sun.gc.` counter
/// is a JVM starting; one with other `sun.gc.` names is another collector's.
pub fn why_no_heap(c: &HashMap<String, i64>) -> &'static str {
    if c.keys().any(|k| k.starts_with("sun.gc.")) {
        "no heap counters kiln knows (another collector's names)"
    } else {
        "no heap counters yet (the JVM was starting)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counters file as a JVM writes it: the prologue, then one entry per counter.
    fn file(little: bool, counters: &[(&str, i64)]) -> Vec<u8> {
        let i32b = |v: i32| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut b = MAGIC.to_be_bytes().to_vec();
        b.extend([u8::from(little), 2, 0, 1]);
        b.extend(i32b(0)); // used
        b.extend(i32b(0)); // overflow
        b.extend([0u8; 8]); // modification time
        b.extend(i32b(PROLOGUE as i32));
        b.extend(i32b(counters.len() as i32));
        for (name, v) in counters {
            // name at 20, padded to 8; the value after it.
            let padded = (name.len() + 1).div_ceil(8) * 8;
            let data_at = ENTRY + padded;
            let len = data_at + 8;
            b.extend(i32b(len as i32));
            b.extend(i32b(ENTRY as i32));
            b.extend(i32b(0));
            b.extend([b'J', 0, 1, 3]);
            b.extend(i32b(data_at as i32));
            let mut n = name.as_bytes().to_vec();
            n.resize(padded, 0);
            b.extend(n);
            b.extend(if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            });
        }
        b
    }

    #[test]
    fn counters_in_either_byte_order_and_the_heap_they_give() {
        let counters = [
            ("sun.os.hrt.frequency", 1_000_000_000),
            ("sun.gc.generation.0.space.0.used", 10 << 20),
            ("sun.gc.generation.0.space.1.used", 1 << 20),
            ("sun.gc.generation.1.space.0.used", 200 << 20),
            ("sun.gc.generation.0.maxCapacity", 100 << 20),
            ("sun.gc.generation.1.maxCapacity", 412 << 20),
            ("sun.gc.collector.0.time", 1_500_000_000),
            ("sun.gc.collector.1.time", 500_000_000),
        ];
        for little in [false, true] {
            let c = parse(&file(little, &counters)).unwrap();
            assert_eq!(c.len(), counters.len());
            let h = heap(&c).unwrap();
            let mib = 1048576.0;
            assert_eq!(h.used, 211.0 * mib);
            assert_eq!(h.old_used, 200.0 * mib);
            assert_eq!(h.old_max, 412.0 * mib);
            assert_eq!(h.gc_s, 2.0);
        }
    }

    #[test]
    fn a_jvm_starting_is_told_from_another_collector() {
        // The file made, the collector's counters not written yet.
        let starting = parse(&file(true, &[("sun.os.hrt.frequency", 1)])).unwrap();
        assert!(heap(&starting).is_none());
        assert!(why_no_heap(&starting).contains("starting"));
        // A collector whose names kiln does not read.
        let other = [("sun.os.hrt.frequency", 1), ("sun.gc.zheap.used", 1 << 20)];
        let other = parse(&file(true, &other)).unwrap();
        assert!(heap(&other).is_none());
        assert!(why_no_heap(&other).contains("another collector"));
    }

    #[test]
    fn what_is_not_a_counters_file_is_said_where() {
        let good = file(true, &[("sun.os.hrt.frequency", 1)]);
        assert_eq!(parse(&good[..10]).unwrap_err().0, 0);
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(parse(&bad).unwrap_err().1.contains("magic"));
        let mut bad = good.clone();
        bad[4] = 7;
        assert_eq!(parse(&bad).unwrap_err().0, 4);
        // An entry longer than the file.
        let mut bad = good.clone();
        bad[PROLOGUE..PROLOGUE + 4].copy_from_slice(&1000i32.to_le_bytes());
        assert_eq!(parse(&bad).unwrap_err().0, PROLOGUE);
        // Cut inside the value.
        assert!(parse(&good[..good.len() - 3]).is_err());
        let e = read(Path::new("/nonexistent/hsperfdata")).unwrap_err();
        assert!(
            e.to_string().starts_with("/nonexistent/hsperfdata: "),
            "{e}"
        );
    }
}
