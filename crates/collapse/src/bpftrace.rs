//! bpftrace map dumps: `@name[key, key]: count`, where stack keys span several lines,
//! leaf first:
//!
//! ```text
//! @[
//!     __schedule+1021
//!     schedule+68
//! , sleep]: 1207
//! ```
//!
//! Scalar keys (a comm, a pid) become root frames, in order; stack keys follow, the
//! last-listed stack nearest the root (`@[kstack, ustack, comm]` gives
//! `comm;ustack…;kstack…`). Offsets (`+1021`) are removed.
use crate::{CollapseError, Collapsed, Input, Options, SkipReason, Warnings};
use kiln_model::{EventInfo, FrameKind, Profile, ThreadId, NO_TIME};

fn trim(s: &[u8]) -> &[u8] {
    let s = match s.iter().position(|c| !c.is_ascii_whitespace()) {
        Some(i) => &s[i..],
        None => return &[],
    };
    let e = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &s[..e]
}

fn strip_decimal_offset(f: &[u8]) -> &[u8] {
    if let Some(p) = memchr::memrchr(b'+', f) {
        let tail = &f[p + 1..];
        if !tail.is_empty() && tail.iter().all(u8::is_ascii_digit) && p > 0 {
            return &f[..p];
        }
    }
    f
}

/// Collapses bpftrace output (a [`crate::Collapser`]).
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut out = Collapsed {
        profile: Profile::new(EventInfo::default()),
        ..Default::default()
    };
    let mut warnings = Warnings::new(input.name, opts);
    // The key being read: scalars, stacks (each a list of frames, leaf first).
    let mut scalars: Vec<Vec<u8>> = Vec::new();
    let mut stacks: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut in_entry = false;
    let mut entry_line = 0u64;
    let mut frames = Vec::new();
    let mut ctx = Ctx {
        warnings: &mut warnings,
        total: 0,
        source: input.name,
    };
    for (i, raw) in input.data.split(|&c| c == b'\n').enumerate() {
        let lineno = i as u64 + 1;
        let line = trim(raw);
        if !in_entry {
            if line.is_empty() || !line.starts_with(b"@") {
                continue; // "Attaching 1 probe...", blank lines, other output
            }
            let Some(open) = memchr::memchr(b'[', line) else {
                continue; // a scalar map `@count: 5` has no stack
            };
            out.stats.read += 1;
            entry_line = lineno;
            scalars.clear();
            stacks.clear();
            in_entry = true;
            let rest = &line[open + 1..];
            if rest.is_empty() {
                stacks.push(Vec::new());
                continue;
            }
            // A one-line entry: `@[comm, 12]: 5`.
            match finish(rest) {
                Some((keys, count)) => {
                    for k in split_keys(keys) {
                        scalars.push(k.to_vec());
                    }
                    emit(
                        &mut out,
                        &scalars,
                        &stacks,
                        count,
                        &mut frames,
                        &mut ctx,
                        lineno,
                    )?;
                    in_entry = false;
                }
                None => {
                    for k in split_keys(rest) {
                        scalars.push(k.to_vec());
                    }
                    stacks.push(Vec::new());
                }
            }
            continue;
        }
        // Inside a multi-line key.
        if line.starts_with(b",") || line.starts_with(b"]") {
            let (keys, done) = match finish(line) {
                Some((keys, count)) => (keys, Some(count)),
                None => (line, None),
            };
            let keys = keys.strip_prefix(b",").unwrap_or(keys);
            for k in split_keys(keys) {
                scalars.push(k.to_vec());
            }
            match done {
                Some(count) => {
                    emit(
                        &mut out,
                        &scalars,
                        &stacks,
                        count,
                        &mut frames,
                        &mut ctx,
                        lineno,
                    )?;
                    in_entry = false;
                }
                None if line.starts_with(b"]") => {
                    ctx.warnings
                        .warn(lineno, "bpftrace entry without a count", line)?;
                    out.stats.skip(SkipReason::MalformedLine);
                    in_entry = false;
                }
                None => stacks.push(Vec::new()),
            }
        } else if !line.is_empty() {
            match stacks.last_mut() {
                Some(s) => s.push(strip_decimal_offset(line).to_vec()),
                None => stacks.push(vec![strip_decimal_offset(line).to_vec()]),
            }
        }
    }
    if in_entry {
        ctx.warnings
            .warn(entry_line, "bpftrace entry cut off at end of input", b"@[")?;
        out.stats.skip(SkipReason::MalformedLine);
    }
    out.stats.warnings = warnings.count;
    out.warnings = warnings.list;
    Ok(out)
}

/// `…]: 123` → (keys before `]`, 123).
fn finish(line: &[u8]) -> Option<(&[u8], Count)> {
    let close = memchr::memmem::rfind(line, b"]:")?;
    let count = trim(&line[close + 2..]);
    if count.is_empty() || !count.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = count.iter().try_fold(0u64, |v, &c| {
        v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    });
    Some((&line[..close], n.map_or(Count::TooLarge, Count::Value)))
}

/// An entry's count.
#[derive(Clone, Copy)]
enum Count {
    Value(u64),
    /// Digits beyond 2^64-1.
    TooLarge,
}

fn split_keys(keys: &[u8]) -> impl Iterator<Item = &[u8]> {
    keys.split(|&c| c == b',')
        .map(trim)
        .filter(|k| !k.is_empty())
}

/// What entries are checked against: warnings, and the sum of the counts so far.
struct Ctx<'w, 's> {
    warnings: &'w mut Warnings<'s>,
    total: u64,
    source: &'s str,
}

fn emit(
    out: &mut Collapsed,
    scalars: &[Vec<u8>],
    stacks: &[Vec<Vec<u8>>],
    count: Count,
    frames: &mut Vec<kiln_model::FrameId>,
    ctx: &mut Ctx<'_, '_>,
    lineno: u64,
) -> Result<(), CollapseError> {
    let count = match count {
        Count::Value(n) => n,
        Count::TooLarge => {
            ctx.warnings
                .warn(lineno, "count does not fit in 64 bits", b"")?;
            out.stats.skip(SkipReason::WeightTooLarge);
            return Ok(());
        }
    };
    frames.clear();
    let p = &mut out.profile;
    for s in scalars {
        frames.push(p.frame(s, FrameKind::Unknown));
    }
    for st in stacks.iter().rev() {
        for f in st.iter().rev() {
            frames.push(p.frame(f, FrameKind::Unknown));
        }
    }
    if frames.is_empty() {
        out.stats.skip(SkipReason::EmptyStack);
        return Ok(());
    }
    ctx.total = ctx.total.checked_add(count).ok_or_else(|| {
        CollapseError::WeightOverflow(crate::Warning::new(
            ctx.source,
            lineno,
            "the counts add up to more than 2^64-1",
            b"",
        ))
    })?;
    p.add_sample_path(frames, count, NO_TIME, ThreadId::NONE);
    out.stats.kept += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{FoldedOptions, FoldedWriter};

    #[test]
    fn reads_multiline_stacks() {
        let text = "Attaching 2 probes...\n\n@[\n    __schedule+1021\n    schedule+68\n, sleep]: 1207\n@[\n    f+1\n    main+2\n]: 3\n@[bash, 12]: 4\n@[\n    g+1\n]:\n";
        let c = collapse(
            Input {
                name: "b",
                data: text.as_bytes(),
            },
            &Options::default(),
        )
        .unwrap();
        let mut v = Vec::new();
        FoldedWriter::new(FoldedOptions::default())
            .write(&c.profile, &mut v)
            .unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "bash;12 4\nmain;f 3\nsleep;schedule;__schedule 1207\n"
        );
        assert_eq!(c.stats.read, 4);
        assert_eq!(c.stats.kept, 3);
        assert_eq!(c.stats.skipped_total(), 1);
    }

    #[test]
    fn counts_beyond_64_bits() {
        let run = |text: &str| {
            collapse(
                Input {
                    name: "b",
                    data: text.as_bytes(),
                },
                &Options::default(),
            )
        };
        let c = run("@[a]: 99999999999999999999\n@[b]: 2\n").unwrap();
        assert_eq!((c.stats.kept, c.stats.warnings), (1, 1));
        assert_eq!(c.stats.skipped.get(&SkipReason::WeightTooLarge), Some(&1));
        let e = run("@[a]: 18446744073709551615\n@[b]: 1\n").unwrap_err();
        assert!(matches!(e, CollapseError::WeightOverflow(_)), "{e}");
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
