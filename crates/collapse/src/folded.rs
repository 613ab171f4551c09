//! Folded stacks: `frame;frame;frame count`, one stack per line, root first.
//!
//! Also reads the two-count form `stack before after` of differential flame graphs
//! (`difffolded.pl` output). bcc tools' `-f` output is this format.
use crate::perf::ReadError;
use crate::{CollapseError, Collapsed, Input, Options, SkipReason, Warnings};
use kiln_model::input::{MAX_NAMES, MAX_STACK_DEPTH};
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
/// counts, and what grouping needs (see [`group_by_prefix`]). Other readers that build a
/// stack tree from many paths (pprof's samples) use it too: [`Row::path`].
#[derive(Clone, Copy, Debug)]
pub struct Row {
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

impl Row {
    /// A path to group: `ids[at..at + frames]` (root first), carrying `value` along (a
    /// sample's index, say).
    pub fn path(at: usize, frames: u32, value: u64) -> Row {
        Row {
            key: 0,
            lcp: 0,
            frames,
            at,
            c1: value,
            c2: 0,
            next: [0; 4],
        }
    }

    /// Where its ids start.
    pub fn at(&self) -> usize {
        self.at
    }

    /// How many ids it has.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// The value given to [`Row::path`].
    pub fn value(&self) -> u64 {
        self.c1
    }

    /// Once grouped: how many of its first ids it shares with the row before it. Each id
    /// past those is a node no row before it has, which a builder appends without a
    /// lookup ([`kiln_model::StackTable::push_new`]).
    pub fn shared(&self) -> u32 {
        self.lcp.min(self.frames)
    }
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
    /// [`MAX_NAMES`] or 4 GiB.
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
            .filter(|&i| (i as usize) < MAX_NAMES)?;
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

/// The distinct frame names of one folded input exceed [`MAX_NAMES`] or 4 GiB.
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

    /// A new block of input: the previous line is gone.
    fn new_block(&mut self) {
        self.prev = (0, 0);
        self.prev_ends.clear();
    }

    /// Renumbers the names in the order of their bytes (ids then depend only on the set
    /// of names, not on the order they were met in).
    fn renumber_by_name(&mut self) {
        let names = &mut self.names;
        let mut order: Vec<u32> = (0..names.spans.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| names.get(a).cmp(names.get(b)));
        let mut new_id = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        for id in self.ids.iter_mut() {
            *id = new_id[*id as usize];
        }
        let spans: Vec<(u32, u32)> = order.iter().map(|&o| names.spans[o as usize]).collect();
        names.spans = spans;
        for e in names.table.iter_mut() {
            e.0 = new_id[e.0 as usize];
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

/// What a reader of folded lines builds across the blocks it reads: frame ids and rows
/// (or, keeping the input order, the lines), and the arity of the file once known.
struct Parsed {
    splitter: Splitter,
    rows: Vec<Row>,
    lines: Vec<Line>,
    /// Stack bytes of `lines` (keeping the input order).
    line_bytes: Vec<u8>,
    /// Whether the lines have two counts: decided by the first line with a count.
    two_counts: Option<bool>,
}

impl Parsed {
    fn new(two_counts: Option<bool>) -> Self {
        Parsed {
            splitter: Splitter::new(),
            rows: Vec::new(),
            lines: Vec::new(),
            line_bytes: Vec::new(),
            two_counts,
        }
    }
}

/// What reading one block gave, apart from the rows.
struct BlockOut {
    idx: usize,
    lines: u64,
    stats: crate::Stats,
    warnings: Vec<crate::Warning>,
    warned: u64,
    totals: (u64, u64),
}

impl BadCount {
    /// What a line with this count says, and the reason its sample is skipped.
    fn why(self) -> (&'static str, SkipReason) {
        match self {
            BadCount::Missing => (
                "no sample count at the end of the line",
                SkipReason::MalformedLine,
            ),
            BadCount::Negative => ("negative sample count", SkipReason::NegativeCount),
            BadCount::TooLarge => (
                "sample count does not fit in 64 bits",
                SkipReason::WeightTooLarge,
            ),
        }
    }
}

/// Why a line of good counts is still left out: one count where the file (its first
/// line) has two or the other way round, an empty stack, a stack too deep.
#[inline]
fn refused(
    two_counts: &mut Option<bool>,
    stack: &[u8],
    is_two: bool,
) -> Option<(&'static str, SkipReason)> {
    match *two_counts {
        None => *two_counts = Some(is_two),
        Some(t) if t != is_two => {
            let message = if t {
                "one count where the file has two (before and after)"
            } else {
                "two counts where the file has one"
            };
            return Some((message, SkipReason::MalformedLine));
        }
        _ => {}
    }
    if stack.is_empty() {
        return Some(("empty stack", SkipReason::EmptyStack));
    }
    // Only a line this long can hold that many frames: others are not counted.
    if stack.len() >= 2 * MAX_STACK_DEPTH
        && memchr::memchr_iter(b';', stack).count() >= MAX_STACK_DEPTH
    {
        return Some((
            "stack deeper than the most frames kiln keeps in one stack (1,048,576)",
            SkipReason::TooDeep,
        ));
    }
    None
}

impl Parsed {
    /// Keeps a line's stack (`data[line_start..]`, `stack` long) and its counts: as it
    /// is when the order is kept, else split into frames for sorting.
    #[inline]
    fn keep(
        &mut self,
        opts: &Options,
        data: &[u8],
        line_start: usize,
        stack: &[u8],
        (c1, c2): (u64, u64),
    ) -> Result<(), CollapseError> {
        if opts.keep_order {
            self.lines.push(Line {
                start: self.line_bytes.len(),
                len: stack.len() as u32,
                c1,
                c2,
            });
            self.line_bytes.extend_from_slice(stack);
        } else {
            let (at, frames) = self
                .splitter
                .split(data, line_start, line_start + stack.len())
                .map_err(|TooManyNames| too_many_names())?;
            self.rows.push(Row {
                key: 0,
                lcp: 0,
                frames,
                at,
                c1,
                c2,
                next: [0; 4],
            });
        }
        Ok(())
    }
}

/// Reads the lines of one block into `p`, numbering them from 1 (the caller adds the
/// lines of the blocks before).
fn read_block<'n>(
    name: &'n str,
    data: &[u8],
    p: &mut Parsed,
    opts: &Options,
) -> Result<(u64, crate::Stats, Warnings<'n>, (u64, u64)), CollapseError> {
    let mut stats = crate::Stats::default();
    let mut warnings = Warnings::new(name, opts);
    let mut totals = (0u64, 0u64);
    p.splitter.new_block();
    let mut pos = 0;
    let mut lineno = 0;
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
        stats.read += 1;
        let (stack, c1, c2, lossy) = match split_line(line) {
            Ok(parts) => parts,
            Err(bad) => {
                let (message, reason) = bad.why();
                warnings.warn(lineno, message, line)?;
                stats.skip(reason);
                continue;
            }
        };
        if lossy {
            warnings.warn(lineno, "fractional count rounded to an integer", line)?;
        }
        if let Some((message, reason)) = refused(&mut p.two_counts, stack, c2.is_some()) {
            warnings.warn(lineno, message, line)?;
            stats.skip(reason);
            continue;
        }
        let c2 = c2.unwrap_or(0);
        match (totals.0.checked_add(c1), totals.1.checked_add(c2)) {
            (Some(t1), Some(t2)) => totals = (t1, t2),
            _ => {
                return Err(CollapseError::WeightOverflow(crate::Warning::new(
                    name,
                    lineno,
                    "the counts add up to more than 2^64-1",
                    line,
                )))
            }
        }
        p.keep(opts, data, line_start, stack, (c1, c2))?;
        stats.kept += 1;
    }
    Ok((lineno, stats, warnings, totals))
}

fn too_many_names() -> CollapseError {
    CollapseError::Model(kiln_model::ModelError::TooMany {
        what: "distinct frame names (or 4 GiB of their bytes)",
        limit: MAX_NAMES as u64,
    })
}

/// Where a block of folded text may end: after its last newline.
fn line_cut(buf: &[u8]) -> Option<usize> {
    memchr::memrchr(b'\n', buf).map(|p| p + 1)
}

/// The arity of a folded file: whether its first line with a count has two.
fn first_arity(data: &[u8]) -> Option<bool> {
    data.split(|&c| c == b'\n')
        .map(trim_end)
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .find_map(|l| split_line(l).ok())
        .map(|(_, _, c2, _)| c2.is_some())
}

/// A thread reading blocks of folded text.
struct FoldedWorker {
    parsed: Parsed,
    blocks: Vec<BlockOut>,
    error: Option<(usize, CollapseError)>,
}

/// Collapses folded input (a [`crate::Collapser`]).
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut data = input.data;
    collapse_reader(input.name, &mut data, opts).map_err(|e| match e {
        ReadError::Collapse(e) => e,
        ReadError::Io(e) => unreachable!("reading a slice cannot fail: {e}"),
    })
}

/// Collapses folded input from a reader, in blocks: only the frame ids of each line are
/// kept (4 bytes a frame), not the text. With `opts.perf.threads` above 1 the blocks are
/// read in parallel (the first block must say whether the file has one count a line or
/// two); 0 means one thread here.
///
/// Unless [`Options::keep_order`] is set, each line's frames are named by small integers
/// as the lines are read (each distinct name hashed once per line at most, frames shared
/// with the previous line reused), the lines are grouped by those integer sequences, and
/// the stack tree is built from the grouped sequences by appending nodes: lines under one
/// prefix are contiguous once grouped, so no node is ever looked up. Sample rows then come
/// in stack order rather than input order, which only a flame chart cares about.
pub fn collapse_reader(
    name: &str,
    reader: &mut dyn std::io::Read,
    opts: &Options,
) -> Result<Collapsed, ReadError> {
    // One thread unless asked for more: on this 2-core machine under the usual load, a
    // second thread's own name table and the joining cost more than they saved (615,000
    // stacks: 2.7-3.0 s against 3.5-4.5 s wall at a load average of 11; 20% faster only
    // on an idle machine).
    let threads = opts.perf.threads.max(1);
    // Larger blocks than perf text's: folded files are read for rendering, where a few
    // MiB in flight matter less than handing 1,000 blocks between threads.
    let block = if opts.perf.block_bytes == 0 {
        4 * crate::blocks::BLOCK
    } else {
        opts.perf.block_bytes
    };
    let mut blocks = crate::blocks::BlockReader::new(reader, block, line_cut);
    let Some(first) = blocks.next_block(crate::blocks::Block::default())? else {
        return Ok(Collapsed {
            profile: Profile::new(EventInfo::default()),
            ..Default::default()
        });
    };
    // Parts read in parallel must agree on the arity, decided by the first line with a
    // count: when the first block has none, one thread reads in order. Input order kept:
    // one thread.
    let arity = first_arity(first.data());
    let threads = if arity.is_none() || opts.keep_order {
        1
    } else {
        threads
    };
    let make = || FoldedWorker {
        parsed: Parsed::new(arity),
        blocks: Vec::new(),
        error: None,
    };
    let parse = |w: &mut FoldedWorker, idx: usize, data: &[u8]| match read_block(
        name,
        data,
        &mut w.parsed,
        opts,
    ) {
        Ok((lines, stats, warnings, totals)) => {
            w.blocks.push(BlockOut {
                idx,
                lines,
                stats,
                warned: warnings.count,
                warnings: warnings.list,
                totals,
            });
            true
        }
        Err(e) => {
            w.error = Some((idx, e));
            false
        }
    };
    let (workers, read_error) = crate::blocks::drive(&mut blocks, first, threads, &make, &parse);
    if let Some(e) = read_error {
        return Err(ReadError::Io(e));
    }
    Ok(assemble(workers, name, opts)?)
}

/// Joins what the workers read: stats and warnings in input order (line numbers made
/// relative to the whole input), frame ids in the first worker's numbering (then, with
/// several workers, renumbered by name so the result does not depend on which worker read
/// which block), totals checked; then groups the rows and builds the tree.
fn assemble(
    mut workers: Vec<FoldedWorker>,
    name: &str,
    opts: &Options,
) -> Result<Collapsed, CollapseError> {
    let input = crate::blocks::InputOrder::new(workers.iter().map(|w| {
        w.blocks
            .iter()
            .map(|b| (b.idx, b.lines))
            .collect::<Vec<_>>()
    }));
    let first_error = workers
        .iter_mut()
        .filter_map(|w| w.error.take())
        .min_by_key(|(i, _)| *i);
    if let Some((idx, e)) = first_error {
        return Err(input.in_input(idx, e));
    }
    let mut out = Collapsed {
        profile: Profile::new(EventInfo::default()),
        ..Default::default()
    };
    join_block_stats(&mut workers, &input, name, opts, &mut out)?;
    let main = merge_workers(workers)?;
    build_profiles(main, opts, &mut out);
    Ok(out)
}

/// Adds every block's counts and warnings to `out`, in input order (warnings' lines
/// relative to the whole input), and checks that the counts' totals fit in 64 bits.
fn join_block_stats(
    workers: &mut [FoldedWorker],
    input: &crate::blocks::InputOrder,
    name: &str,
    opts: &Options,
    out: &mut Collapsed,
) -> Result<(), CollapseError> {
    let mut warned = 0;
    let mut totals = (0u64, 0u64);
    for &(idx, wi, bi) in &input.blocks {
        let b = &mut workers[wi].blocks[bi];
        out.stats.add(&b.stats);
        warned += b.warned;
        input.warnings(
            idx,
            std::mem::take(&mut b.warnings),
            &mut out.warnings,
            opts.max_warnings,
        );
        match (
            totals.0.checked_add(b.totals.0),
            totals.1.checked_add(b.totals.1),
        ) {
            (Some(t1), Some(t2)) => totals = (t1, t2),
            _ => {
                return Err(CollapseError::WeightOverflow(crate::Warning::new(
                    name,
                    0,
                    "the counts add up to more than 2^64-1",
                    b"",
                )))
            }
        }
    }
    out.stats.warnings = warned;
    Ok(())
}

/// The workers' lines in one [`Parsed`]: the first worker's, with every other's names
/// mapped into its table and its rows appended (names renumbered by name when there were
/// several, so the ids do not depend on how the input was split).
fn merge_workers(workers: Vec<FoldedWorker>) -> Result<Parsed, CollapseError> {
    let mut it = workers.into_iter().map(|w| w.parsed);
    let mut main = it.next().unwrap_or_else(|| Parsed::new(None));
    let several = it.len() > 0;
    for p in it {
        let names = &mut main.splitter.names;
        let map: Vec<u32> = (0..p.splitter.names.spans.len() as u32)
            .map(|id| {
                let bytes = p.splitter.names.get(id);
                let h = names.hasher.hash(bytes);
                names.id(bytes, h)
            })
            .collect::<Option<_>>()
            .ok_or_else(too_many_names)?;
        let offset = main.splitter.ids.len();
        main.splitter
            .ids
            .extend(p.splitter.ids.iter().map(|&id| map[id as usize]));
        main.rows.extend(p.rows.iter().map(|r| Row {
            at: r.at + offset,
            ..*r
        }));
        main.two_counts = main.two_counts.or(p.two_counts);
    }
    if several {
        main.splitter.renumber_by_name();
    }
    Ok(main)
}

/// Builds `out`'s profile (and the second count's, for differential input) from the
/// merged lines: in input order with `keep_order`, else from the rows grouped by prefix.
fn build_profiles(main: Parsed, opts: &Options, out: &mut Collapsed) {
    let Parsed {
        splitter,
        mut rows,
        lines,
        line_bytes,
        two_counts,
    } = main;
    let mut after = (two_counts == Some(true)).then(|| Profile::new(EventInfo::default()));
    if opts.keep_order {
        let slice = |l: &Line| &line_bytes[l.start..l.start + l.len as usize];
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
}

/// Orders `rows` so that every group of rows sharing a prefix of frames is contiguous,
/// and sets each row's `lcp`: an MSD radix sort on frame ids, two depths at a time. At
/// each pass the ids of those depths are read into the sort key (the rows' ids are
/// scattered in the arena; comparing whole sequences would read them again at every
/// comparison, and sorting took 40% of reading a 600,000-stack file that way), the group
/// is sorted by it, and each run of equal keys is grouped by the next two depths. A row
/// stops taking part once alone in its group. The order among groups is that of the ids,
/// which carries no meaning: the tree built from it is the same.
pub fn group_by_prefix(rows: &mut [Row], ids: &[u32]) {
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
    // The nodes to append: each row's frames beyond those it shares with the one before.
    let new_nodes: usize = order
        .iter()
        .map(|r| (r.frames - r.lcp.min(r.frames)) as usize)
        .sum();
    p.stacks.reserve(new_nodes);
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

    /// Blocks read by several threads give the same profile, stats and warnings (line
    /// numbers of later blocks included) as one thread, for one and two counts, and strict
    /// mode's error is the first one in the file.
    #[test]
    fn two_halves_read_in_parallel_give_what_one_thread_gives() {
        for two in [false, true] {
            let mut text = String::new();
            let mut i = 0u64;
            while text.len() < 1 << 20 {
                let count = if two {
                    format!("{} {}", i % 7, i % 5)
                } else {
                    format!("{}", i % 9 + 1)
                };
                text.push_str(&format!(
                    "root{};mid{};leaf{} {count}\n",
                    i % 3,
                    i % 11,
                    i % 101
                ));
                if i % 3_000 == 7 {
                    text.push_str("a broken line\nmain;neg -4\n");
                }
                i += 1;
            }
            let with = |threads: usize, strict: bool| {
                collapse(
                    Input {
                        name: "big",
                        data: text.as_bytes(),
                    },
                    &Options {
                        strict,
                        perf: crate::perf::PerfOptions {
                            threads,
                            block_bytes: if threads == 1 { 0 } else { 4096 },
                            ..Default::default()
                        },
                        ..Default::default()
                    },
                )
            };
            let (one, both) = (with(1, false).unwrap(), with(3, false).unwrap());
            assert_eq!(folded(&one.profile), folded(&both.profile));
            assert_eq!(
                one.after.as_ref().map(folded),
                both.after.as_ref().map(folded)
            );
            assert_eq!(one.stats, both.stats);
            assert!(one.stats.warnings > 10);
            assert_eq!(one.warnings, both.warnings);
            let e1 = with(1, true).unwrap_err().to_string();
            let e2 = with(3, true).unwrap_err().to_string();
            assert_eq!(e1, e2);
        }
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
