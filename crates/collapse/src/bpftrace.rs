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
    let mut e = Entry::default();
    let mut ctx = Ctx {
        warnings: &mut warnings,
        total: 0,
        source: input.name,
    };
    for (i, raw) in input.data.split(|&c| c == b'\n').enumerate() {
        let lineno = i as u64 + 1;
        let line = trim(raw);
        if !e.open {
            e.start(line, lineno, &mut out, &mut ctx)?;
        } else {
            e.more(line, lineno, &mut out, &mut ctx)?;
        }
    }
    if e.open {
        ctx.warnings
            .warn(e.line, "bpftrace entry cut off at end of input", b"@[")?;
        out.stats.skip(SkipReason::MalformedLine);
    }
    out.stats.warnings = warnings.count;
    out.warnings = warnings.list;
    Ok(out)
}

/// The map entry being read: its key's scalars and stacks (each a list of frames, leaf
/// first), whether one is open and the line it began on.
#[derive(Default)]
struct Entry {
    scalars: Vec<Vec<u8>>,
    stacks: Vec<Vec<Vec<u8>>>,
    open: bool,
    line: u64,
    frames: Vec<kiln_model::FrameId>,
}

impl Entry {
    /// A line outside an entry: `@[…` opens one (or is one, on one line); anything else
    /// ("Attaching 1 probe...", blank lines, scalar maps) is not a stack.
    fn start(
        &mut self,
        line: &[u8],
        lineno: u64,
        out: &mut Collapsed,
        ctx: &mut Ctx<'_, '_>,
    ) -> Result<(), CollapseError> {
        if line.is_empty() || !line.starts_with(b"@") {
            return Ok(());
        }
        let Some(open) = memchr::memchr(b'[', line) else {
            return Ok(()); // a scalar map `@count: 5` has no stack
        };
        out.stats.read += 1;
        self.line = lineno;
        self.scalars.clear();
        self.stacks.clear();
        self.open = true;
        let rest = &line[open + 1..];
        if rest.is_empty() {
            self.stacks.push(Vec::new());
            return Ok(());
        }
        // A one-line entry: `@[comm, 12]: 5`.
        match finish(rest) {
            Some((keys, count)) => {
                for k in split_keys(keys) {
                    self.scalars.push(k.to_vec());
                }
                self.emit(out, count, ctx, lineno)?;
            }
            None => {
                for k in split_keys(rest) {
                    self.scalars.push(k.to_vec());
                }
                self.stacks.push(Vec::new());
            }
        }
        Ok(())
    }

    /// A line inside a multi-line key: more keys (`, …`), its end (`]: count`), or a
    /// frame of the current stack.
    fn more(
        &mut self,
        line: &[u8],
        lineno: u64,
        out: &mut Collapsed,
        ctx: &mut Ctx<'_, '_>,
    ) -> Result<(), CollapseError> {
        if !(line.starts_with(b",") || line.starts_with(b"]")) {
            if !line.is_empty() {
                let frame = strip_decimal_offset(line).to_vec();
                match self.stacks.last_mut() {
                    Some(s) => s.push(frame),
                    None => self.stacks.push(vec![frame]),
                }
            }
            return Ok(());
        }
        let (keys, done) = match finish(line) {
            Some((keys, count)) => (keys, Some(count)),
            None => (line, None),
        };
        let keys = keys.strip_prefix(b",").unwrap_or(keys);
        for k in split_keys(keys) {
            self.scalars.push(k.to_vec());
        }
        match done {
            Some(count) => self.emit(out, count, ctx, lineno)?,
            None if line.starts_with(b"]") => {
                ctx.warnings
                    .warn(lineno, "bpftrace entry without a count", line)?;
                out.stats.skip(SkipReason::MalformedLine);
                self.open = false;
            }
            None => self.stacks.push(Vec::new()),
        }
        Ok(())
    }

    /// The entry's samples, and it is closed.
    fn emit(
        &mut self,
        out: &mut Collapsed,
        count: Count,
        ctx: &mut Ctx<'_, '_>,
        lineno: u64,
    ) -> Result<(), CollapseError> {
        self.open = false;
        emit(
            out,
            &self.scalars,
            &self.stacks,
            count,
            &mut self.frames,
            ctx,
            lineno,
        )
    }
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

    /// `text` collapsed, and its folded lines.
    fn folded(text: &str) -> (Collapsed, String) {
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
        (c, String::from_utf8(v).unwrap())
    }

    #[test]
    fn reads_multiline_stacks() {
        let text = "Attaching 2 probes...\n\n@[\n    __schedule+1021\n    schedule+68\n, sleep]: 1207\n@[\n    f+1\n    main+2\n]: 3\n@[bash, 12]: 4\n@[\n    g+1\n]:\n";
        let (c, folded) = folded(text);
        assert_eq!(
            folded,
            "bash;12 4\nmain;f 3\nsleep;schedule;__schedule 1207\n"
        );
        assert_eq!(c.stats.read, 4);
        assert_eq!(c.stats.kept, 3);
        assert_eq!(c.stats.skipped_total(), 1);
    }

    /// Two stacks in one key, an entry without a count and one cut off at the end: the
    /// stacks join leaf last, the two bad entries are counted and named by their lines.
    #[test]
    fn keys_of_several_stacks_and_broken_entries() {
        let text =
            "@[\n    foo+1\n    bar+2\n, \n    baz+3\n, sh]: 2\n@[\n    lost+1\n]\n@[\n    cut+1\n";
        let (c, folded) = folded(text);
        assert_eq!(folded, "sh;baz;bar;foo 2\n");
        assert_eq!((c.stats.read, c.stats.kept), (3, 1));
        assert_eq!(c.stats.skipped.get(&SkipReason::MalformedLine), Some(&2));
        let w: Vec<(u64, &str)> = c
            .warnings
            .iter()
            .map(|w| (w.line, w.message.as_str()))
            .collect();
        assert_eq!(
            w,
            [
                (9, "bpftrace entry without a count"),
                (10, "bpftrace entry cut off at end of input")
            ]
        );
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
