//! Folding samples into a call tree: per-task memory of the previous stack, a cache of
//! named frames, and each sample's weight.
use super::names::{frame_name, split_arrow, strip_offset};
use super::tokenize::{event_matches, is_space, parse_frame, parse_header, same, Header, Newlines};
use super::tree::{Tree, NONE};
use super::{PerfOptions, PerfWeight};
use crate::{CollapseError, SkipReason, Stats, Warning, Warnings};
use hashbrown::HashTable;
use kiln_model::{EventInfo, FrameId, FrameKind, Profile, StackId, ThreadId, WeightUnit, NO_TIME};
use std::hash::{BuildHasher, Hasher};

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
pub(super) struct Folder<'a> {
    opts: &'a PerfOptions,
    filter: Option<&'a [u8]>,
    /// Names, frames, threads and (unless aggregating) samples; stacks are in `tree`.
    pub(super) profile: Profile,
    pub(super) tree: Tree,
    pub(super) stats: Stats,
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
    pub(super) agg: Vec<u64>,
    /// Sum of the weights of the samples kept.
    pub(super) total: u64,
    /// Samples kept whose header gave a period.
    pub(super) with_period: u64,
}

impl<'a> Folder<'a> {
    pub(super) fn new(opts: &'a PerfOptions, filter: Option<&'a [u8]>) -> Self {
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
    pub(super) fn run(&mut self, data: &[u8], w: &mut Warnings<'_>) -> Result<u64, CollapseError> {
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
        self.add_weight(si, node, &h, w)?;
        self.stats.kept += 1;
        Ok(())
    }

    /// Adds the weight of a kept sample (its header `h`, its task's slot `si`) to the
    /// total and to its stack's node: aggregated, or as a row of the sample table.
    #[inline]
    fn add_weight(
        &mut self,
        si: usize,
        node: u32,
        h: &Header<'_>,
        w: &Warnings<'_>,
    ) -> Result<(), CollapseError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

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
