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
    /// Parser threads; 0 means one per available core. Default: 0.
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
    /// The event name without the trailing colon (`cpu-clock`, `sched:sched_switch`).
    pub event: &'a [u8],
    /// Text after the event: tracepoint arguments, or the frame of a sample without a
    /// call chain.
    pub trailing: &'a [u8],
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
    if t.is_empty() || !t.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(t).ok()?.parse().ok().map(Some)
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
    if i < toks.len() && toks[i].1.iter().all(u8::is_ascii_digit) {
        period = std::str::from_utf8(toks[i].1)
            .ok()
            .and_then(|s| s.parse().ok());
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
        event,
        trailing,
    })
}

fn trim(s: &[u8]) -> &[u8] {
    let mut a = 0;
    while a < s.len() && (is_space(s[a]) || s[a] == b'\r') {
        a += 1;
    }
    let mut b = s.len();
    while b > a && (is_space(s[b - 1]) || s[b - 1] == b'\r') {
        b -= 1;
    }
    &s[a..b]
}

/// A parsed stack line: (address, raw symbol, module).
pub fn parse_frame(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let line = trim(line);
    let sp = line.iter().position(|&c| is_space(c));
    let (pc, rest) = match sp {
        Some(sp) => (&line[..sp], trim(&line[sp..])),
        None => (line, &b""[..]),
    };
    if pc.is_empty() || !pc.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
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
pub fn first_event(data: &[u8]) -> Option<&[u8]> {
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
}

/// Per-thread collapse state.
struct Folder<'a> {
    opts: &'a PerfOptions,
    filter: Option<&'a [u8]>,
    profile: Profile,
    stats: Stats,
    cache: HashTable<CacheEntry>,
    cache_keys: Vec<u8>,
    cache_frames: Vec<FrameId>,
    hasher: foldhash::fast::FixedState,
    leaf_first: Vec<FrameId>,
    path: Vec<FrameId>,
    name_buf: Vec<u8>,
    root_cache: Vec<u8>,
    root_frame: Option<FrameId>,
    /// Per root frame: the previous sample's path and its stack nodes.
    prev: Vec<(FrameId, Vec<FrameId>, Vec<StackId>)>,
    /// Recent threads: (tid, pid, comm, id).
    threads: Vec<RecentThread>,
    /// Aggregated weight per stack node (with `aggregate`).
    agg: Vec<u64>,
    /// Stack lines seen before → their frames (in `cache_frames`).
    line_cache: HashTable<CacheEntry>,
    line_keys: Vec<u8>,
    /// Bytes of lines this thread may remember (the budget is shared by the threads).
    line_cache_limit: usize,
}

/// A recently seen thread: (tid, pid, comm) and its id.
type RecentThread = (Option<u32>, Option<u32>, Vec<u8>, ThreadId);

/// At most this many bytes of distinct stack lines are remembered, shared by the parser
/// threads.
const LINE_CACHE_BYTES: usize = 2 << 20;

impl<'a> Folder<'a> {
    fn new(opts: &'a PerfOptions, filter: Option<&'a [u8]>) -> Self {
        let unit = match opts.weight {
            PerfWeight::Samples => WeightUnit::Samples,
            PerfWeight::Period => WeightUnit::Period,
        };
        let event = EventInfo {
            name: filter
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .unwrap_or_default(),
            unit,
            ..Default::default()
        };
        Folder {
            opts,
            filter,
            profile: Profile::new(event),
            stats: Stats::default(),
            cache: HashTable::new(),
            cache_keys: Vec::new(),
            cache_frames: Vec::new(),
            hasher: foldhash::fast::FixedState::default(),
            leaf_first: Vec::with_capacity(128),
            path: Vec::with_capacity(128),
            name_buf: Vec::with_capacity(256),
            root_cache: Vec::new(),
            root_frame: None,
            prev: Vec::new(),
            threads: Vec::new(),
            agg: Vec::new(),
            line_cache: HashTable::new(),
            line_keys: Vec::new(),
            line_cache_limit: LINE_CACHE_BYTES,
        }
    }

    /// Parses a block, returning its number of lines.
    fn run(&mut self, data: &[u8], w: &mut Warnings<'_>) -> Result<u64, CollapseError> {
        let mut pos = 0usize;
        let mut lineno = 0u64;
        // Current sample: Some(header) while reading its stack; `skip` when filtered.
        let mut header: Option<Header<'_>> = None;
        let mut skip = false;
        let mut in_sample = false;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            let mut line = &data[pos..end];
            pos = end + 1;
            lineno += 1;
            if let Some(l) = line.strip_suffix(b"\r") {
                line = l;
            }
            if line.is_empty() {
                if in_sample {
                    self.end_sample(header.take(), skip);
                    in_sample = false;
                }
                continue;
            }
            if !in_sample {
                if line[0] == b'#' {
                    continue;
                }
                if line.iter().all(|&c| is_space(c)) {
                    continue;
                }
                in_sample = true;
                self.stats.read += 1;
                self.leaf_first.clear();
                match parse_header(line) {
                    Some(h) => {
                        skip = false;
                        if let Some(f) = self.filter {
                            if !h.event.is_empty() && !event_matches(h.event, f) {
                                skip = true;
                                self.stats.skip(SkipReason::OtherEvent(
                                    String::from_utf8_lossy(h.event).into_owned(),
                                ));
                            }
                        }
                        header = Some(h);
                    }
                    None => {
                        w.warn(lineno, "unrecognised sample header line", line)?;
                        self.stats.skip(SkipReason::MalformedHeader);
                        skip = true;
                        header = None;
                    }
                }
                continue;
            }
            // Stack lines start with a tab; a line that does not may be the header of the
            // next sample (output without call chains has no blank lines between samples).
            if line[0] != b'\t' {
                if let Some(h) = parse_header(line).filter(|h| h.time != NO_TIME || line[0] != b' ')
                {
                    self.end_sample(header.take(), skip);
                    self.stats.read += 1;
                    self.leaf_first.clear();
                    skip = self.filtered(&h);
                    header = Some(h);
                    continue;
                }
            }
            if skip {
                continue;
            }
            let java = header.as_ref().is_some_and(|h| h.comm.starts_with(b"java"));
            if self.cached_line(line, java) {
                continue;
            }
            match parse_frame(line) {
                Some((pc, sym, module)) => {
                    let start = self.leaf_first.len();
                    self.push_frame(pc, sym, module, java);
                    self.remember_line(line, java, start);
                }
                None => {
                    w.warn(
                        lineno,
                        "unrecognised stack line (left out of its sample)",
                        line,
                    )?;
                }
            }
        }
        if in_sample {
            self.end_sample(header.take(), skip);
        }
        Ok(lineno)
    }

    /// Appends the frames of a stack line seen before (the same address in the same
    /// module: call sites and hot loops repeat), skipping its parsing altogether.
    #[inline]
    fn cached_line(&mut self, line: &[u8], java: bool) -> bool {
        let hash = self.hasher.hash_one((line, java));
        let keys = &self.line_keys;
        if let Some(e) = self.line_cache.find(hash, |e| {
            e.java == java
                && e.sym_len as usize == line.len()
                && &keys[e.sym_start as usize..e.sym_start as usize + line.len()] == line
        }) {
            let (s, l) = (e.frames_start as usize, e.frames_len as usize);
            self.leaf_first
                .extend_from_slice(&self.cache_frames[s..s + l]);
            return true;
        }
        false
    }

    /// Remembers the frames a stack line gave (those after `start` in `leaf_first`), while
    /// the cache is below its size limit.
    fn remember_line(&mut self, line: &[u8], java: bool, start: usize) {
        if self.line_keys.len() + line.len() > self.line_cache_limit {
            return;
        }
        let hash = self.hasher.hash_one((line, java));
        let frames_start = self.cache_frames.len() as u32;
        self.cache_frames
            .extend_from_slice(&self.leaf_first[start..]);
        let entry = CacheEntry {
            sym_start: self.line_keys.len() as u32,
            sym_len: line.len() as u32,
            mod_len: 0,
            java,
            frames_start,
            frames_len: (self.leaf_first.len() - start) as u32,
        };
        self.line_keys.extend_from_slice(line);
        let hasher = self.hasher;
        let keys = &self.line_keys;
        self.line_cache.insert_unique(hash, entry, |e| {
            let s = e.sym_start as usize;
            hasher.hash_one((&keys[s..s + e.sym_len as usize], e.java))
        });
    }

    /// Whether a sample is of another event than the one kept (counted as skipped).
    fn filtered(&mut self, h: &Header<'_>) -> bool {
        if let Some(f) = self.filter {
            if !h.event.is_empty() && !event_matches(h.event, f) {
                self.stats.skip(SkipReason::OtherEvent(
                    String::from_utf8_lossy(h.event).into_owned(),
                ));
                return true;
            }
        }
        false
    }

    fn end_sample(&mut self, header: Option<Header<'_>>, skip: bool) {
        let Some(h) = header else { return };
        if skip {
            return;
        }
        // A sample without a call chain carries its frame on the header line.
        if self.leaf_first.is_empty() && !h.trailing.is_empty() {
            if let Some((pc, sym, module)) = parse_frame(h.trailing) {
                if !module.is_empty() {
                    self.push_frame(pc, sym, module, h.comm.starts_with(b"java"));
                }
            }
        }
        let root = self.root(&h);
        self.path.clear();
        self.path.push(root);
        self.path.extend(self.leaf_first.iter().rev());
        let weight = match self.opts.weight {
            PerfWeight::Samples => 1,
            PerfWeight::Period => h.period.unwrap_or(1),
        };
        let stack = self.intern_path(root);
        if self.opts.aggregate {
            let i = stack.0 as usize;
            if i >= self.agg.len() {
                self.agg.resize(i + 1, 0);
            }
            self.agg[i] = self.agg[i].saturating_add(weight);
        } else {
            let thread = self.thread(&h);
            self.profile.samples.push(stack, weight, h.time, thread);
        }
        self.stats.kept += 1;
    }

    /// Interns `self.path` (root first), reusing the nodes of the previous sample with the
    /// same root frame: consecutive samples of a thread share most of their callers, and
    /// comparing frame ids is much cheaper than a hash lookup per frame.
    fn intern_path(&mut self, root: FrameId) -> StackId {
        let slot = match self.prev.iter().position(|p| p.0 == root) {
            Some(i) => i,
            None => {
                if self.prev.len() >= 64 {
                    self.prev.swap_remove(0);
                }
                self.prev.push((root, Vec::new(), Vec::new()));
                self.prev.len() - 1
            }
        };
        let (_, frames, nodes) = &mut self.prev[slot];
        let keep = frames
            .iter()
            .zip(&self.path)
            .take_while(|(a, b)| a == b)
            .count();
        nodes.truncate(keep);
        frames.truncate(keep);
        for &f in &self.path[keep..] {
            let parent = nodes.last().copied();
            nodes.push(self.profile.stacks.intern(parent, f));
            frames.push(f);
        }
        *nodes.last().expect("root frame present")
    }

    /// The thread of a sample; the last few are cached (samples come in runs per thread).
    fn thread(&mut self, h: &Header<'_>) -> ThreadId {
        if let Some(t) = self
            .threads
            .iter()
            .find(|t| t.0 == h.tid && t.1 == h.pid && t.2 == h.comm)
        {
            return t.3;
        }
        let id = self.profile.thread(h.pid, h.tid, h.comm);
        if self.threads.len() >= 16 {
            self.threads.swap_remove(0);
        }
        self.threads.push((h.tid, h.pid, h.comm.to_vec(), id));
        id
    }

    /// Moves aggregated weights into the sample table (one row per stack).
    fn finish(mut self) -> (Profile, Stats) {
        for (i, &w) in self.agg.iter().enumerate() {
            if w > 0 {
                self.profile
                    .samples
                    .push(StackId(i as u32), w, NO_TIME, ThreadId::NONE);
            }
        }
        (self.profile, self.stats)
    }

    fn root(&mut self, h: &Header<'_>) -> FrameId {
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
        if let Some(f) = self.root_frame {
            if self.root_cache == *nb {
                return f;
            }
        }
        let f = self.profile.frame(nb, FrameKind::Root);
        self.root_cache.clear();
        self.root_cache.extend_from_slice(nb);
        self.root_frame = Some(f);
        f
    }

    fn push_frame(&mut self, pc: &[u8], sym: &[u8], module: &[u8], java: bool) {
        let sym = strip_offset(sym);
        // Unknown symbols with --addrs depend on the address: not cacheable.
        if self.opts.include_addrs && sym == b"[unknown]" {
            let start = self.leaf_first.len();
            self.make_frames(pc, sym, module, java);
            self.leaf_first[start..].reverse();
            return;
        }
        let mut h = self.hasher.build_hasher();
        h.write(sym);
        h.write_u8(0xff);
        h.write(module);
        h.write_u8(java as u8);
        let hash = h.finish();
        let keys = &self.cache_keys;
        let found = self.cache.find(hash, |e| {
            e.java == java
                && e.sym_len as usize == sym.len()
                && e.mod_len as usize == module.len()
                && {
                    let s = e.sym_start as usize;
                    &keys[s..s + sym.len()] == sym
                        && &keys[s + sym.len()..s + sym.len() + module.len()] == module
                }
        });
        if let Some(e) = found {
            let (s, l) = (e.frames_start as usize, e.frames_len as usize);
            // Cached leaf-first already.
            self.leaf_first
                .extend_from_slice(&self.cache_frames[s..s + l]);
            return;
        }
        let start = self.leaf_first.len();
        self.make_frames(pc, sym, module, java);
        // make_frames pushes caller-to-callee order for inline chains; stored leaf first.
        self.leaf_first[start..].reverse();
        let frames_start = self.cache_frames.len() as u32;
        self.cache_frames
            .extend_from_slice(&self.leaf_first[start..]);
        let sym_start = self.cache_keys.len() as u32;
        self.cache_keys.extend_from_slice(sym);
        self.cache_keys.extend_from_slice(module);
        let entry = CacheEntry {
            sym_start,
            sym_len: sym.len() as u32,
            mod_len: module.len() as u32,
            java,
            frames_start,
            frames_len: (self.leaf_first.len() - start) as u32,
        };
        let hasher = self.hasher;
        let keys = &self.cache_keys;
        self.cache.insert_unique(hash, entry, |e| {
            let s = e.sym_start as usize;
            let mut h = hasher.build_hasher();
            h.write(&keys[s..s + e.sym_len as usize]);
            h.write_u8(0xff);
            h.write(&keys[s + e.sym_len as usize..s + e.sym_len as usize + e.mod_len as usize]);
            h.write_u8(e.java as u8);
            h.finish()
        });
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
            self.leaf_first.push(f);
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
    if let Some(p) = memchr::memmem::rfind(sym, b"+0x") {
        let tail = &sym[p + 3..];
        if tail.iter().all(u8::is_ascii_hexdigit) {
            return &sym[..p];
        }
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

/// Size of the blocks `perf script` text is read and parsed in. Small enough that a few
/// in flight cost little memory (inferno streams too), large enough that starting a
/// block (a fresh frame cache) is rare.
const BLOCK: usize = 512 << 10;

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

/// A parser thread's work: its profile (with caches kept across blocks, so each distinct
/// frame is tidied and interned once per thread, not once per block), what each of its
/// blocks gave, and the first error it met.
struct WorkerOut<'a> {
    folder: Folder<'a>,
    blocks: Vec<BlockInfo>,
    error: Option<(usize, CollapseError)>,
}

fn parse_blocks<'a>(
    name: &str,
    opts: &'a Options,
    filter: Option<&'a [u8]>,
    jobs: impl Iterator<Item = (usize, Vec<u8>)>,
    failed: &std::sync::atomic::AtomicBool,
    threads: usize,
) -> WorkerOut<'a> {
    let mut out = WorkerOut {
        folder: Folder::new(&opts.perf, filter),
        blocks: Vec::new(),
        error: None,
    };
    out.folder.line_cache_limit = LINE_CACHE_BYTES / threads.max(1);
    for (idx, block) in jobs {
        let mut w = Warnings::new(name, opts);
        let start = out.folder.profile.samples.len();
        match out.folder.run(&block, &mut w) {
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
            }
            Err(e) => {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                out.error = Some((idx, e));
                break;
            }
        }
    }
    out
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
    use std::sync::atomic::{AtomicBool, Ordering};
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
    );
    let Some(first) = blocks.next_block()? else {
        return Ok(Collapsed::default());
    };
    let filter: Option<Vec<u8>> = match &popts.event_filter {
        Some(f) => Some(f.as_bytes().to_vec()),
        None => first_event(&first).map(<[u8]>::to_vec),
    };
    let filter = filter.as_deref();
    let failed = AtomicBool::new(false);
    let mut read_error = None;
    let outs: Vec<WorkerOut<'_>> = if threads <= 1 {
        let mut next = Some(first);
        let mut idx = 0;
        let jobs = std::iter::from_fn(|| {
            let b = next.take()?;
            match blocks.next_block() {
                Ok(n) => next = n,
                Err(e) => read_error = Some(e),
            }
            idx += 1;
            Some((idx - 1, b))
        });
        vec![parse_blocks(name, opts, filter, jobs, &failed, 1)]
    } else {
        std::thread::scope(|s| {
            let (job_tx, job_rx) = crossbeam_channel::bounded::<(usize, Vec<u8>)>(threads);
            let failed = &failed;
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let job_rx = job_rx.clone();
                    s.spawn(move || {
                        parse_blocks(name, opts, filter, job_rx.into_iter(), failed, threads)
                    })
                })
                .collect();
            drop(job_rx);
            let mut block = Some(first);
            let mut idx = 0;
            while let Some(b) = block {
                if failed.load(Ordering::Relaxed) || job_tx.send((idx, b)).is_err() {
                    break;
                }
                idx += 1;
                block = match blocks.next_block() {
                    Ok(b) => b,
                    Err(e) => {
                        read_error = Some(e);
                        None
                    }
                };
            }
            drop(job_tx);
            handles
                .into_iter()
                .map(|h| h.join().expect("collapse thread panicked"))
                .collect()
        })
    };
    if let Some(e) = read_error {
        return Err(ReadError::Io(e));
    }
    assemble(outs, opts, filter).map_err(ReadError::from)
}

/// Joins the workers' results: line numbers fixed up in input order, samples in input
/// order (or, aggregated, one row per stack).
fn assemble(
    mut outs: Vec<WorkerOut<'_>>,
    opts: &Options,
    filter: Option<&[u8]>,
) -> Result<Collapsed, CollapseError> {
    // Lines before each block, for line numbers relative to the whole input.
    let mut lines: Vec<(usize, u64)> = outs
        .iter()
        .flat_map(|o| o.blocks.iter().map(|b| (b.idx, b.lines)))
        .collect();
    lines.sort_unstable();
    let base = |idx: usize| -> u64 {
        lines
            .iter()
            .take_while(|(i, _)| *i < idx)
            .map(|(_, l)| l)
            .sum()
    };
    let first_error = outs
        .iter_mut()
        .filter_map(|o| o.error.take())
        .min_by_key(|(i, _)| *i);
    if let Some((idx, e)) = first_error {
        return Err(match e {
            CollapseError::Malformed(mut w) => {
                w.line += base(idx);
                CollapseError::Malformed(w)
            }
            e => e,
        });
    }
    let mut out = Collapsed::default();
    // (block idx, worker, position in the worker's list), in input order.
    let mut order: Vec<(usize, usize, usize)> = Vec::new();
    for (wi, o) in outs.iter().enumerate() {
        for (bi, b) in o.blocks.iter().enumerate() {
            order.push((b.idx, wi, bi));
        }
    }
    order.sort_unstable();
    let mut ranges = Vec::with_capacity(order.len());
    for &(idx, wi, bi) in &order {
        let b = &mut outs[wi].blocks[bi];
        out.stats.add(&b.stats);
        let base = base(idx);
        for mut w in std::mem::take(&mut b.warnings) {
            if out.warnings.len() < opts.max_warnings {
                w.line += base;
                out.warnings.push(w);
            }
        }
        ranges.push((wi, b.samples.clone()));
    }
    let mut profiles: Vec<Profile> = outs.into_iter().map(|o| o.folder.finish().0).collect();
    if profiles.len() == 1 {
        out.profile = profiles.pop().expect("one profile");
    } else if opts.perf.aggregate {
        // One row per stack: the order of rows carries no meaning.
        let mut it = profiles.into_iter();
        out.profile = it.next().unwrap_or_default();
        for p in it {
            out.profile.merge_from(&p);
        }
    } else {
        let mut merged = Profile::new(profiles[0].event.clone());
        let maps: Vec<_> = profiles.iter().map(|p| merged.import_tables(p)).collect();
        for (wi, r) in ranges {
            merged.push_samples_from(&profiles[wi], r, &maps[wi]);
        }
        out.profile = merged;
    }
    out.stats.event = filter.map(|f| String::from_utf8_lossy(f).into_owned());
    if let Some(e) = &out.stats.event {
        out.profile.event.name.clone_from(e);
    }
    Ok(out)
}

/// Reads `perf script` text in blocks that end at sample boundaries.
struct BlockReader<'r> {
    reader: &'r mut dyn Read,
    carry: Vec<u8>,
    eof: bool,
    block: usize,
}

impl<'r> BlockReader<'r> {
    fn new(reader: &'r mut dyn Read, block: usize) -> Self {
        BlockReader {
            reader,
            carry: Vec::new(),
            eof: false,
            block,
        }
    }

    fn next_block(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = Vec::with_capacity(self.block + self.carry.len() + 4096);
        buf.append(&mut self.carry);
        loop {
            while !self.eof && buf.len() < self.block {
                let start = buf.len();
                buf.resize(start.max(self.block).min(start + self.block), 0);
                let n = loop {
                    match self.reader.read(&mut buf[start..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                };
                buf.truncate(start + n);
                if n == 0 {
                    self.eof = true;
                }
            }
            if self.eof {
                return Ok((!buf.is_empty()).then_some(buf));
            }
            // Cut after the last complete sample; a sample longer than the block makes the
            // block grow until it ends.
            match block_cut(&buf).filter(|&c| c > 0) {
                Some(cut) => {
                    self.carry = buf[cut..].to_vec();
                    buf.truncate(cut);
                    return Ok(Some(buf));
                }
                None => {
                    let more = buf.len() + self.block;
                    buf.reserve(self.block);
                    let start = buf.len();
                    buf.resize(more, 0);
                    let n = self.reader.read(&mut buf[start..])?;
                    buf.truncate(start + n);
                    if n == 0 {
                        self.eof = true;
                    }
                }
            }
        }
    }
}
