//! The text of `perf script`: a header line per sample, then its stack, leaf first, one
//! frame per line, then a blank line.
//!
//! ```text
//! beam.smp 12688/12764 [001] 6544038.708352:   10101010 cpu-clock:
//!         7f1e2215d058 $rabbit_exchange:route/2+0x58 (/tmp/perf-12688.map)
//!         55d0c3a1b2c4 process_main+0x1c4 (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)
//!
//! rabbitmq 412 [000] 17.5: syscalls:sys_enter_mmap: addr: 0x00000000, len: 0x00040000
//!         7f3a… __mmap+0x1a (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! ```
//!
//! Compatible with `stackcollapse-perf.pl` and `inferno-collapse-perf` (same root frame,
//! same tidying of names, same annotations, same default of keeping only the first event
//! seen), with these differences, each of which keeps a sample the others lose:
//!
//! * the header is read by anchoring on the timestamp (`123.456:`), so any comm (with
//!   spaces, digits, colons, `:-1`) and any event with argument text is understood;
//! * a symbol starting with `(` (`(anonymous namespace)::f`) is a frame, not a process
//!   name to skip;
//! * a sample without a call chain (the frame printed on the header line) is kept;
//! * a sample whose stack could not be read at all still counts, with its root frame.
use crate::blocks::{Block, BlockReader, BLOCK};
use crate::{CollapseError, Collapsed, Input, Options, SkipReason, Stats, Warning, Warnings};
use hashbrown::HashTable;
use kiln_model::{EventInfo, FrameId, FrameKind, Profile, StackId, ThreadId, WeightUnit, NO_TIME};
use std::hash::{BuildHasher, Hasher};
use std::io::Read;

/// How each perf sample is weighted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PerfWeight {
    /// Each sample counts its period where perf printed one (nanoseconds for cpu-clock,
    /// events otherwise), else 1: what stackcollapse-perf.pl and inferno do.
    #[default]
    Period,
    /// Each sample counts 1.
    Samples,
}

/// Options of the `perf script` collapser. Defaults match `stackcollapse-perf.pl`.
#[derive(Clone, Debug, Default)]
pub struct PerfOptions {
    /// Root frame `comm-PID` instead of `comm`. Default: false.
    pub include_pid: bool,
    /// Root frame `comm-PID/TID` (implies `include_pid`). Default: false.
    pub include_tid: bool,
    /// Append `_[k]` to kernel frames. Default: false.
    pub annotate_kernel: bool,
    /// Append `_[j]` to JIT frames (from `/tmp/perf-PID.map`). Default: false.
    pub annotate_jit: bool,
    /// Append `_[i]` to inlined frames (Java `a->b` chains, perf's `(inlined)` frames).
    /// Default: false.
    pub annotate_inline: bool,
    /// Name frames without a symbol `[module <0xADDR>]` instead of `[module]`. Default: false.
    pub include_addrs: bool,
    /// Keep only samples of this event. Default: `None`, meaning the first event seen.
    pub event_filter: Option<String>,
    /// Sample weighting. Default: one per sample.
    pub weight: PerfWeight,
    /// Parser threads; 0 means one per available core for `perf script` text and one for
    /// folded stacks (see [`crate::folded::collapse_reader`]). Default: 0.
    pub threads: usize,
    /// Keep one row per distinct stack with the summed weight, dropping per-sample
    /// timestamps and threads: all that folded output and SVG rendering need, and much
    /// smaller and faster than a row per sample. Default: false.
    pub aggregate: bool,
    /// Size of the blocks the input is read and parsed in; 0 means 512 KiB. Tests set it
    /// small to exercise block boundaries. Default: 0.
    pub block_bytes: usize,
}

/// A parsed sample header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// The task's name.
    pub comm: &'a [u8],
    /// Process id (`None` when perf printed only the thread id, or `-1`).
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// The pid text as printed (`?` when absent), for `--pid` root frames.
    pub pid_text: &'a [u8],
    /// The tid text as printed.
    pub tid_text: &'a [u8],
    /// Timestamp in nanoseconds, or [`NO_TIME`].
    pub time: u64,
    /// The sample period, where printed.
    pub period: Option<u64>,
    /// A period was printed but does not fit in 64 bits (`period` is then `None`).
    pub period_too_large: bool,
    /// The event name without the trailing colon (`cpu-clock`, `sched:sched_switch`).
    pub event: &'a [u8],
    /// Text after the event: tracepoint arguments, or the frame of a sample without a
    /// call chain.
    pub trailing: &'a [u8],
}

/// Whether two byte strings of the same length are equal, eight bytes at a time without
/// a call (stack lines, symbols and task names are short, and compared millions of
/// times; `==` on slices calls memcmp).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    debug_assert_eq!(n, b.len());
    let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if w(a, i) != w(b, i) {
                return false;
            }
            i += 8;
        }
        w(a, n - 8) == w(b, n - 8)
    } else {
        a == b
    }
}

/// Finds newlines. `perf script` lines are short (50-150 bytes): the SSE2 searcher, built
/// once, finds them with less setup per line than `memchr::memchr`'s dispatch to AVX2
/// (10-15% less time to cut 100 MB into lines here).
#[derive(Clone, Copy)]
struct Newlines {
    #[cfg(target_arch = "x86_64")]
    sse2: Option<memchr::arch::x86_64::sse2::memchr::One>,
}

impl Newlines {
    fn new() -> Self {
        Newlines {
            #[cfg(target_arch = "x86_64")]
            sse2: memchr::arch::x86_64::sse2::memchr::One::new(b'\n'),
        }
    }

    /// The end of the line starting at `pos` (its newline, or the end of `data`).
    #[inline]
    fn line_end(&self, data: &[u8], pos: usize) -> usize {
        let rest = &data[pos..];
        #[cfg(target_arch = "x86_64")]
        let found = match &self.sse2 {
            Some(one) => one.find(rest),
            None => memchr::memchr(b'\n', rest),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let found = memchr::memchr(b'\n', rest);
        found.map_or(data.len(), |i| pos + i)
    }
}

#[inline]
fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn tokens(line: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return None;
        }
        let s = i;
        while i < line.len() && !is_space(line[i]) {
            i += 1;
        }
        Some((s, &line[s..i]))
    })
}

fn is_time_token(t: &[u8]) -> bool {
    let Some(t) = t.strip_suffix(b":") else {
        return false;
    };
    let Some(dot) = memchr::memchr(b'.', t) else {
        return false;
    };
    dot > 0
        && dot + 1 < t.len()
        && t[..dot].iter().all(u8::is_ascii_digit)
        && t[dot + 1..].iter().all(u8::is_ascii_digit)
}

fn parse_time(t: &[u8]) -> u64 {
    let t = &t[..t.len() - 1];
    let dot = memchr::memchr(b'.', t).unwrap_or(t.len());
    let mut secs: u64 = 0;
    for &c in &t[..dot] {
        secs = secs.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
    }
    let mut frac: u64 = 0;
    let mut digits = 0;
    for &c in t[dot + 1..].iter().take(9) {
        frac = frac * 10 + u64::from(c - b'0');
        digits += 1;
    }
    while digits < 9 {
        frac *= 10;
        digits += 1;
    }
    secs.saturating_mul(1_000_000_000).saturating_add(frac)
}

fn parse_id(t: &[u8]) -> Option<Option<u32>> {
    if t == b"-1" {
        return Some(None);
    }
    parse_u64(t).and_then(|v| u32::try_from(v).ok()).map(Some)
}

/// Process and thread ids as parsed, and as printed.
type Ids<'a> = (Option<u32>, Option<u32>, &'a [u8], &'a [u8]);

/// `pid/tid`, `tid`, `-1/-1` → (pid, tid, pid text, tid text).
fn parse_ids(t: &[u8]) -> Option<Ids<'_>> {
    match memchr::memchr(b'/', t) {
        Some(s) => {
            let (p, tt) = (&t[..s], &t[s + 1..]);
            Some((parse_id(p)?, parse_id(tt)?, p, tt))
        }
        None => Some((None, parse_id(t)?, b"?", t)),
    }
}

fn is_cpu_token(t: &[u8]) -> bool {
    t.len() > 2
        && t[0] == b'['
        && t[t.len() - 1] == b']'
        && t[1..t.len() - 1].iter().all(u8::is_ascii_digit)
}

/// Parses a sample header line; `None` if `line` is not one.
pub fn parse_header(line: &[u8]) -> Option<Header<'_>> {
    // perf right-aligns the comm in 16 columns when there is no call chain: skip padding.
    let pad = line.iter().take_while(|&&c| c == b' ').count();
    let l = &line[pad..];
    if l.first().is_none_or(|&c| is_space(c)) {
        return None;
    }
    // Fast path: the timestamp is the first token that ends in `:` and reads
    // `secs.frac:`; find it from the colons instead of cutting the line into tokens.
    // Within the first 120 bytes fewer than 64 tokens precede it, so the general path
    // (which reads 64 tokens) would find the same one; beyond, take the general path.
    let mut from = 0;
    while let Some(q) = memchr::memchr(b':', &l[from..]).map(|q| q + from) {
        if q >= 120 {
            break;
        }
        if q + 1 == l.len() || is_space(l[q + 1]) {
            let mut s = q;
            while s > 0 && !is_space(l[s - 1]) {
                s -= 1;
            }
            if is_time_token(&l[s..=q]) {
                return header_around_time(l, s, q + 1);
            }
        }
        from = q + 1;
    }
    parse_header_tokens(line)
}

/// The token of `l` that ends where blanks before `end` begin: (start, token).
fn token_before(l: &[u8], end: usize) -> (usize, &[u8]) {
    let mut e = end;
    while e > 0 && is_space(l[e - 1]) {
        e -= 1;
    }
    let mut s = e;
    while s > 0 && !is_space(l[s - 1]) {
        s -= 1;
    }
    (s, &l[s..e])
}

/// The token of `l` after the blanks at `start`: (start, token).
fn token_after(l: &[u8], start: usize) -> (usize, &[u8]) {
    let mut s = start;
    while s < l.len() && is_space(l[s]) {
        s += 1;
    }
    let mut e = s;
    while e < l.len() && !is_space(l[e]) {
        e += 1;
    }
    (s, &l[s..e])
}

/// The header whose timestamp token is `l[ts..te]`: ids (and cpu) before it, then the comm;
/// period and event after it.
fn header_around_time(l: &[u8], ts: usize, te: usize) -> Option<Header<'_>> {
    let (s1, t1) = token_before(l, ts);
    if t1.is_empty() {
        return None;
    }
    let (ids_start, ids) = if is_cpu_token(t1) {
        token_before(l, s1)
    } else {
        (s1, t1)
    };
    // The ids need a comm before them.
    if ids.is_empty() || ids_start == 0 {
        return None;
    }
    let (pid, tid, pid_text, tid_text) = parse_ids(ids)?;
    let mut ce = ids_start;
    while ce > 0 && is_space(l[ce - 1]) {
        ce -= 1;
    }
    let comm = &l[..ce];
    let (mut s, mut t) = token_after(l, te);
    let mut period = None;
    let mut period_too_large = false;
    if !t.is_empty() && t.iter().all(u8::is_ascii_digit) {
        period = parse_u64(t);
        period_too_large = period.is_none();
        (s, t) = token_after(l, s + t.len());
    }
    let (event, trailing): (&[u8], &[u8]) = if t.ends_with(b":") {
        (&t[..t.len() - 1], trim(&l[s + t.len()..]))
    } else if t.is_empty() {
        (b"", b"")
    } else {
        (b"", trim(&l[s..]))
    };
    Some(Header {
        comm,
        pid,
        tid,
        pid_text,
        tid_text,
        time: parse_time(&l[ts..te]),
        period,
        period_too_large,
        event,
        trailing,
    })
}

/// [`parse_header`] the general way: every token (the first 64) at hand; used for
/// headers without a timestamp.
fn parse_header_tokens(line: &[u8]) -> Option<Header<'_>> {
    // perf right-aligns the comm in 16 columns when there is no call chain: skip padding.
    let pad = line.iter().take_while(|&&c| c == b' ').count();
    let line = &line[pad..];
    if line.first().is_none_or(|&c| is_space(c)) {
        return None;
    }
    // Anchor on the timestamp: everything before the pid token is the comm.
    // Header lines have a dozen tokens at most (tracepoint arguments aside): keep the
    // first 64 on the stack, no allocation per sample.
    let mut buf: [(usize, &[u8]); 64] = [(0, &[]); 64];
    let mut n = 0;
    for t in tokens(line).take(64) {
        buf[n] = t;
        n += 1;
    }
    let toks = &buf[..n];
    let (k, after) = match toks.iter().position(|(_, t)| is_time_token(t)) {
        Some(k) => (k, k + 1),
        None => {
            // No timestamp printed: the first all-digit token after the first word.
            let k = toks
                .iter()
                .skip(1)
                .position(|(_, t)| parse_ids(t).is_some())?
                + 1;
            let mut after = k + 1;
            if after < toks.len() && is_cpu_token(toks[after].1) {
                after += 1;
            }
            (after, after)
        }
    };
    let time = if after == k + 1 {
        parse_time(toks[k].1)
    } else {
        NO_TIME
    };
    let mut j = k.checked_sub(1)?;
    if is_cpu_token(toks[j].1) {
        j = j.checked_sub(1)?;
    }
    if j == 0 {
        return None; // no comm
    }
    let (pid, tid, pid_text, tid_text) = parse_ids(toks[j].1)?;
    let comm_end = toks[j].0;
    let mut ce = comm_end;
    while ce > 0 && is_space(line[ce - 1]) {
        ce -= 1;
    }
    let comm = &line[..ce];
    // After the time: [period] event: [trailing]
    let mut i = after;
    let mut period = None;
    let mut period_too_large = false;
    if i < toks.len() && toks[i].1.iter().all(u8::is_ascii_digit) {
        period = parse_u64(toks[i].1);
        period_too_large = period.is_none();
        i += 1;
    }
    let (event, trailing): (&[u8], &[u8]) = if i < toks.len() && toks[i].1.ends_with(b":") {
        let (s, t) = toks[i];
        let rest_start = s + t.len();
        (&t[..t.len() - 1], trim(&line[rest_start..]))
    } else {
        let rest = toks.get(i).map_or(line.len(), |(s, _)| *s);
        (b"", trim(&line[rest..]))
    };
    Some(Header {
        comm,
        pid,
        tid,
        pid_text,
        tid_text,
        time,
        period,
        period_too_large,
        event,
        trailing,
    })
}

/// A decimal number of ASCII digits, `None` if empty or above `u64::MAX`.
fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    t.iter().try_fold(0u64, |v, &c| {
        v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })
}

/// Space, tab or carriage return: what [`trim`] removes.
#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r'
}

fn trim(s: &[u8]) -> &[u8] {
    let mut a = 0;
    while a < s.len() && is_blank(s[a]) {
        a += 1;
    }
    let mut b = s.len();
    while b > a && is_blank(s[b - 1]) {
        b -= 1;
    }
    &s[a..b]
}

/// Hexadecimal digits.
static HEX: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_hexdigit();
        c += 1;
    }
    t
};

/// A parsed stack line: (address, raw symbol, module).
pub fn parse_frame(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let line = trim(line);
    // The address: hex digits up to the first blank.
    let mut sp = 0;
    while sp < line.len() && HEX[usize::from(line[sp])] {
        sp += 1;
    }
    let (pc, rest) = match line.get(sp) {
        _ if sp == 0 => return None,
        None => (line, &b""[..]),
        Some(&c) if is_space(c) => (&line[..sp], trim(&line[sp..])),
        Some(_) => return None,
    };
    if rest.last() == Some(&b')') {
        // Fast path: the last `(` opens the module when it follows a space and nothing
        // but the final `)` closes inside it (module paths rarely hold parentheses).
        if let Some(i) = memchr::memrchr(b'(', rest) {
            let inner = &rest[i + 1..rest.len() - 1];
            if i > 0 && is_space(rest[i - 1]) && memchr::memchr(b')', inner).is_none() {
                return Some((pc, trim(&rest[..i]), inner));
            }
        }
        // The module is the last balanced parenthesised group.
        let mut depth = 0i32;
        for i in (0..rest.len()).rev() {
            match rest[i] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        if i == 0 || is_space(rest[i - 1]) {
                            let module = &rest[i + 1..rest.len() - 1];
                            let sym = trim(&rest[..i]);
                            return Some((pc, sym, module));
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // No module printed (`perf script -F ip,sym`).
    Some((pc, rest, b""))
}

fn event_matches(event: &[u8], filter: &[u8]) -> bool {
    if event == filter {
        return true;
    }
    // `cycles:ppp` matches `cycles`.
    if let Some(c) = memchr::memrchr(b':', event) {
        let m = &event[c + 1..];
        if !m.is_empty() && m.len() <= 6 && m.iter().all(|c| b"ukhpPGHISDWe".contains(c)) {
            return &event[..c] == filter;
        }
    }
    false
}

/// The event of the first sample header in `data`.
pub(crate) fn first_event(data: &[u8]) -> Option<&[u8]> {
    let mut pos = 0;
    let mut in_sample = false;
    while pos < data.len() {
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
        let line = &data[pos..end];
        pos = end + 1;
        if line.is_empty() || line == b"\r" {
            in_sample = false;
            continue;
        }
        if in_sample || line[0] == b'#' {
            continue;
        }
        in_sample = true;
        if let Some(h) = parse_header(line) {
            if !h.event.is_empty() {
                return Some(h.event);
            }
        }
    }
    None
}

#[derive(Clone, Copy)]
struct CacheEntry {
    sym_start: u32,
    sym_len: u32,
    mod_len: u32,
    java: bool,
    frames_start: u32,
    frames_len: u32,
    /// The nodes this frame led to from the last two parents it was seen under (a frame
    /// seen again under the same caller needs no tree lookup): (parent, node) pairs,
    /// most recent first.
    memo: [(u32, u32); 2],
}

/// "No node": the parent of a root.
const NONE: u32 = u32::MAX;

/// The call tree a parser thread builds: node `i` is `(parent, frame)`, every parent
/// before its children. Eight bytes a node and a four-byte index slot: with several
/// parser threads, each building the tree of what it read, the trees are most of the
/// memory a collapse needs, so they are kept smaller than the model's stack table (which
/// is built once, at the end, without an index).
struct Tree {
    nodes: Vec<(u32, u32)>,
    index: HashTable<u32>,
    /// How many nodes it may hold: every id below [`NONE`] by default (smaller in tests).
    cap: u32,
    /// A node was asked for past `cap`: the sample being read cannot be kept, and its
    /// parse ends with [`CollapseError::TooManyStacks`] (until then the parent stands in,
    /// so nothing indexes past the table).
    full: bool,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            index: HashTable::new(),
            cap: NONE,
            full: false,
        }
    }
}

#[inline]
fn node_hash(parent: u32, frame: u32) -> u64 {
    let k = (u64::from(parent) << 32) | u64::from(frame);
    let m = u128::from(k ^ 0x243f_6a88_85a3_08d3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Tree {
    /// The node for `frame` under `parent` ([`NONE`] for a root), created if new.
    #[inline]
    fn intern(&mut self, parent: u32, frame: FrameId) -> u32 {
        let key = (parent, frame.0);
        let h = node_hash(key.0, key.1);
        let nodes = &self.nodes;
        if let Some(&i) = self.index.find(h, |&i| nodes[i as usize] == key) {
            return i;
        }
        let Some(id) = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&i| i < self.cap)
        else {
            self.full = true;
            // A stand-in the caller may index with; the parse ends at the sample's end.
            return if parent == NONE { 0 } else { parent };
        };
        self.nodes.push(key);
        let nodes = &self.nodes;
        self.index.insert_unique(h, id, |&i| {
            node_hash(nodes[i as usize].0, nodes[i as usize].1)
        });
        id
    }
}

/// What the parser remembers of one task (comm, pid, tid) between its samples: its root
/// node, and its previous sample's stack lines with the node each line led to.
///
/// Consecutive samples of a thread share most of their callers, so a sample's stack is
/// compared with the previous one from the bottom (the root end), line by line, before
/// anything is looked up: the lines they share cost a short comparison of bytes that are
/// in cache, and their node is known without hashing.
struct Slot {
    /// Hash of `key`.
    hash: u64,
    /// comm, pid text and tid text, concatenated.
    key: Vec<u8>,
    comm_len: u32,
    pid_len: u32,
    /// The root node (the comm, with pid/tid as the options say).
    root: u32,
    /// Java names get their `L` prefix removed.
    java: bool,
    /// The thread, once a sample needed it ([`ThreadId::NONE`] before).
    thread: ThreadId,
    /// Where the previous sample's stack lines are, leaf first: (start, end) in the block
    /// being parsed while `in_block`, else in `body` (copied there when the block ends).
    lines: Vec<(usize, usize)>,
    in_block: bool,
    /// The previous sample's stack lines, once the block they were in is gone.
    body: Vec<u8>,
    /// `nodes[j]`: the node reached from the root through the `j` bottom lines;
    /// `nodes[0]` is the root. Stops below the first line that could not be read (its
    /// warning must be repeated when it repeats).
    nodes: Vec<u32>,
}

impl Slot {
    fn is(&self, h: &Header<'_>) -> bool {
        let (c, p) = (self.comm_len as usize, self.pid_len as usize);
        self.key.len() == c + p + h.tid_text.len()
            && c == h.comm.len()
            && p == h.pid_text.len()
            && same(&self.key[..c], h.comm)
            && same(&self.key[c..c + p], h.pid_text)
            && same(&self.key[c + p..], h.tid_text)
    }

    /// The previous sample's `i`th stack line (`data`: the block being parsed).
    #[inline]
    fn line<'d>(&'d self, i: usize, data: &'d [u8]) -> &'d [u8] {
        let (a, b) = self.lines[i];
        if self.in_block {
            &data[a..b]
        } else {
            &self.body[a..b]
        }
    }

    /// Copies the lines out of the block that is about to go.
    fn keep_lines(&mut self, data: &[u8]) {
        if !self.in_block {
            return;
        }
        self.body.clear();
        for l in self.lines.iter_mut() {
            let start = self.body.len();
            self.body.extend_from_slice(&data[l.0..l.1]);
            *l = (start, self.body.len());
        }
        self.in_block = false;
    }
}

/// The hash of a frame cache key: the symbol, and the module's length and last 16 bytes
/// (module paths are long and few; entries compare them whole).
#[inline]
fn frame_key_hash(
    hasher: foldhash::fast::FixedState,
    sym: &[u8],
    module: &[u8],
    java: bool,
) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(sym);
    h.write_usize(module.len() << 1 | usize::from(java));
    h.write(&module[module.len().saturating_sub(16)..]);
    h.finish()
}

/// At most this many tasks are remembered per parser thread (the oldest is forgotten).
const MAX_SLOTS: usize = 256;

/// Per-thread collapse state.
struct Folder<'a> {
    opts: &'a PerfOptions,
    filter: Option<&'a [u8]>,
    /// Names, frames, threads and (unless aggregating) samples; stacks are in `tree`.
    profile: Profile,
    tree: Tree,
    stats: Stats,
    cache: HashTable<CacheEntry>,
    cache_keys: Vec<u8>,
    cache_frames: Vec<FrameId>,
    hasher: foldhash::fast::FixedState,
    new_frames: Vec<FrameId>,
    name_buf: Vec<u8>,
    slots: Vec<Slot>,
    slot_index: HashTable<u32>,
    /// Next slot to forget when all are taken.
    clock: usize,
    /// Slots whose lines are in the block being parsed.
    touched: Vec<u32>,
    /// Stack lines of the current sample (start, end in the block), leaf first.
    cur: Vec<(usize, usize)>,
    /// Line number of the current sample's header.
    cur_lineno: u64,
    /// Lines of the current sample that could not be read (indices in `cur`).
    bad: Vec<usize>,
    /// Aggregated weight per tree node (with `aggregate`).
    agg: Vec<u64>,
    /// Sum of the weights of the samples kept.
    total: u64,
    /// Samples kept whose header gave a period.
    with_period: u64,
}

impl<'a> Folder<'a> {
    fn new(opts: &'a PerfOptions, filter: Option<&'a [u8]>) -> Self {
        let event = EventInfo {
            name: filter
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .unwrap_or_default(),
            unit: WeightUnit::Samples,
            ..Default::default()
        };
        Folder {
            opts,
            filter,
            profile: Profile::new(event),
            tree: Tree::default(),
            stats: Stats::default(),
            cache: HashTable::new(),
            cache_keys: Vec::new(),
            cache_frames: Vec::new(),
            hasher: foldhash::fast::FixedState::default(),
            new_frames: Vec::with_capacity(128),
            name_buf: Vec::with_capacity(256),
            slots: Vec::new(),
            slot_index: HashTable::new(),
            clock: 0,
            touched: Vec::new(),
            cur: Vec::with_capacity(128),
            cur_lineno: 0,
            bad: Vec::new(),
            agg: Vec::new(),
            total: 0,
            with_period: 0,
        }
    }

    /// Parses a block, returning its number of lines. Line numbers in warnings and errors
    /// are relative to the block.
    fn run(&mut self, data: &[u8], w: &mut Warnings<'_>) -> Result<u64, CollapseError> {
        let mut pos = 0usize;
        let mut lineno = 0u64;
        // Current sample: Some(header) while reading its stack; `skip` when not kept.
        let mut header: Option<Header<'_>> = None;
        let mut skip = false;
        let mut in_sample = false;
        let newlines = Newlines::new();
        while pos < data.len() {
            let start = pos;
            let end = newlines.line_end(data, pos);
            let mut line = &data[pos..end];
            pos = end + 1;
            lineno += 1;
            if let Some(l) = line.strip_suffix(b"\r") {
                line = l;
            }
            if line.is_empty() {
                if in_sample {
                    self.end_sample(data, header.take(), skip, w)?;
                    in_sample = false;
                }
                continue;
            }
            if !in_sample {
                if line[0] == b'#' || line.iter().all(|&c| is_space(c)) {
                    continue;
                }
                in_sample = true;
                (header, skip) = self.start_sample(parse_header(line), line, lineno, w)?;
                continue;
            }
            // Stack lines start with a tab; a line that does not may be the header of the
            // next sample (output without call chains has no blank lines between samples).
            if line[0] != b'\t' {
                if let Some(h) = parse_header(line).filter(|h| h.time != NO_TIME || line[0] != b' ')
                {
                    self.end_sample(data, header.take(), skip, w)?;
                    (header, skip) = self.start_sample(Some(h), line, lineno, w)?;
                    continue;
                }
            }
            if !skip {
                self.cur.push((start, start + line.len()));
            }
        }
        if in_sample {
            self.end_sample(data, header.take(), skip, w)?;
        }
        for &i in &self.touched {
            self.slots[i as usize].keep_lines(data);
        }
        self.touched.clear();
        Ok(lineno)
    }

    /// Starts a sample at its header line (`header`: the line parsed): returns the header
    /// and whether the sample is skipped.
    fn start_sample<'d>(
        &mut self,
        header: Option<Header<'d>>,
        line: &[u8],
        lineno: u64,
        w: &mut Warnings<'_>,
    ) -> Result<(Option<Header<'d>>, bool), CollapseError> {
        self.stats.read += 1;
        self.cur.clear();
        self.cur_lineno = lineno;
        let Some(h) = header else {
            w.warn(lineno, "unrecognised sample header line", line)?;
            self.stats.skip(SkipReason::MalformedHeader);
            return Ok((None, true));
        };
        if let Some(f) = self.filter {
            if !h.event.is_empty() && !event_matches(h.event, f) {
                self.stats.skip(SkipReason::OtherEvent(
                    String::from_utf8_lossy(h.event).into_owned(),
                ));
                return Ok((Some(h), true));
            }
        }
        if h.period_too_large && self.opts.weight == PerfWeight::Period {
            w.warn(
                lineno,
                "sample period does not fit in 64 bits (sample left out)",
                line,
            )?;
            self.stats.skip(SkipReason::WeightTooLarge);
            return Ok((Some(h), true));
        }
        Ok((Some(h), false))
    }

    /// The slot of the task of `h`, created (and its root frame interned) if new.
    fn slot(&mut self, h: &Header<'_>) -> usize {
        let hash = {
            let mut s = self.hasher.build_hasher();
            s.write(h.comm);
            s.write_u8(0xff);
            s.write(h.pid_text);
            s.write_u8(0xff);
            s.write(h.tid_text);
            s.finish()
        };
        let slots = &self.slots;
        if let Some(&i) = self.slot_index.find(hash, |&i| slots[i as usize].is(h)) {
            return i as usize;
        }
        let root = {
            let f = self.root_frame(h);
            self.tree.intern(NONE, f)
        };
        let i = if self.slots.len() < MAX_SLOTS {
            self.slots.push(Slot {
                hash,
                key: Vec::new(),
                comm_len: 0,
                pid_len: 0,
                root,
                java: false,
                thread: ThreadId::NONE,
                lines: Vec::new(),
                in_block: false,
                body: Vec::new(),
                nodes: Vec::new(),
            });
            self.slots.len() - 1
        } else {
            let i = self.clock;
            self.clock = (self.clock + 1) % MAX_SLOTS;
            let old = self.slots[i].hash;
            if let Ok(e) = self.slot_index.find_entry(old, |&j| j as usize == i) {
                e.remove();
            }
            i
        };
        let s = &mut self.slots[i];
        s.hash = hash;
        s.key.clear();
        s.key.extend_from_slice(h.comm);
        s.key.extend_from_slice(h.pid_text);
        s.key.extend_from_slice(h.tid_text);
        s.comm_len = h.comm.len() as u32;
        s.pid_len = h.pid_text.len() as u32;
        s.root = root;
        s.java = h.comm.starts_with(b"java");
        s.thread = ThreadId::NONE;
        s.lines.clear();
        s.in_block = false;
        s.body.clear();
        s.nodes.clear();
        s.nodes.push(root);
        let slots = &self.slots;
        self.slot_index
            .insert_unique(hash, i as u32, |&j| slots[j as usize].hash);
        i
    }

    /// Ends the current sample: its stack (the lines in `cur`) becomes a tree node, and
    /// its weight is added to it.
    fn end_sample(
        &mut self,
        data: &[u8],
        header: Option<Header<'_>>,
        skip: bool,
        w: &mut Warnings<'_>,
    ) -> Result<(), CollapseError> {
        let Some(h) = header else { return Ok(()) };
        if skip {
            return Ok(());
        }
        let r = self.keep_sample(data, h, w);
        if self.tree.full {
            return Err(CollapseError::TooManyStacks(Warning::new(
                w.source(),
                self.cur_lineno,
                "more distinct stack prefixes than kiln can index (2^32-1)",
                b"",
            )));
        }
        r
    }

    /// Folds the stack of a sample that is kept (its header `h`).
    fn keep_sample(
        &mut self,
        data: &[u8],
        h: Header<'_>,
        w: &mut Warnings<'_>,
    ) -> Result<(), CollapseError> {
        let si = self.slot(&h);
        let n = self.cur.len();
        // The bottom lines this sample shares with the task's previous one.
        let mut nodes = std::mem::take(&mut self.slots[si].nodes);
        let same = {
            let s = &self.slots[si];
            let m = s.lines.len();
            let reusable = (nodes.len() - 1).min(n);
            let mut j = 0;
            while j < reusable {
                let (a, b) = self.cur[n - 1 - j];
                let prev = s.line(m - 1 - j, data);
                if prev.len() != b - a || !same(prev, &data[a..b]) {
                    break;
                }
                j += 1;
            }
            j
        };
        nodes.truncate(same + 1);
        let java = self.slots[si].java;
        let mut node = nodes[same];
        self.bad.clear();
        for i in (0..n - same).rev() {
            let (a, b) = self.cur[i];
            match parse_frame(&data[a..b]) {
                Some((pc, sym, module)) => node = self.frame_step(node, pc, sym, module, java),
                None => self.bad.push(i),
            }
            if self.bad.is_empty() {
                nodes.push(node);
            }
        }
        let root = self.slots[si].root;
        // A sample without a call chain carries its frame on the header line.
        if node == root && !h.trailing.is_empty() {
            if let Some((pc, sym, module)) = parse_frame(h.trailing) {
                if !module.is_empty() {
                    node = self.frame_step(node, pc, sym, module, java);
                }
            }
        }
        // Remember where this sample's lines are, for the task's next one (they are
        // copied only if still needed when the block is done).
        {
            let s = &mut self.slots[si];
            s.nodes = nodes;
            s.lines.clear();
            s.lines.extend_from_slice(&self.cur);
            if !s.in_block {
                s.in_block = true;
                self.touched.push(si as u32);
            }
        }
        for k in (0..self.bad.len()).rev() {
            let i = self.bad[k];
            let (a, b) = self.cur[i];
            w.warn(
                self.cur_lineno + 1 + i as u64,
                "unrecognised stack line (left out of its sample)",
                &data[a..b],
            )?;
        }
        let weight = match self.opts.weight {
            PerfWeight::Samples => 1,
            PerfWeight::Period => h.period.unwrap_or(1),
        };
        self.total = self.total.checked_add(weight).ok_or_else(|| {
            CollapseError::WeightOverflow(Warning::new(
                w.source(),
                self.cur_lineno,
                "the weights of the samples add up to more than 2^64-1",
                b"",
            ))
        })?;
        if h.period.is_some() {
            self.with_period += 1;
        }
        if self.opts.aggregate {
            let i = node as usize;
            if i >= self.agg.len() {
                self.agg.resize(i + 1, 0);
            }
            // Cannot overflow: the total did not.
            self.agg[i] += weight;
        } else {
            let thread = match self.slots[si].thread {
                ThreadId::NONE => {
                    let t = self.profile.thread(h.pid, h.tid, h.comm);
                    self.slots[si].thread = t;
                    t
                }
                t => t,
            };
            self.profile
                .samples
                .push(StackId(node), weight, h.time, thread);
        }
        self.stats.kept += 1;
        Ok(())
    }

    /// The root frame of a task: its comm (spaces made underscores), with pid/tid as the
    /// options say.
    fn root_frame(&mut self, h: &Header<'_>) -> FrameId {
        let nb = &mut self.name_buf;
        nb.clear();
        nb.extend(h.comm.iter().map(|&c| if c == b' ' { b'_' } else { c }));
        if self.opts.include_tid {
            nb.push(b'-');
            nb.extend_from_slice(h.pid_text);
            nb.push(b'/');
            nb.extend_from_slice(h.tid_text);
        } else if self.opts.include_pid {
            nb.push(b'-');
            nb.extend_from_slice(h.pid_text);
        }
        self.profile.frame(nb, FrameKind::Root)
    }

    /// The node a stack line's frames lead to from `node`. Each distinct (symbol,
    /// module) is named once (tidied, annotated, split into inlined frames) and cached
    /// with its frames; the entry also remembers the node it led to from the parent it was
    /// last seen under, so a line seen again under the same caller costs no tree lookup.
    fn frame_step(&mut self, node: u32, pc: &[u8], sym: &[u8], module: &[u8], java: bool) -> u32 {
        let sym = strip_offset(sym);
        // Unknown symbols with --addrs depend on the address: not cacheable.
        if self.opts.include_addrs && sym == b"[unknown]" {
            self.new_frames.clear();
            self.make_frames(pc, sym, module, java);
            let mut next = node;
            for &f in &self.new_frames {
                next = self.tree.intern(next, f);
            }
            return next;
        }
        let hash = frame_key_hash(self.hasher, sym, module, java);
        let keys = &self.cache_keys;
        let found = self.cache.find_mut(hash, |e| {
            e.java == java
                && e.sym_len as usize == sym.len()
                && e.mod_len as usize == module.len()
                && {
                    let s = e.sym_start as usize;
                    same(&keys[s..s + sym.len()], sym)
                        && same(&keys[s + sym.len()..s + sym.len() + module.len()], module)
                }
        });
        if let Some(e) = found {
            if e.memo[0].0 == node {
                return e.memo[0].1;
            }
            if e.memo[1].0 == node {
                e.memo.swap(0, 1);
                return e.memo[0].1;
            }
            let (s, l) = (e.frames_start as usize, e.frames_len as usize);
            let mut next = node;
            for &f in &self.cache_frames[s..s + l] {
                next = self.tree.intern(next, f);
            }
            e.memo = [(node, next), e.memo[0]];
            return next;
        }
        // New: name it. make_frames gives outermost first (inline chains).
        self.new_frames.clear();
        self.make_frames(pc, sym, module, java);
        let frames_start = self.cache_frames.len() as u32;
        self.cache_frames.extend_from_slice(&self.new_frames);
        let mut next = node;
        for &f in &self.new_frames {
            next = self.tree.intern(next, f);
        }
        let sym_start = self.cache_keys.len() as u32;
        self.cache_keys.extend_from_slice(sym);
        self.cache_keys.extend_from_slice(module);
        let entry = CacheEntry {
            sym_start,
            sym_len: sym.len() as u32,
            mod_len: module.len() as u32,
            java,
            frames_start,
            frames_len: self.new_frames.len() as u32,
            memo: [(node, next), (NONE, NONE)],
        };
        let hasher = self.hasher;
        let keys = &self.cache_keys;
        self.cache.insert_unique(hash, entry, |e| {
            let s = e.sym_start as usize;
            let m = s + e.sym_len as usize;
            frame_key_hash(
                hasher,
                &keys[s..m],
                &keys[m..m + e.mod_len as usize],
                e.java,
            )
        });
        next
    }

    /// Appends the frames of one stack line, outermost first (an inline chain `a->b`
    /// gives `a` then `b_[i]`).
    fn make_frames(&mut self, pc: &[u8], sym: &[u8], module: &[u8], java: bool) {
        let o = self.opts;
        let inlined_module = module == b"inlined";
        let parts: Vec<&[u8]> = if memchr::memmem::find(sym, b"->").is_some() {
            split_arrow(sym)
        } else {
            vec![sym]
        };
        for (i, part) in parts.iter().enumerate() {
            let mut name = frame_name(module, part, pc, o.include_addrs);
            if java && name.first() == Some(&b'L') && name.contains(&b'/') {
                name.remove(0);
            }
            let is_kernel = (module.first() == Some(&b'[') || module.ends_with(b"vmlinux"))
                && module != b"[unknown]";
            let is_jit = (module.starts_with(b"/tmp/perf-") && module.ends_with(b".map"))
                || (memchr::memmem::find(module, b"/jitted-").is_some()
                    && module.ends_with(b".so"));
            let kind = if i > 0 {
                // Java inline chains `a->b`: always annotated, as the other collapsers do.
                if !name.ends_with(b"_[i]") {
                    name.extend_from_slice(b"_[i]");
                }
                FrameKind::Inline
            } else if inlined_module {
                if o.annotate_inline {
                    name.extend_from_slice(b"_[i]");
                }
                FrameKind::Inline
            } else if is_kernel {
                if o.annotate_kernel {
                    name.extend_from_slice(b"_[k]");
                }
                FrameKind::Kernel
            } else if is_jit {
                if o.annotate_jit {
                    name.extend_from_slice(b"_[j]");
                }
                FrameKind::Jit
            } else {
                FrameKind::User
            };
            let f = self.profile.frame(&name, kind);
            self.new_frames.push(f);
        }
    }
}

fn split_arrow(s: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for p in memchr::memmem::find_iter(s, b"->") {
        if p >= start {
            out.push(&s[start..p]);
            start = p + 2;
        }
    }
    out.push(&s[start..]);
    out
}

/// Removes a trailing `+0x<hex>` symbol offset.
fn strip_offset(sym: &[u8]) -> &[u8] {
    // The hex digits at the end, then `+0x` before them (`+`, `0`, `x`: only the `0` is
    // a hex digit, so the run of digits cannot swallow the marker).
    let mut p = sym.len();
    while p > 0 && sym[p - 1].is_ascii_hexdigit() {
        p -= 1;
    }
    if p >= 3 && &sym[p - 3..p] == b"+0x" {
        return &sym[..p - 3];
    }
    sym
}

/// The name of a frame: its symbol, tidied; or, for `[unknown]`, `[module]` (the module's
/// file name, without perf's ` (deleted)` mark).
fn frame_name(module: &[u8], func: &[u8], pc: &[u8], include_addrs: bool) -> Vec<u8> {
    if func != b"[unknown]" && !func.is_empty() {
        let mut name = func.to_vec();
        tidy_generic(&mut name);
        return name;
    }
    let module = module.strip_suffix(b" (deleted)").unwrap_or(module);
    if func.is_empty() {
        // `7f1e2215d058  (/lib/libc.so)`: no symbol at all.
        if module.is_empty() {
            return b"[unknown]".to_vec();
        }
    }
    let base: &[u8] = match (module, include_addrs) {
        (b"[unknown]", true) | (b"", true) => b"unknown",
        (b"[unknown]", false) | (b"", false) => return b"[unknown]".to_vec(),
        (m, _) => &m[memchr::memrchr(b'/', m).map_or(0, |i| i + 1)..],
    };
    let mut res = Vec::with_capacity(base.len() + pc.len() + 6);
    res.push(b'[');
    res.extend_from_slice(base);
    if include_addrs {
        res.extend_from_slice(b" <");
        res.extend_from_slice(pc);
        res.push(b'>');
    }
    res.push(b']');
    res
}

/// Tidies a symbol the way stackcollapse-perf.pl and inferno do: `;` becomes `:` (it would
/// split the folded stack), and the argument list — the first parenthesis outside any
/// `<>`, `{}` or `[]` — is removed, except in Go method names (`net/http.(*Client).Do`)
/// and C++ `(anonymous namespace)`.
fn tidy_generic(name: &mut Vec<u8>) {
    for c in name.iter_mut() {
        if *c == b';' {
            *c = b':';
        }
    }
    let mut depth: i32 = 0;
    let mut after_dot = false;
    let mut cut = None;
    for (i, &c) in name.iter().enumerate() {
        match c {
            b'<' | b'{' | b'[' => depth += 1,
            b'>' | b'}' | b']' | b')' => depth -= 1,
            b'(' => {
                if depth == 0 && !after_dot && !name[i..].starts_with(b"(anonymous namespace)") {
                    cut = Some(i);
                    break;
                }
                depth += 1;
            }
            _ => {}
        }
        after_dot = c == b'.';
    }
    if let Some(i) = cut {
        name.truncate(i);
    }
}

/// Collapses `perf script` text (see [`crate::collapse`]).
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut data = input.data;
    collapse_reader(input.name, &mut data, opts).map_err(|e| match e {
        ReadError::Collapse(e) => e,
        ReadError::Io(e) => unreachable!("reading a slice cannot fail: {e}"),
    })
}

/// Errors of [`collapse_reader`]: the input could not be read, or it is malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading the input failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The input is malformed (strict mode) or too large.
    #[error(transparent)]
    Collapse(#[from] CollapseError),
}

/// Where a block may end: after the last newline that starts a sample header (a line
/// that starts with neither a tab nor a newline). `None` if the buffer holds no such line.
fn block_cut(buf: &[u8]) -> Option<usize> {
    let mut end = buf.len();
    while let Some(p) = memchr::memrchr(b'\n', &buf[..end]) {
        if p + 1 < buf.len() && buf[p + 1] != b'\t' && buf[p + 1] != b'\n' {
            return Some(p + 1);
        }
        end = p;
    }
    None
}

/// What parsing one block gave, apart from the samples (which stay in the worker's
/// profile, in `samples`).
struct BlockInfo {
    idx: usize,
    lines: u64,
    stats: Stats,
    warnings: Vec<Warning>,
    samples: std::ops::Range<usize>,
}

/// A parser thread's work: its profile and tree (with caches kept across blocks, so each
/// distinct frame is tidied and interned once per thread, not once per block), what each
/// of its blocks gave, and the first error it met.
struct WorkerOut<'a> {
    folder: Folder<'a>,
    blocks: Vec<BlockInfo>,
    error: Option<(usize, CollapseError)>,
}

/// Parses one block into a worker's state (false: the block had an error, kept).
fn parse_block(
    out: &mut WorkerOut<'_>,
    name: &str,
    opts: &Options,
    idx: usize,
    data: &[u8],
) -> bool {
    let mut w = Warnings::new(name, opts);
    let start = out.folder.profile.samples.len();
    match out.folder.run(data, &mut w) {
        Ok(lines) => {
            let mut stats = std::mem::take(&mut out.folder.stats);
            stats.warnings = w.count;
            let end = out.folder.profile.samples.len();
            out.blocks.push(BlockInfo {
                idx,
                lines,
                stats,
                warnings: w.list,
                samples: start..end,
            });
            true
        }
        Err(e) => {
            out.error = Some((idx, e));
            false
        }
    }
}

/// Collapses `perf script` text from a reader, in blocks: memory stays bounded by a few
/// blocks whatever the size of the input, and with `threads > 1` blocks are parsed in
/// parallel while the next ones are read. Samples are joined in input order, so the
/// profile is the same whatever the thread count.
pub fn collapse_reader(
    name: &str,
    reader: &mut dyn Read,
    opts: &Options,
) -> Result<Collapsed, ReadError> {
    let popts = &opts.perf;
    let threads = match popts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut blocks = BlockReader::new(
        reader,
        if popts.block_bytes == 0 {
            BLOCK
        } else {
            popts.block_bytes
        },
        block_cut,
    );
    let Some(first) = blocks.next_block(Block::default())? else {
        return Ok(Collapsed::default());
    };
    let filter: Option<Vec<u8>> = match &popts.event_filter {
        Some(f) => Some(f.as_bytes().to_vec()),
        None => first_event(first.data()).map(<[u8]>::to_vec),
    };
    let filter = filter.as_deref();
    let make = || WorkerOut {
        folder: Folder::new(&opts.perf, filter),
        blocks: Vec::new(),
        error: None,
    };
    let parse =
        |out: &mut WorkerOut<'_>, idx: usize, data: &[u8]| parse_block(out, name, opts, idx, data);
    let (outs, read_error) = crate::blocks::drive(&mut blocks, first, threads, &make, &parse);
    if let Some(e) = read_error {
        return Err(ReadError::Io(e));
    }
    assemble(outs, opts, filter, name).map_err(ReadError::from)
}

/// Joins the workers' results: line numbers fixed up in input order, trees merged,
/// samples in input order (or, aggregated, one row per stack).
fn assemble(
    mut outs: Vec<WorkerOut<'_>>,
    opts: &Options,
    filter: Option<&[u8]>,
    name: &str,
) -> Result<Collapsed, CollapseError> {
    let input = crate::blocks::InputOrder::new(outs.iter().map(|o| {
        o.blocks
            .iter()
            .map(|b| (b.idx, b.lines))
            .collect::<Vec<_>>()
    }));
    let first_error = outs
        .iter_mut()
        .filter_map(|o| o.error.take())
        .min_by_key(|(i, _)| *i);
    if let Some((idx, e)) = first_error {
        return Err(input.in_input(idx, e));
    }
    let mut out = Collapsed::default();
    let ranges = join_block_stats(&mut outs, &input, opts, &mut out);
    let with_period = check_total_weight(&outs, name)?;
    let mut folders = outs.into_iter().map(|o| o.folder);
    let Some(mut main) = folders.next() else {
        return Ok(out);
    };
    let aggregate = opts.perf.aggregate;
    let (maps, others) = merge_into_first(&mut main, folders, aggregate, name)?;
    let Folder {
        tree,
        agg,
        mut profile,
        ..
    } = main;
    profile.stacks = into_stack_table(tree);
    if aggregate {
        for (i, &w) in agg.iter().enumerate() {
            if w > 0 {
                profile
                    .samples
                    .push(StackId(i as u32), w, NO_TIME, ThreadId::NONE);
            }
        }
    } else if !others.is_empty() {
        let mine = std::mem::take(&mut profile.samples);
        profile.samples = samples_in_input_order(&mine, &others, &maps, ranges);
    }
    out.stats.event = filter.map(|f| String::from_utf8_lossy(f).into_owned());
    if let Some(e) = &out.stats.event {
        profile.event.name.clone_from(e);
    }
    profile.event.unit = match opts.perf.weight {
        PerfWeight::Period if with_period > 0 => WeightUnit::of_period(&profile.event.name),
        _ => WeightUnit::Samples,
    };
    out.profile = profile;
    Ok(out)
}

/// Where a worker's nodes and threads landed in the first worker's tables (empty for the
/// first worker, and when aggregating: aggregated weights are merged as they are mapped).
type WorkerMap = (Vec<u32>, Vec<ThreadId>);

/// Adds every block's counts and warnings to `out` in input order (warnings' lines
/// relative to the whole input); returns, in input order, each block's worker and the
/// range of its samples in that worker's table.
fn join_block_stats(
    outs: &mut [WorkerOut<'_>],
    input: &crate::blocks::InputOrder,
    opts: &Options,
    out: &mut Collapsed,
) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut ranges = Vec::with_capacity(input.blocks.len());
    for &(idx, wi, bi) in &input.blocks {
        let b = &mut outs[wi].blocks[bi];
        out.stats.add(&b.stats);
        input.warnings(
            idx,
            std::mem::take(&mut b.warnings),
            &mut out.warnings,
            opts.max_warnings,
        );
        ranges.push((wi, b.samples.clone()));
    }
    ranges
}

/// Checks that the weights of all the workers' samples add up to a 64-bit total; returns
/// how many samples gave a period.
fn check_total_weight(outs: &[WorkerOut<'_>], name: &str) -> Result<u64, CollapseError> {
    let mut total = 0u64;
    let mut with_period = 0u64;
    for o in outs {
        total = total.checked_add(o.folder.total).ok_or_else(|| {
            CollapseError::WeightOverflow(Warning::new(
                name,
                0,
                "the weights of the samples add up to more than 2^64-1",
                b"",
            ))
        })?;
        with_period += o.folder.with_period;
    }
    Ok(with_period)
}

/// Merges the other workers' frames, threads and call trees into `main`'s (and their
/// aggregated weights, when aggregating); returns each worker's [`WorkerMap`] and the
/// other workers' profiles, whose samples are still to be mapped.
fn merge_into_first<'a>(
    main: &mut Folder<'a>,
    folders: impl Iterator<Item = Folder<'a>>,
    aggregate: bool,
    name: &str,
) -> Result<(Vec<WorkerMap>, Vec<Profile>), CollapseError> {
    if aggregate {
        main.agg.resize(main.tree.nodes.len(), 0);
    }
    let mut maps: Vec<WorkerMap> = vec![(Vec::new(), Vec::new())];
    let mut others: Vec<Profile> = Vec::new();
    for f in folders {
        let fmap: Vec<FrameId> = f
            .profile
            .frames
            .iter()
            .map(|(_, fr)| main.profile.frame(f.profile.strings.get(fr.name), fr.kind))
            .collect();
        let tmap: Vec<ThreadId> = f
            .profile
            .threads
            .iter()
            .map(|(_, t)| {
                main.profile
                    .thread(t.pid, t.tid, f.profile.strings.get(t.name))
            })
            .collect();
        let mut nmap: Vec<u32> = Vec::with_capacity(f.tree.nodes.len());
        for &(parent, frame) in &f.tree.nodes {
            let parent = if parent == NONE {
                NONE
            } else {
                nmap[parent as usize]
            };
            nmap.push(main.tree.intern(parent, fmap[frame as usize]));
        }
        if main.tree.full {
            return Err(CollapseError::TooManyStacks(Warning::new(
                name,
                0,
                "more distinct stack prefixes than kiln can index (2^32-1)",
                b"",
            )));
        }
        if aggregate {
            main.agg.resize(main.tree.nodes.len(), 0);
            for (i, &w) in f.agg.iter().enumerate() {
                if w > 0 {
                    // Cannot overflow: the total did not.
                    main.agg[nmap[i] as usize] += w;
                }
            }
            maps.push((Vec::new(), Vec::new()));
        } else {
            maps.push((nmap, tmap));
        }
        others.push(f.profile);
    }
    Ok((maps, others))
}

/// The model's stack table from the merged call tree, built by appending: the tree has
/// no duplicates and every parent comes before its children.
fn into_stack_table(tree: Tree) -> kiln_model::StackTable {
    let Tree { nodes, index, .. } = tree;
    drop(index);
    let mut stacks = kiln_model::StackTable::new();
    for &(parent, frame) in &nodes {
        let parent = (parent != NONE).then_some(StackId(parent));
        stacks.push_new(parent, FrameId(frame));
    }
    stacks
}

/// Every worker's samples in input order: the first worker's (`mine`) as they are, the
/// others' with their stacks and threads mapped into the first one's tables.
fn samples_in_input_order(
    mine: &kiln_model::SampleTable,
    others: &[Profile],
    maps: &[WorkerMap],
    ranges: Vec<(usize, std::ops::Range<usize>)>,
) -> kiln_model::SampleTable {
    let mut samples = kiln_model::SampleTable::default();
    for (wi, r) in ranges {
        let src = if wi == 0 {
            mine
        } else {
            &others[wi - 1].samples
        };
        let (nmap, tmap) = &maps[wi];
        for i in r {
            let (stack, thread) = if wi == 0 {
                (src.stack[i], src.thread[i])
            } else {
                let th = src.thread[i];
                (
                    StackId(nmap[src.stack[i].0 as usize]),
                    if th == ThreadId::NONE {
                        th
                    } else {
                        tmap[th.0 as usize]
                    },
                )
            };
            samples.push(stack, src.weight[i], src.time[i], thread);
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree that runs out of node ids ends the parse with an error naming the input and
    /// the sample's line, instead of a panic or an index past the table.
    #[test]
    fn a_full_call_tree_is_an_error_not_a_panic() {
        let opts = Options::default();
        let mut f = Folder::new(&opts.perf, None);
        // The root (the command name) and two frames fit; a third distinct frame does not.
        f.tree.cap = 3;
        let data = b"app 1 [000] 1.000000: cpu-clock:\n\
            \t1 a (/bin/app)\n\
            \t2 main (/bin/app)\n\
            \n\
            app 1 [000] 2.000000: cpu-clock:\n\
            \t3 b (/bin/app)\n\
            \t2 main (/bin/app)\n\
            \n";
        let mut w = Warnings::new("big.perf", &opts);
        let e = f.run(data, &mut w).unwrap_err();
        assert!(matches!(e, CollapseError::TooManyStacks(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with("big.perf: "), "{msg}");
        assert!(msg.contains("(at line 5)"), "{msg}");
        assert_eq!(f.tree.nodes.len(), 3);
    }
}
