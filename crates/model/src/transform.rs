//! Transforms over a [`Profile`]: merge numbered threads, drop frames or samples, focus,
//! collapse recursion, strip offsets and addresses.
//!
//! Every transform is a function of a stack node's frame and of what was decided for its
//! parent, so [`Transforms::apply`] runs once per distinct stack node (parents first) and
//! once per distinct frame for the regular expressions, never once per sample. A profile
//! of ten million samples over fifty thousand stacks costs fifty thousand steps.
use crate::{
    Frame, FrameId, LabelMatch, ModelError, Profile, SampleTable, StackId, ThreadTable, WeightUnit,
};
use regex::bytes::Regex;
use std::borrow::Cow;

/// Rewrites the root frame (the process or thread name) so that numbered threads merge.
#[derive(Clone, Debug)]
pub struct MergeRule {
    re: Regex,
    replacement: Vec<u8>,
}

impl MergeRule {
    /// A rule replacing matches of `pattern` by `replacement` (`$1` names groups).
    pub fn new(pattern: &str, replacement: &str) -> Result<Self, ModelError> {
        Ok(MergeRule {
            re: compile(pattern)?,
            replacement: replacement.as_bytes().to_vec(),
        })
    }

    /// Parses `REGEX=REPLACEMENT` (the last `=` splits; the replacement may be empty).
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let (pat, rep) = spec
            .rsplit_once('=')
            .ok_or_else(|| ModelError::BadRule(spec.to_string()))?;
        if pat.is_empty() {
            return Err(ModelError::BadRule(spec.to_string()));
        }
        Self::new(pat, rep)
    }

    /// `name` with this rule applied.
    pub fn apply<'a>(&self, name: &'a [u8]) -> Cow<'a, [u8]> {
        self.re.replace_all(name, self.replacement.as_slice())
    }
}

/// `name` with every rule applied in turn: the thread group a thread belongs to
/// (`3_scheduler` → `scheduler`). Used for root frames and for per-thread CPU series.
pub fn merge_name(rules: &[MergeRule], name: &[u8]) -> Vec<u8> {
    let mut out = name.to_vec();
    for r in rules {
        if let Cow::Owned(o) = r.apply(&out) {
            out = o;
        }
    }
    out
}

/// The default thread-merging rules.
///
/// * `^[0-9]+_` → `` : BEAM schedulers (`1_scheduler`, `10_dirty_io_sch`, `2_dirty_cpu_sch`);
///   the `sed` of the RabbitMQ flame graph guides.
/// * `^erts_([^_]+)_[0-9]+` → `erts_$1` : BEAM's `erts_sched_1`-style helper threads.
/// * `-[0-9]+-` → `-N-` and `[-_#:. ]?[0-9]+$` → `` : worker pools (`pool-1-thread-3`,
///   `GC Thread#0`, `worker-12`, `tokio-runtime-w 3`).
pub fn default_merge_rules() -> Vec<MergeRule> {
    [
        ("^[0-9]+_", ""),
        ("^erts_([^_]+)_[0-9]+", "erts_$1"),
        ("-[0-9]+-", "-N-"),
        ("[-_#:. ]?[0-9]+$", ""),
    ]
    .into_iter()
    .map(|(p, r)| MergeRule::new(p, r).expect("built-in rule compiles"))
    .collect()
}

/// Frames every thread of a runtime passes through on its way to real work — thread
/// start-up (`__clone3`, `start_thread`), the kernel's system-call entry
/// (`entry_SYSCALL_64_after_hwframe`, `do_syscall_64`), BEAM's, Go's and the JVM's thread
/// wrappers. They sit under nearly every sample, so a table of functions ranked by change
/// fills up with them and their noise; `kiln compare` leaves them out of its table
/// (the flame graphs keep them).
pub const PLUMBING_FRAMES: &[&str] = &[
    // libc and the kernel: thread and process start-up.
    "__clone3",
    "__clone",
    "clone3",
    "clone",
    "start_thread",
    "thread_start",
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "ret_from_fork",
    "ret_from_fork_asm",
    // The kernel's system-call entry.
    "entry_SYSCALL_64_after_hwframe",
    "entry_SYSCALL_64",
    "do_syscall_64",
    "x64_sys_call",
    // Kernel function tracing wraps what it traces.
    "ftrace_trampoline",
    // BEAM (erts): thread wrappers, the emulator loop every Erlang process runs in, and
    // the entry and exit of every process.
    "thr_wrapper",
    "sched_thread_func",
    "process_main",
    "$global::process_main",
    "$proc_lib:init_p_do_apply/3",
    "$erts_beamasm:normal_exit/0",
    // Go: goroutine and thread entry.
    "runtime.goexit",
    "runtime.goexit.abi0",
    "runtime.mstart",
    "runtime.mstart0",
    "runtime.mstart1",
    "runtime.main",
    // The JVM: thread entry.
    "thread_native_entry",
    "Thread::call_run",
    "JavaThread::run",
    "JavaThread::thread_main_inner",
];

/// Whether `name` is one of the [`PLUMBING_FRAMES`].
pub fn is_plumbing(name: &[u8]) -> bool {
    PLUMBING_FRAMES.iter().any(|p| p.as_bytes() == name)
}

fn compile(pattern: &str) -> Result<Regex, ModelError> {
    Regex::new(pattern).map_err(|source| ModelError::BadRegex {
        pattern: pattern.to_string(),
        source,
    })
}

/// A set of transforms, applied in this order to each frame: strip offsets/addresses,
/// merge threads (root frame only), drop frames, collapse recursion; then to each sample:
/// drop samples, focus.
#[derive(Clone, Debug, Default)]
pub struct Transforms {
    /// Rules renaming the root frame. Empty: no merging. Default: empty.
    pub merge_rules: Vec<MergeRule>,
    /// Remove frames whose name matches (their callees attach to their caller). Default: none.
    pub drop_frames: Option<Regex>,
    /// Remove whole samples whose stack has a frame that matches. Default: none.
    pub drop_samples: Option<Regex>,
    /// Keep only samples whose stack has a frame that matches. Default: none.
    pub focus: Option<Regex>,
    /// Merge directly recursive calls (`f;f;f` → `f`). Default: false.
    pub collapse_recursion: bool,
    /// Remove `+0x1f` offsets from names. Default: false.
    pub strip_offsets: bool,
    /// Replace hexadecimal addresses (`0x7f12ab`) by `0x...`. Default: false.
    pub strip_addresses: bool,
    /// Keep only samples carrying every one of these labels (pprof's `-tagfocus`).
    /// Default: none.
    pub focus_labels: Vec<LabelMatch>,
    /// Weigh every sample 1: a weighted event (mmap's bytes, off-CPU time, a perf
    /// period) counted in calls, blocks, samples. Profiles that already count samples
    /// keep their weights (a folded line's count is its samples). Default: false.
    pub count_samples: bool,
    /// Remove off-CPU samples of runtimes' idle threads waiting for work
    /// ([`crate::waits::WaitReason::Idle`]: the BEAM's idle schedulers, aux and poller
    /// threads, Go's idle Ms); counted in [`TransformStats::idle`]. Default: false.
    pub drop_idle: bool,
}

/// What a transform did to the samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransformStats {
    /// Samples removed by `drop_samples` (count, weight).
    pub dropped: (u64, u64),
    /// Samples removed because no frame matched `focus` (count, weight).
    pub unfocused: (u64, u64),
    /// Samples left with no frame after `drop_frames` (count, weight).
    pub emptied: (u64, u64),
    /// Samples removed because they lack a label of `focus_labels` (count, weight).
    pub unlabeled: (u64, u64),
    /// Samples removed by `drop_idle`: idle waiting (count, weight).
    pub idle: (u64, u64),
}

impl TransformStats {
    /// Total number of samples removed.
    pub fn removed(&self) -> u64 {
        self.dropped.0 + self.unfocused.0 + self.emptied.0 + self.unlabeled.0 + self.idle.0
    }
}

/// A regex helper: compiles a user pattern, optionally case-insensitive.
pub fn regex(pattern: &str, case_insensitive: bool) -> Result<Regex, ModelError> {
    if case_insensitive {
        compile(&format!("(?i){pattern}"))
    } else {
        compile(pattern)
    }
}

impl Transforms {
    /// Whether no transform is set.
    pub fn is_identity(&self) -> bool {
        self.merge_rules.is_empty()
            && self.drop_frames.is_none()
            && self.drop_samples.is_none()
            && self.focus.is_none()
            && !self.collapse_recursion
            && !self.strip_offsets
            && !self.strip_addresses
            && self.focus_labels.is_empty()
            && !self.count_samples
            && !self.drop_idle
    }

    fn rename<'a>(&self, name: &'a [u8], root: bool) -> Cow<'a, [u8]> {
        let mut name = Cow::Borrowed(name);
        if self.strip_offsets {
            name = own(name, strip_offsets);
        }
        if self.strip_addresses {
            name = own(name, strip_addresses);
        }
        if root {
            for r in &self.merge_rules {
                name = own(name, |n| r.apply(n));
            }
        }
        name
    }

    /// Applies the transforms, returning the new profile and what was removed.
    pub fn apply(&self, p: &Profile) -> (Profile, TransformStats) {
        // Counting samples: every sample weighs 1, unless the weights count samples
        // already. A timer's samples stay samples (each stands for its period of CPU
        // time); other events' samples are occurrences (calls, blocks, faults).
        let count = self.count_samples && p.event.unit != WeightUnit::Samples;
        let mut out = empty_like(p, count);
        let nodes = self.map_stacks(p, &mut out);
        let stats = self.add_samples(p, &mut out, &nodes, count);
        (out, stats)
    }

    /// Each old stack node's new node (`NONE` when all its frames are dropped), and
    /// whether a drop-sample or focus frame is on its path.
    fn map_stacks(&self, p: &Profile, out: &mut Profile) -> NodeMap {
        let mut frames = FrameMap {
            t: self,
            p,
            info: vec![None; p.frames.len()],
        };
        let n = p.stacks.len();
        let mut m = NodeMap {
            new_node: vec![NONE; n],
            dropped: vec![false; n],
            focused: vec![false; n],
        };
        for id in p.stacks.ids() {
            let i = id.0 as usize;
            let parent = p.stacks.parent(id);
            let (pn, pd, pf) = match parent {
                Some(pp) => {
                    let j = pp.0 as usize;
                    (m.new_node[j], m.dropped[j], m.focused[j])
                }
                None => (NONE, false, false),
            };
            let (mapped, ds, fc) = frames.get(out, p.stacks.frame(id), parent.is_none());
            m.dropped[i] = pd || ds;
            m.focused[i] = pf || fc;
            let pnode = (pn != NONE).then_some(StackId(pn));
            m.new_node[i] = match mapped {
                None => pn,
                Some(f) => match pnode {
                    Some(pp) if self.collapse_recursion && out.stacks.frame(pp) == f => pn,
                    _ => out.stacks.intern(pnode, f).0,
                },
            };
        }
        m
    }

    /// The samples kept on their new stacks; those left out counted by why.
    fn add_samples(
        &self,
        p: &Profile,
        out: &mut Profile,
        nodes: &NodeMap,
        count: bool,
    ) -> TransformStats {
        // Whether each label set passes `focus_labels`.
        let label_ok: Vec<bool> = p
            .samples
            .label_sets
            .iter()
            .map(|(_, set)| self.focus_labels.iter().all(|m| m.matches(&p.strings, set)))
            .collect();
        let idle: Vec<bool> = if self.drop_idle {
            crate::waits::stack_reasons(p)
                .into_iter()
                .map(|r| r == crate::waits::WaitReason::Idle)
                .collect()
        } else {
            Vec::new()
        };
        let mut stats = TransformStats::default();
        let s = &p.samples;
        for k in 0..s.len() {
            let i = s.stack[k].0 as usize;
            let w = if count { 1 } else { s.weight[k] };
            let bump = |c: &mut (u64, u64)| {
                c.0 += 1;
                c.1 = c.1.saturating_add(w);
            };
            let labels = s.label_set(k);
            if !label_ok.get(labels.0 as usize).copied().unwrap_or(true) {
                bump(&mut stats.unlabeled);
            } else if idle.get(i).copied().unwrap_or(false) {
                bump(&mut stats.idle);
            } else if nodes.dropped[i] {
                bump(&mut stats.dropped);
            } else if self.focus.is_some() && !nodes.focused[i] {
                bump(&mut stats.unfocused);
            } else if nodes.new_node[i] == NONE {
                bump(&mut stats.emptied);
            } else {
                let th = s.thread[k];
                let th = match p.threads.get(th) {
                    Some(t) => out.threads.intern(t),
                    None => th,
                };
                out.samples
                    .push_labeled(StackId(nodes.new_node[i]), w, s.time[k], th, labels);
            }
        }
        stats
    }
}

/// No new stack node.
const NONE: u32 = u32::MAX;

/// Old stack nodes against the transformed profile's (see `map_stacks`).
struct NodeMap {
    new_node: Vec<u32>,
    dropped: Vec<bool>,
    focused: Vec<bool>,
}

/// A profile with `p`'s strings, event and label sets and nothing else; its unit counts
/// samples when `count`.
fn empty_like(p: &Profile, count: bool) -> Profile {
    let mut out = Profile {
        strings: p.strings.clone(),
        frames: Default::default(),
        stacks: Default::default(),
        threads: ThreadTable::new(),
        samples: SampleTable::default(),
        event: p.event.clone(),
    };
    if count {
        out.event.unit = if p.event.is_clock() {
            WeightUnit::Samples
        } else {
            WeightUnit::Events
        };
        if !p.event.is_clock() {
            out.event.sample_period_ns = None;
        }
    }
    out.samples.label_sets = p.samples.label_sets.clone();
    out
}

/// Per old frame, made on first sight: its frame in the new profile as a non-root and
/// as a root (renamed, or dropped), and whether it matches drop-samples and focus.
#[derive(Clone, Copy)]
struct FrameInfo {
    mapped: [Option<FrameId>; 2],
    drop_sample: bool,
    focus: bool,
}

/// Old frames against the new profile's.
struct FrameMap<'a> {
    t: &'a Transforms,
    p: &'a Profile,
    info: Vec<Option<FrameInfo>>,
}

/// A dropped frame, in `FrameInfo::mapped`.
const DROPPED: FrameId = FrameId(u32::MAX);

impl FrameMap<'_> {
    /// Frame `f` (a root when `root`) in `out`: its new frame (`None` when dropped),
    /// whether it drops its samples, whether it is a focus.
    fn get(&mut self, out: &mut Profile, f: FrameId, root: bool) -> (Option<FrameId>, bool, bool) {
        let (t, p) = (self.t, self.p);
        let info = self.info[f.0 as usize].get_or_insert_with(|| {
            let name = p.frame_name(f);
            FrameInfo {
                mapped: [None, None],
                drop_sample: t.drop_samples.as_ref().is_some_and(|r| r.is_match(name)),
                focus: t.focus.as_ref().is_some_and(|r| r.is_match(name)),
            }
        });
        let k = usize::from(root);
        if info.mapped[k].is_none() {
            let frame = p.frames.get(f);
            let renamed = t.rename(p.strings.get(frame.name), root);
            let dropped = t.drop_frames.as_ref().is_some_and(|r| r.is_match(&renamed));
            info.mapped[k] = Some(if dropped {
                DROPPED
            } else {
                let n = out.strings.intern(&renamed);
                let new = out.frames.intern(Frame {
                    name: n,
                    kind: frame.kind,
                });
                if let Some(src) = p.frames.source(f) {
                    out.frames.set_source(new, src);
                }
                new
            });
        }
        let m = info.mapped[k].filter(|&f| f != DROPPED);
        (m, info.drop_sample, info.focus)
    }
}

fn own<'a>(name: Cow<'a, [u8]>, f: impl FnOnce(&[u8]) -> Cow<'_, [u8]>) -> Cow<'a, [u8]> {
    match f(&name) {
        Cow::Borrowed(_) => name,
        Cow::Owned(v) => Cow::Owned(v),
    }
}

/// Removes every `+0x<hex>` from a name (`memcpy+0x1f` → `memcpy`).
pub fn strip_offsets(name: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memmem::find(name, b"+0x").is_none() {
        return Cow::Borrowed(name);
    }
    let mut out = Vec::with_capacity(name.len());
    let mut i = 0;
    while i < name.len() {
        if name[i..].starts_with(b"+0x") {
            let mut j = i + 3;
            while j < name.len() && name[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j > i + 3 {
                i = j;
                continue;
            }
        }
        out.push(name[i]);
        i += 1;
    }
    Cow::Owned(out)
}

/// Replaces hexadecimal addresses (`0x` followed by hex digits) by `0x...`, as
/// `difffolded.pl -s` does before comparing two profiles.
pub fn strip_addresses(name: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memmem::find(name, b"0x").is_none() {
        return Cow::Borrowed(name);
    }
    let mut out = Vec::with_capacity(name.len());
    let mut i = 0;
    while i < name.len() {
        if name[i..].starts_with(b"0x") {
            let mut j = i + 2;
            while j < name.len() && name[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j > i + 2 {
                out.extend_from_slice(b"0x...");
                i = j;
                continue;
            }
        }
        out.push(name[i]);
        i += 1;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventInfo, FoldedOptions, FoldedWriter, FrameKind, ThreadId, NO_TIME};

    fn profile(lines: &[(&str, u64)]) -> Profile {
        let mut p = Profile::default();
        for (stack, w) in lines {
            let frames: Vec<_> = stack
                .split(';')
                .map(|f| p.frame(f.as_bytes(), FrameKind::Unknown))
                .collect();
            p.add_sample_path(&frames, *w, NO_TIME, ThreadId::NONE);
        }
        p
    }

    fn folded(p: &Profile) -> String {
        let mut v = Vec::new();
        FoldedWriter::new(FoldedOptions::default())
            .write(p, &mut v)
            .unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn merges_beam_schedulers_and_pools() {
        let p = profile(&[
            ("1_scheduler;process_main", 3),
            ("2_scheduler;process_main", 4),
            ("10_dirty_io_sch;erts_dirty_process_main", 1),
            ("pool-1-thread-3;run", 1),
            ("pool-1-thread-12;run", 1),
            ("erts_sched_2;x", 1),
        ]);
        let t = Transforms {
            merge_rules: default_merge_rules(),
            ..Default::default()
        };
        let (q, stats) = t.apply(&p);
        assert_eq!(stats.removed(), 0);
        assert_eq!(
            folded(&q),
            "dirty_io_sch;erts_dirty_process_main 1\nerts_sched;x 1\npool-N-thread;run 2\nscheduler;process_main 7\n"
        );
    }

    #[test]
    fn drop_focus_recursion_offsets() {
        let p = profile(&[("a;b;b;b;c+0x1f", 2), ("a;idle", 5), ("a;d;e", 1)]);
        let t = Transforms {
            drop_samples: Some(regex("^idle$", false).unwrap()),
            collapse_recursion: true,
            strip_offsets: true,
            ..Default::default()
        };
        let (q, stats) = t.apply(&p);
        assert_eq!(stats.dropped, (1, 5));
        assert_eq!(folded(&q), "a;b;c 2\na;d;e 1\n");

        let t = Transforms {
            focus: Some(regex("^D$", true).unwrap()),
            drop_frames: Some(regex("^e$", false).unwrap()),
            ..Default::default()
        };
        let (q, stats) = t.apply(&p);
        assert_eq!(stats.unfocused, (2, 7));
        assert_eq!(folded(&q), "a;d 1\n");
    }

    #[test]
    fn counting_samples_weighs_each_one() {
        let mut p = profile(&[("main;alloc;mmap", 4096), ("main;mmap", 1 << 20)]);
        p.event = EventInfo {
            name: "mmap".into(),
            unit: WeightUnit::Bytes,
            sample_period_ns: None,
        };
        let t = Transforms {
            count_samples: true,
            ..Default::default()
        };
        assert!(!t.is_identity());
        let (q, _) = t.apply(&p);
        assert_eq!(folded(&q), "main;alloc;mmap 1\nmain;mmap 1\n");
        assert_eq!(q.event.unit, WeightUnit::Events);
        assert_eq!(q.event.count_name(), "calls");
        // Counts of samples stay what they are.
        let p = profile(&[("a;b", 3)]);
        assert_eq!(folded(&t.apply(&p).0), "a;b 3\n");
    }

    #[test]
    fn strip_helpers() {
        assert_eq!(&*strip_offsets(b"f+0x1f;g+0xz"), b"f;g+0xz");
        assert_eq!(&*strip_addresses(b"[unknown] 0x7fab12"), b"[unknown] 0x...");
        assert!(MergeRule::parse("nope").is_err());
        assert!(MergeRule::parse("([=x").is_err());
    }

    #[test]
    fn focus_labels_keep_labelled_samples_and_sources_survive() {
        use crate::{Label, LabelValue, Source};
        let mut p = profile(&[("main;serve", 1)]);
        let k = p.strings.intern(b"handler");
        let q = p.strings.intern(b"query");
        let put = p.strings.intern(b"put");
        let file = p.strings.intern(b"main.go");
        let serve = p.frame(b"serve", FrameKind::Unknown);
        p.frames.set_source(serve, Source { file, line: 12 });
        let stack = p.samples.stack[0];
        for (v, w) in [(q, 3), (put, 5)] {
            let set = p.samples.label_sets.intern(&[Label {
                key: k,
                value: LabelValue::Str(v),
            }]);
            p.samples
                .push_labeled(stack, w, NO_TIME, ThreadId::NONE, set);
        }
        let t = Transforms {
            focus_labels: vec![LabelMatch::parse("handler=query").unwrap()],
            strip_offsets: true,
            ..Default::default()
        };
        let (out, stats) = t.apply(&p);
        assert_eq!(stats.unlabeled, (2, 6));
        assert_eq!(folded(&out), "main;serve 3\n");
        let serve2 = out.stacks.frame(out.samples.stack[0]);
        assert_eq!(out.frames.source(serve2).map(|s| s.line), Some(12));
        assert_eq!(
            out.samples.label_sets.get(out.samples.label_set(0)).len(),
            1
        );
    }
}
