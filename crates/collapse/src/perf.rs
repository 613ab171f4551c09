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
use kiln_model::{EventInfo, FrameId, FrameKind, Profile, WeightUnit, NO_TIME};
use std::hash::{BuildHasher, Hasher};

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

/// `pid/tid`, `tid`, `-1/-1` → (pid, tid, pid text, tid text).
fn parse_ids(t: &[u8]) -> Option<(Option<u32>, Option<u32>, &[u8], &[u8])> {
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
    let toks: Vec<(usize, &[u8])> = tokens(line).take(64).collect();
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
    if time != NO_TIME && is_cpu_token(toks[j].1) {
        j = j.checked_sub(1)?;
    } else if time == NO_TIME && is_cpu_token(toks[j].1) {
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
}

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
        }
    }

    fn run(&mut self, data: &[u8], w: &mut Warnings<'_>) -> Result<(), CollapseError> {
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
            match parse_frame(line) {
                Some((pc, sym, module)) => {
                    let java = header.as_ref().is_some_and(|h| h.comm.starts_with(b"java"));
                    self.push_frame(pc, sym, module, java);
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
        Ok(())
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
        let thread = self.profile.thread(h.pid, h.tid, h.comm);
        let stack = self
            .profile
            .stacks
            .intern_path(&self.path)
            .expect("root frame present");
        self.profile.samples.push(stack, weight, h.time, thread);
        self.stats.kept += 1;
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
    let popts = &opts.perf;
    let data = input.data;
    let filter: Option<Vec<u8>> = match &popts.event_filter {
        Some(f) => Some(f.as_bytes().to_vec()),
        None => first_event(data).map(<[u8]>::to_vec),
    };
    // Automatic threading splits inputs of 1 MiB and more (below that, starting threads
    // costs more than it saves); an explicit count always splits, which tests use.
    let threads = match popts.threads {
        0 if data.len() < (1 << 20) => 1,
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let chunks = split_chunks(data, threads);
    let results: Vec<Result<(Profile, Stats, Vec<Warning>), CollapseError>> = if chunks.len() == 1 {
        vec![run_chunk(input.name, data, opts, filter.as_deref())]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .iter()
                .map(|&(a, b)| {
                    let f = filter.as_deref();
                    s.spawn(move || run_chunk(input.name, &data[a..b], opts, f))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("collapse thread panicked"))
                .collect()
        })
    };
    let mut out = Collapsed::default();
    let mut first = true;
    // Line numbers are counted within each chunk; the lines before a chunk are counted
    // only when it has something to report (warnings are rare, counting is not free).
    let lines_before = |a: usize| memchr::memchr_iter(b'\n', &data[..a]).count() as u64;
    for (r, &(a, _)) in results.into_iter().zip(&chunks) {
        let (p, st, warns) = match r {
            Ok(x) => x,
            Err(CollapseError::Malformed(mut w)) => {
                w.line += lines_before(a);
                return Err(CollapseError::Malformed(w));
            }
            Err(e) => return Err(e),
        };
        if first {
            out.profile = p;
            first = false;
        } else {
            out.profile.merge_from(&p);
        }
        out.stats.add(&st);
        let base = if a > 0 && !warns.is_empty() {
            lines_before(a)
        } else {
            0
        };
        for mut w in warns {
            if out.warnings.len() < opts.max_warnings {
                w.line += base;
                out.warnings.push(w);
            }
        }
    }
    out.stats.event = filter.map(|f| String::from_utf8_lossy(&f).into_owned());
    if let Some(e) = &out.stats.event {
        out.profile.event.name.clone_from(e);
    }
    Ok(out)
}

fn run_chunk(
    name: &str,
    chunk: &[u8],
    opts: &Options,
    filter: Option<&[u8]>,
) -> Result<(Profile, Stats, Vec<Warning>), CollapseError> {
    let mut w = Warnings::new(name, opts);
    let mut f = Folder::new(&opts.perf, filter);
    f.run(chunk, &mut w)?;
    f.stats.warnings = w.count;
    Ok((f.profile, f.stats, w.list))
}

/// Cuts `data` into `n` pieces at sample boundaries (blank lines).
fn split_chunks(data: &[u8], n: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 1..n {
        let target = data.len() * i / n;
        if target <= start {
            continue;
        }
        match memchr::memmem::find(&data[target..], b"\n\n") {
            Some(p) => {
                let cut = target + p + 2;
                out.push((start, cut));
                start = cut;
            }
            None => break,
        }
    }
    out.push((start, data.len()));
    out
}
