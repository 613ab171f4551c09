//! Folded stacks: `frame;frame;frame count`, one stack per line, root first.
//!
//! Also reads the two-count form `stack before after` of differential flame graphs
//! (`difffolded.pl` output). bcc tools' `-f` output is this format.
use crate::{CollapseError, Collapsed, Input, Options, SkipReason, Warnings};
use kiln_model::{EventInfo, FrameId, FrameKind, Profile, StackId, ThreadId, NO_TIME};

/// A count as folded files write it: an integer, or a decimal (rounded to the nearest
/// integer, with a warning, since kiln weights are integers).
fn parse_count(tok: &[u8]) -> Option<(u64, bool)> {
    if tok.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    let mut i = 0;
    while i < tok.len() && tok[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(u64::from(tok[i] - b'0'))?;
        i += 1;
    }
    if i == tok.len() {
        return Some((v, false));
    }
    if tok[i] != b'.' || i == 0 {
        return None;
    }
    let frac = &tok[i + 1..];
    if !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let round_up = frac.first().is_some_and(|&d| d >= b'5');
    let exact = frac.iter().all(|&d| d == b'0');
    Some((v + u64::from(round_up), !exact))
}

/// Splits `stack count [count]` into its parts.
fn split_line(line: &[u8]) -> Option<(&[u8], u64, Option<u64>, bool)> {
    let sp = memchr::memrchr2(b' ', b'\t', line)?;
    let (last, lossy) = parse_count(&line[sp + 1..])?;
    let rest = trim_end(&line[..sp]);
    if let Some(sp2) = memchr::memrchr2(b' ', b'\t', rest) {
        if let Some((first, lossy2)) = parse_count(&rest[sp2 + 1..]) {
            return Some((trim_end(&rest[..sp2]), first, Some(last), lossy || lossy2));
        }
    }
    Some((rest, last, None, lossy))
}

fn trim_end(s: &[u8]) -> &[u8] {
    let mut e = s.len();
    while e > 0 && matches!(s[e - 1], b' ' | b'\t' | b'\r') {
        e -= 1;
    }
    &s[..e]
}

/// Incremental folded-line reader that reuses the previous line's stack prefix (folded
/// files are usually sorted, so consecutive lines share most of their frames).
struct PrefixReuse {
    frames: Vec<(u32, u32)>,
    line: Vec<u8>,
    nodes: Vec<StackId>,
    scratch_frames: Vec<(u32, u32)>,
}

impl PrefixReuse {
    fn new() -> Self {
        PrefixReuse {
            frames: Vec::new(),
            line: Vec::new(),
            nodes: Vec::new(),
            scratch_frames: Vec::new(),
        }
    }

    fn stack(&mut self, p: &mut Profile, stack: &[u8]) -> Option<StackId> {
        self.scratch_frames.clear();
        let mut start = 0usize;
        for pos in memchr::memchr_iter(b';', stack) {
            self.scratch_frames.push((start as u32, pos as u32));
            start = pos + 1;
        }
        self.scratch_frames.push((start as u32, stack.len() as u32));
        let mut keep = 0;
        while keep < self.scratch_frames.len() && keep < self.frames.len() {
            let (a, b) = self.scratch_frames[keep];
            let (c, d) = self.frames[keep];
            if stack[a as usize..b as usize] != self.line[c as usize..d as usize] {
                break;
            }
            keep += 1;
        }
        self.nodes.truncate(keep);
        for &(a, b) in &self.scratch_frames[keep..] {
            let f: FrameId = p.frame(&stack[a as usize..b as usize], FrameKind::Unknown);
            let parent = self.nodes.last().copied();
            self.nodes.push(p.stacks.intern(parent, f));
        }
        std::mem::swap(&mut self.frames, &mut self.scratch_frames);
        self.line.clear();
        self.line.extend_from_slice(stack);
        self.nodes.last().copied()
    }
}

/// Collapses folded input (see [`crate::collapse`]).
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut out = Collapsed {
        profile: Profile::new(EventInfo::default()),
        ..Default::default()
    };
    let mut after: Option<Profile> = None;
    let mut two_counts: Option<bool> = None;
    let mut warnings = Warnings::new(input.name, opts);
    let mut reuse = PrefixReuse::new();
    let mut reuse_after = PrefixReuse::new();
    let data = input.data;
    let mut pos = 0usize;
    let mut lineno = 0u64;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let raw = &data[pos..end];
        pos = end + 1;
        lineno += 1;
        let line = trim_end(raw);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        out.stats.read += 1;
        let Some((stack, c1, c2, lossy)) = split_line(line) else {
            warnings.warn(lineno, "no sample count at the end of the line", line)?;
            out.stats.skip(SkipReason::MalformedLine);
            continue;
        };
        if lossy {
            warnings.warn(lineno, "fractional count rounded to an integer", line)?;
        }
        let is_two = c2.is_some();
        match two_counts {
            None => {
                two_counts = Some(is_two);
                if is_two {
                    after = Some(Profile::new(EventInfo::default()));
                }
            }
            Some(t) if t != is_two => {
                warnings.warn(
                    lineno,
                    if t {
                        "one count where the file has two (before and after)"
                    } else {
                        "two counts where the file has one"
                    },
                    line,
                )?;
                out.stats.skip(SkipReason::MalformedLine);
                continue;
            }
            _ => {}
        }
        if stack.is_empty() {
            out.stats.skip(SkipReason::EmptyStack);
            warnings.warn(lineno, "empty stack", line)?;
            continue;
        }
        let node = reuse
            .stack(&mut out.profile, stack)
            .expect("non-empty stack");
        out.profile.samples.push(node, c1, NO_TIME, ThreadId::NONE);
        if let (Some(a), Some(c2)) = (after.as_mut(), c2) {
            let node = reuse_after.stack(a, stack).expect("non-empty stack");
            a.samples.push(node, c2, NO_TIME, ThreadId::NONE);
        }
        out.stats.kept += 1;
    }
    out.after = after;
    out.stats.warnings = warnings.count;
    out.warnings = warnings.list;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{FoldedOptions, FoldedWriter};

    fn run(s: &str) -> Collapsed {
        collapse(
            Input {
                name: "t",
                data: s.as_bytes(),
            },
            &Options::default(),
        )
        .unwrap()
    }

    fn folded(p: &Profile) -> String {
        let mut v = Vec::new();
        FoldedWriter::new(FoldedOptions::default())
            .write(p, &mut v)
            .unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn reads_and_merges() {
        let c = run("a;b 1\na;b;c 2\n\n# comment\na;b 3\r\nx y;z 4\nbad line\n");
        assert_eq!(folded(&c.profile), "a;b 4\na;b;c 2\nx y;z 4\n");
        assert_eq!(c.stats.read, 5);
        assert_eq!(c.stats.kept, 4);
        assert_eq!(c.stats.skipped_total(), 1);
        assert_eq!(c.warnings[0].line, 7);
    }

    #[test]
    fn two_counts() {
        let c = run("a;b 1 2\na;c 0 5\na 3\n");
        assert_eq!(folded(&c.profile), "a;b 1\n");
        assert_eq!(folded(c.after.as_ref().unwrap()), "a;b 2\na;c 5\n");
        assert_eq!(c.stats.skipped_total(), 1);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count(b"12"), Some((12, false)));
        assert_eq!(parse_count(b"1.5"), Some((2, true)));
        assert_eq!(parse_count(b"3.0"), Some((3, false)));
        assert_eq!(parse_count(b"x"), None);
        assert_eq!(parse_count(b"99999999999999999999999"), None);
        let strict = Options {
            strict: true,
            ..Default::default()
        };
        let e = collapse(
            Input {
                name: "f.folded",
                data: b"ok 1\nnope\n",
            },
            &strict,
        )
        .unwrap_err();
        assert!(e.to_string().contains("f.folded:2"), "{e}");
    }
}
