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

/// A data line: where its stack is, its counts, its line number.
struct Line {
    start: usize,
    len: u32,
    c1: u64,
    c2: Option<u64>,
}

/// Length of the common prefix of two byte strings, eight bytes at a time.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Compares two stacks frame by frame (`a;b` before `a;b;c` before `a;b1` before `a;bc`),
/// so that the lines under one prefix are contiguous once sorted. Equivalent to comparing
/// the bytes with the end of the string lowest, then `;`, then every other byte.
fn cmp_frames(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let i = common_prefix(a, b);
    let rank = |s: &[u8]| -> u16 {
        match s.get(i) {
            None => 0,
            Some(b';') => 1,
            Some(&c) => u16::from(c) + 2,
        }
    };
    rank(a).cmp(&rank(b))
}

/// Builds stacks from lines sorted with [`cmp_frames`]: a frame that differs from the
/// previous line's at the same depth starts a new node, so nodes are appended without a
/// lookup; names are mapped to frames through a cache.
struct SortedBuilder {
    prev: Vec<(usize, usize)>,
    nodes: Vec<StackId>,
    names: hashbrown::HashTable<FrameId>,
    hasher: foldhash::fast::FixedState,
    prev_line: (usize, usize),
}

impl SortedBuilder {
    fn new() -> Self {
        SortedBuilder {
            prev: Vec::new(),
            nodes: Vec::new(),
            names: hashbrown::HashTable::new(),
            hasher: Default::default(),
            prev_line: (0, 0),
        }
    }

    fn frame(&mut self, p: &mut Profile, name: &[u8]) -> FrameId {
        use std::hash::BuildHasher;
        let h = self.hasher.hash_one(name);
        if let Some(&f) = self.names.find(h, |&f| p.frame_name(f) == name) {
            return f;
        }
        let f = p.frame(name, FrameKind::Unknown);
        let hasher = self.hasher;
        let prof: &Profile = p;
        self.names
            .insert_unique(h, f, |&g| hasher.hash_one(prof.frame_name(g)));
        f
    }

    fn stack(&mut self, p: &mut Profile, data: &[u8], stack: (usize, usize)) -> StackId {
        let (s, e) = stack;
        let line = &data[s..e];
        let prev = &data[self.prev_line.0..self.prev_line.1];
        let common = common_prefix(line, prev);
        if common == line.len() && common == prev.len() && !self.nodes.is_empty() {
            // The same stack as the previous line (equal lines are adjacent once sorted).
            let shift = s as isize - self.prev_line.0 as isize;
            for f in self.prev.iter_mut() {
                *f = (
                    (f.0 as isize + shift) as usize,
                    (f.1 as isize + shift) as usize,
                );
            }
            self.prev_line = (s, e);
            return *self.nodes.last().expect("non-empty stack");
        }
        // Frames of the previous line that end inside the common bytes, at a frame boundary
        // of both lines, are this line's too.
        let boundary = |x: &[u8], at: usize| at == x.len() || x[at] == b';';
        let mut keep = 0;
        while keep < self.prev.len() {
            let end = self.prev[keep].1 - self.prev_line.0;
            if end <= common && boundary(line, end) && boundary(prev, end) {
                keep += 1;
            } else {
                break;
            }
        }
        self.nodes.truncate(keep);
        self.prev.truncate(keep);
        let mut start = match self.prev.last() {
            Some(&(_, end)) => end - self.prev_line.0 + 1,
            None => 0,
        };
        // Re-base kept frames on this line (same bytes, new offsets).
        let shift = s as isize - self.prev_line.0 as isize;
        for f in self.prev.iter_mut() {
            *f = (
                (f.0 as isize + shift) as usize,
                (f.1 as isize + shift) as usize,
            );
        }
        while start <= line.len() {
            let end = memchr::memchr(b';', &line[start..]).map_or(line.len(), |q| start + q);
            let f = self.frame(p, &line[start..end]);
            let parent = self.nodes.last().copied();
            self.nodes.push(p.stacks.push_new(parent, f));
            self.prev.push((s + start, s + end));
            start = end + 1;
        }
        self.prev_line = (s, e);
        *self.nodes.last().expect("non-empty stack")
    }
}

/// Collapses folded input (see [`crate::collapse`]).
///
/// Unless [`Options::keep_order`] is set, lines are sorted (frame by frame) before the
/// stack tree is built, which makes building it a matter of appending nodes; sample
/// rows then come in stack order rather than input order, which only a flame chart cares
/// about.
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut out = Collapsed {
        profile: Profile::new(EventInfo::default()),
        ..Default::default()
    };
    let mut two_counts: Option<bool> = None;
    let mut warnings = Warnings::new(input.name, opts);
    let data = input.data;
    let mut lines: Vec<Line> = Vec::new();
    let mut pos = 0usize;
    let mut lineno = 0u64;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let raw = &data[pos..end];
        let line_start = pos;
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
            None => two_counts = Some(is_two),
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
        lines.push(Line {
            start: line_start,
            len: stack.len() as u32,
            c1,
            c2,
        });
        out.stats.kept += 1;
    }
    let slice = |l: &Line| &data[l.start..l.start + l.len as usize];
    let mut after = (two_counts == Some(true)).then(|| Profile::new(EventInfo::default()));
    if opts.keep_order {
        let mut reuse = PrefixReuse::new();
        let mut reuse_after = PrefixReuse::new();
        for l in &lines {
            let node = reuse
                .stack(&mut out.profile, slice(l))
                .expect("non-empty stack");
            out.profile
                .samples
                .push(node, l.c1, NO_TIME, ThreadId::NONE);
            if let (Some(a), Some(c2)) = (after.as_mut(), l.c2) {
                let node = reuse_after.stack(a, slice(l)).expect("non-empty stack");
                a.samples.push(node, c2, NO_TIME, ThreadId::NONE);
            }
        }
    } else {
        lines.sort_unstable_by(|a, b| cmp_frames(slice(a), slice(b)));
        let mut b1 = SortedBuilder::new();
        let mut b2 = SortedBuilder::new();
        for l in &lines {
            let range = (l.start, l.start + l.len as usize);
            let n1 = b1.stack(&mut out.profile, data, range);
            out.profile.samples.push(n1, l.c1, NO_TIME, ThreadId::NONE);
            if let (Some(a), Some(c2)) = (after.as_mut(), l.c2) {
                let n2 = b2.stack(a, data, range);
                a.samples.push(n2, c2, NO_TIME, ThreadId::NONE);
            }
        }
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
