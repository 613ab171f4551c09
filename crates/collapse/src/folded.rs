//! Folded stacks: `frame;frame;frame count`, one stack per line, root first.
//!
//! Also reads the two-count form `stack before after` of differential flame graphs
//! (`difffolded.pl` output). bcc tools' `-f` output is this format.
use crate::{CollapseError, Collapsed, Input, Options, SkipReason, Warnings};
use kiln_model::{EventInfo, FrameId, FrameKind, Profile, StackId, ThreadId, NO_TIME};

/// Why a line's count could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BadCount {
    /// No number at the end of the line.
    Missing,
    /// A negative number.
    Negative,
    /// A number beyond 2^64-1.
    TooLarge,
}

/// A count as folded files write it: an integer, or a decimal (rounded to the nearest
/// integer, with a warning, since kiln weights are integers).
fn parse_count(tok: &[u8]) -> Result<(u64, bool), BadCount> {
    if let Some(rest) = tok.strip_prefix(b"-") {
        // A negative number is a count, wrongly signed; anything else is no count.
        return Err(match parse_count(rest) {
            Ok(_) | Err(BadCount::TooLarge) => BadCount::Negative,
            Err(e) => e,
        });
    }
    if tok.is_empty() {
        return Err(BadCount::Missing);
    }
    let mut v: u64 = 0;
    let mut i = 0;
    let mut too_large = false;
    while i < tok.len() && tok[i].is_ascii_digit() {
        match v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(tok[i] - b'0')))
        {
            Some(n) => v = n,
            None => too_large = true,
        }
        i += 1;
    }
    if i == 0 {
        return Err(BadCount::Missing);
    }
    let frac = match tok.get(i) {
        None => &[][..],
        Some(b'.') => &tok[i + 1..],
        Some(_) => return Err(BadCount::Missing),
    };
    if !frac.iter().all(u8::is_ascii_digit) {
        return Err(BadCount::Missing);
    }
    if too_large {
        return Err(BadCount::TooLarge);
    }
    let round_up = frac.first().is_some_and(|&d| d >= b'5');
    let exact = frac.iter().all(|&d| d == b'0');
    let v = v
        .checked_add(u64::from(round_up))
        .ok_or(BadCount::TooLarge)?;
    Ok((v, !exact))
}

/// A line's parts: the stack, the count (or the first of two), the second count, and
/// whether a fractional count was rounded.
type Parts<'a> = (&'a [u8], u64, Option<u64>, bool);

/// Splits `stack count [count]` into its parts.
fn split_line(line: &[u8]) -> Result<Parts<'_>, BadCount> {
    let sp = memchr::memrchr2(b' ', b'\t', line).ok_or(BadCount::Missing)?;
    let (last, lossy) = parse_count(&line[sp + 1..])?;
    let rest = trim_end(&line[..sp]);
    if let Some(sp2) = memchr::memrchr2(b' ', b'\t', rest) {
        // Names may hold spaces: a token that is not a count belongs to the stack.
        if let Ok((first, lossy2)) = parse_count(&rest[sp2 + 1..]) {
            return Ok((trim_end(&rest[..sp2]), first, Some(last), lossy || lossy2));
        }
    }
    Ok((rest, last, None, lossy))
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

/// A data line: where its stack is (bytes, and frame ids in the id arena), its counts.
struct Line {
    start: usize,
    len: u32,
    c1: u64,
    c2: u64,
}

/// A data line of the sorted path: its frame ids (where in the id arena, how many), its
/// counts, and what grouping needs (see [`group_by_prefix`]).
#[derive(Clone, Copy)]
struct Row {
    /// The ids at the current depth and the next (each id + 1, 0 past the line's end).
    key: u64,
    /// How many frames the row shares with the row before it, once grouped.
    lcp: u32,
    frames: u32,
    at: usize,
    c1: u64,
    c2: u64,
    /// The row's ids from the current depth on, read four at a time.
    next: [u32; 4],
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

/// Hashes frame names eight bytes at a time while finding where they end, in one pass
/// over a line: cutting a line at `;` with memchr and hashing each name apart cost
/// twice as much on 600,000-stack files, where every line is ten to thirty names.
/// Seeded per process, so crafted names cannot make lookups collide on purpose.
#[derive(Clone, Copy)]
struct NameHasher {
    seed: u64,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;
const SEMIS: u64 = ONES * b';' as u64;

#[inline]
fn mix(h: u64, w: u64) -> u64 {
    let m = u128::from(h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (m as u64) ^ ((m >> 64) as u64)
}

#[inline]
fn word(s: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"))
}

/// The first `n` (< 8) bytes of `s` from `i`, as the low bytes of a word.
#[inline]
fn partial(s: &[u8], i: usize, n: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&s[i..i + n]);
    u64::from_le_bytes(b)
}

impl NameHasher {
    fn new() -> Self {
        use std::hash::BuildHasher;
        NameHasher {
            seed: std::collections::hash_map::RandomState::new().hash_one(0x6b69_6c6e_u64),
        }
    }

    /// The name starting at `from` in `line`: where it ends (the next `;` or the end of
    /// the line) and its hash, the same as [`Self::hash`] of its bytes.
    #[inline]
    fn next(&self, line: &[u8], from: usize) -> (usize, u64) {
        let mut h = self.seed;
        let mut i = from;
        while i + 8 <= line.len() {
            let w = word(line, i);
            let x = w ^ SEMIS;
            // The lowest byte flagged is the first `;` (flags above it may be false).
            let semis = x.wrapping_sub(ONES) & !x & HIGHS;
            if semis != 0 {
                let k = (semis.trailing_zeros() / 8) as usize;
                let end = i + k;
                if k > 0 {
                    h = mix(h, w & (u64::MAX >> (64 - 8 * k)));
                }
                return (end, mix(h, (end - from) as u64));
            }
            h = mix(h, w);
            i += 8;
        }
        let end = memchr::memchr(b';', &line[i..]).map_or(line.len(), |q| i + q);
        if end > i {
            h = mix(h, partial(line, i, end - i));
        }
        (end, mix(h, (end - from) as u64))
    }

    /// The hash of a whole name (no `;` in it).
    fn hash(&self, name: &[u8]) -> u64 {
        let mut h = self.seed;
        let mut i = 0;
        while i + 8 <= name.len() {
            h = mix(h, word(name, i));
            i += 8;
        }
        if i < name.len() {
            h = mix(h, partial(name, i, name.len() - i));
        }
        mix(h, name.len() as u64)
    }
}

/// Whether two byte strings of the same length are equal, compared eight bytes at a time
/// without a call (names are short; most lookups compare a name once, found).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    debug_assert_eq!(n, b.len());
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if word(a, i) != word(b, i) {
                return false;
            }
            i += 8;
        }
        word(a, n - 8) == word(b, n - 8)
    } else {
        a == b
    }
}

/// Frame names interned while lines are read: each distinct name once, numbered in
/// order of appearance, its bytes in one arena.
struct Names {
    /// (id, start, len) of each name.
    table: hashbrown::HashTable<(u32, u32, u32)>,
    spans: Vec<(u32, u32)>,
    bytes: Vec<u8>,
    hasher: NameHasher,
}

impl Names {
    fn new() -> Self {
        Names {
            table: hashbrown::HashTable::new(),
            spans: Vec::new(),
            bytes: Vec::new(),
            hasher: NameHasher::new(),
        }
    }

    fn get(&self, id: u32) -> &[u8] {
        let (s, l) = self.spans[id as usize];
        &self.bytes[s as usize..(s + l) as usize]
    }

    /// The number of `name` (whose hash is `h`); `None` when the distinct names exceed
    /// 4 GiB.
    #[inline]
    fn id(&mut self, name: &[u8], h: u64) -> Option<u32> {
        let bytes = &self.bytes;
        if let Some(&(id, _, _)) = self.table.find(h, |&(_, s, l)| {
            l as usize == name.len() && same(&bytes[s as usize..s as usize + name.len()], name)
        }) {
            return Some(id);
        }
        let id = u32::try_from(self.spans.len())
            .ok()
            .filter(|&i| i < u32::MAX)?;
        let start = u32::try_from(self.bytes.len()).ok()?;
        let len = u32::try_from(name.len()).ok()?;
        start.checked_add(len)?;
        self.bytes.extend_from_slice(name);
        self.spans.push((start, len));
        let (bytes, hasher) = (&self.bytes, self.hasher);
        self.table.insert_unique(h, (id, start, len), |&(_, s, l)| {
            hasher.hash(&bytes[s as usize..(s + l) as usize])
        });
        Some(id)
    }
}

/// The distinct frame names of one folded input exceed 4 GiB.
struct TooManyNames;

struct Splitter {
    names: Names,
    ids: Vec<u32>,
    /// The previous line: its bytes' range, and where each of its frames ends in it.
    prev: (usize, usize),
    prev_ids: usize,
    prev_ends: Vec<usize>,
    ends: Vec<usize>,
}

impl Splitter {
    fn new() -> Self {
        Splitter {
            names: Names::new(),
            ids: Vec::new(),
            prev: (0, 0),
            prev_ids: 0,
            prev_ends: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Splits the stack `data[s..e]`: returns where its ids start and how many frames.
    fn split(&mut self, data: &[u8], s: usize, e: usize) -> Result<(usize, u32), TooManyNames> {
        let line = &data[s..e];
        let prev = &data[self.prev.0..self.prev.1];
        let common = common_prefix(line, prev);
        // Frames of the previous line that end inside the common bytes, at a frame
        // boundary of both lines, are this line's too.
        let boundary = |x: &[u8], at: usize| at == x.len() || x[at] == b';';
        let mut keep = 0;
        while keep < self.prev_ends.len() {
            let end = self.prev_ends[keep];
            if end <= common && boundary(line, end) && boundary(prev, end) {
                keep += 1;
            } else {
                break;
            }
        }
        let start = self.ids.len();
        self.ids
            .extend_from_within(self.prev_ids..self.prev_ids + keep);
        self.ends.clear();
        self.ends.extend_from_slice(&self.prev_ends[..keep]);
        let mut from = match self.ends.last() {
            Some(&end) => end + 1,
            None => 0,
        };
        while from <= line.len() {
            let (end, h) = self.names.hasher.next(line, from);
            let id = self.names.id(&line[from..end], h).ok_or(TooManyNames)?;
            self.ids.push(id);
            self.ends.push(end);
            from = end + 1;
        }
        std::mem::swap(&mut self.ends, &mut self.prev_ends);
        self.prev = (s, e);
        self.prev_ids = start;
        Ok((start, (self.ids.len() - start) as u32))
    }
}

/// Collapses folded input (see [`crate::collapse`]).
///
/// Unless [`Options::keep_order`] is set, each line's frames are named by small integers
/// as the lines are read (each distinct name hashed once per line at most, frames shared
/// with the previous line reused), the lines are sorted by those integer sequences, and
/// the stack tree is built from the sorted sequences by appending nodes: lines under one
/// prefix are contiguous once sorted, so no node is ever looked up. Sample rows then come
/// in stack order rather than input order, which only a flame chart cares about.
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut out = Collapsed {
        profile: Profile::new(EventInfo::default()),
        ..Default::default()
    };
    let mut two_counts: Option<bool> = None;
    let mut warnings = Warnings::new(input.name, opts);
    let data = input.data;
    let mut lines: Vec<Line> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut splitter = Splitter::new();
    let (mut total1, mut total2) = (0u64, 0u64);
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
        let (stack, c1, c2, lossy) = match split_line(line) {
            Ok(parts) => parts,
            Err(bad) => {
                let (message, reason) = match bad {
                    BadCount::Missing => (
                        "no sample count at the end of the line",
                        SkipReason::MalformedLine,
                    ),
                    BadCount::Negative => ("negative sample count", SkipReason::NegativeCount),
                    BadCount::TooLarge => (
                        "sample count does not fit in 64 bits",
                        SkipReason::WeightTooLarge,
                    ),
                };
                warnings.warn(lineno, message, line)?;
                out.stats.skip(reason);
                continue;
            }
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
        let c2 = c2.unwrap_or(0);
        match (total1.checked_add(c1), total2.checked_add(c2)) {
            (Some(t1), Some(t2)) => (total1, total2) = (t1, t2),
            _ => {
                return Err(CollapseError::WeightOverflow(crate::Warning::new(
                    input.name,
                    lineno,
                    "the counts add up to more than 2^64-1",
                    line,
                )))
            }
        }
        if opts.keep_order {
            lines.push(Line {
                start: line_start,
                len: stack.len() as u32,
                c1,
                c2,
            });
        } else {
            let (at, frames) = splitter
                .split(data, line_start, line_start + stack.len())
                .map_err(|TooManyNames| {
                    CollapseError::Model(kiln_model::ModelError::TooMany {
                        what: "bytes of distinct frame names",
                        limit: u64::from(u32::MAX),
                    })
                })?;
            rows.push(Row {
                key: 0,
                lcp: 0,
                frames,
                at,
                c1,
                c2,
                next: [0; 4],
            });
        }
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
            if let Some(a) = after.as_mut() {
                let node = reuse_after.stack(a, slice(l)).expect("non-empty stack");
                a.samples.push(node, l.c2, NO_TIME, ThreadId::NONE);
            }
        }
    } else {
        let Splitter { names, ids, .. } = splitter;
        group_by_prefix(&mut rows, &ids);
        build_sorted(&mut out.profile, &names, &rows, &ids, |r| r.c1);
        if let Some(a) = after.as_mut() {
            build_sorted(a, &names, &rows, &ids, |r| r.c2);
        }
    }
    out.after = after;
    out.stats.warnings = warnings.count;
    out.warnings = warnings.list;
    Ok(out)
}

/// Orders `rows` so that every group of rows sharing a prefix of frames is contiguous,
/// and sets each row's `lcp`: an MSD radix sort on frame ids, two depths at a time. At
/// each pass the ids of those depths are read into the sort key (the rows' ids are
/// scattered in the arena; comparing whole sequences would read them again at every
/// comparison, and sorting took 40% of reading a 600,000-stack file that way), the group
/// is sorted by it, and each run of equal keys is grouped by the next two depths. A row
/// stops taking part once alone in its group. The order among groups is that of the ids,
/// which carries no meaning: the tree built from it is the same.
fn group_by_prefix(rows: &mut [Row], ids: &[u32]) {
    // Groups still to sort: (start, end, depth). Each pass groups by two depths.
    let mut work: Vec<(usize, usize, usize)> = vec![(0, rows.len(), 0)];
    while let Some((a, b, depth)) = work.pop() {
        if b - a < 2 {
            continue;
        }
        let group = &mut rows[a..b];
        for it in group.iter_mut() {
            let (at, frames) = (it.at, it.frames as usize);
            let d = depth % 4;
            if d == 0 {
                let from = (at + depth).min(at + frames);
                let to = (from + 4).min(at + frames);
                it.next = [0; 4];
                for (k, &id) in ids[from..to].iter().enumerate() {
                    it.next[k] = id + 1;
                }
            }
            it.key = (u64::from(it.next[d]) << 32) | u64::from(it.next[d + 1]);
        }
        // The group's first row shares with its predecessor what the group's does.
        let inherited = group[0].lcp;
        group.sort_unstable_by_key(|it| it.key);
        group[0].lcp = inherited;
        let mut i = 0;
        while i < group.len() {
            let key = group[i].key;
            if i > 0 {
                // Same id at this depth as the run before: one more frame shared.
                let same_first = group[i - 1].key >> 32 == key >> 32;
                group[i].lcp = depth as u32 + u32::from(same_first);
            }
            let mut j = i + 1;
            while j < group.len() && group[j].key == key {
                j += 1;
            }
            let (first, second) = (key >> 32, key & 0xffff_ffff);
            if first == 0 || second == 0 {
                // Rows that end within these two depths are identical: each shares all
                // its frames with the one before it.
                for it in &mut group[i + 1..j] {
                    it.lcp = it.frames;
                }
            } else if j - i > 1 {
                work.push((a + i, a + j, depth + 2));
            }
            i = j;
        }
    }
}

/// Builds the stack tree of `p` from the lines in `order` (lines under one prefix
/// contiguous): each frame that differs from the previous line's at its depth is a new
/// node, appended without a lookup. One sample row per line, weighing `count`.
fn build_sorted(
    p: &mut Profile,
    names: &Names,
    order: &[Row],
    ids: &[u32],
    count: impl Fn(&Row) -> u64,
) {
    const NEW: FrameId = FrameId(u32::MAX);
    let mut frames = vec![NEW; names.spans.len()];
    let mut nodes: Vec<StackId> = Vec::new();
    p.samples.stack.reserve(order.len());
    p.samples.weight.reserve(order.len());
    p.samples.time.reserve(order.len());
    p.samples.thread.reserve(order.len());
    for g in order {
        let keep = g.lcp as usize;
        nodes.truncate(keep);
        for &id in &ids[g.at + keep..g.at + g.frames as usize] {
            let f = match frames[id as usize] {
                NEW => {
                    let f = p.frame(names.get(id), FrameKind::Unknown);
                    frames[id as usize] = f;
                    f
                }
                f => f,
            };
            let parent = nodes.last().copied();
            nodes.push(p.stacks.push_new(parent, f));
        }
        let node = *nodes.last().expect("non-empty stack");
        p.samples.push(node, count(g), NO_TIME, ThreadId::NONE);
    }
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
    fn counts_that_cannot_be_weights_are_malformed_lines_with_their_reason() {
        let c = run("main;a 99999999999999999999\nmain;b -5\nmain;c 3\nmain;d x\n");
        assert_eq!((c.stats.read, c.stats.kept), (4, 1));
        assert_eq!(c.stats.skipped.get(&SkipReason::WeightTooLarge), Some(&1));
        assert_eq!(c.stats.skipped.get(&SkipReason::NegativeCount), Some(&1));
        assert_eq!(c.stats.skipped.get(&SkipReason::MalformedLine), Some(&1));
        assert_eq!(c.stats.warnings, 3);
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "t:1: sample count does not fit in 64 bits: main;a 99999999999999999999",
                "t:2: negative sample count: main;b -5",
                "t:4: no sample count at the end of the line: main;d x",
            ]
        );
        assert_eq!(folded(&c.profile), "main;c 3\n");
        // A first line with a negative count is one bad line, not a bad file.
        let c = run("main;a -1\nmain;b 2\n");
        assert_eq!((c.stats.kept, c.stats.warnings), (1, 1));
    }

    #[test]
    fn a_total_beyond_64_bits_is_an_error_not_a_saturated_sum() {
        let data = b"main;a 18446744073709551615\nmain;b 18446744073709551615\n";
        let e = collapse(
            Input {
                name: "big.folded",
                data,
            },
            &Options::default(),
        )
        .unwrap_err();
        assert!(matches!(e, CollapseError::WeightOverflow(_)), "{e:?}");
        assert!(
            e.to_string().starts_with(
                "big.folded: the weights of the samples add up to more than 18446744073709551615"
            ) && e.to_string().contains("line 2"),
            "{e}"
        );
        // Up to 2^64-1 in total is fine.
        let c = run("main;a 18446744073709551614\nmain;b 1\n");
        assert_eq!(c.profile.total_weight(), u64::MAX);
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count(b"12"), Ok((12, false)));
        assert_eq!(parse_count(b"1.5"), Ok((2, true)));
        assert_eq!(parse_count(b"3.0"), Ok((3, false)));
        assert_eq!(parse_count(b"x"), Err(BadCount::Missing));
        assert_eq!(parse_count(b"-"), Err(BadCount::Missing));
        assert_eq!(parse_count(b"-5"), Err(BadCount::Negative));
        assert_eq!(
            parse_count(b"-99999999999999999999"),
            Err(BadCount::Negative)
        );
        assert_eq!(parse_count(b"18446744073709551615"), Ok((u64::MAX, false)));
        assert_eq!(
            parse_count(b"18446744073709551616"),
            Err(BadCount::TooLarge)
        );
        assert_eq!(
            parse_count(b"18446744073709551615.5"),
            Err(BadCount::TooLarge)
        );
        assert_eq!(
            parse_count(b"99999999999999999999999"),
            Err(BadCount::TooLarge)
        );
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
