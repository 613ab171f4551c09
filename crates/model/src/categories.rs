//! What kind of work a sample was doing, by category: frame rules that name what a sample was doing (Erlang
//! code, garbage collection, the scheduler's busy-wait, I/O polling, a family of system
//! calls...), summed per second of the run.
//!
//! A flame graph answers "which functions"; a category chart answers the question the
//! MQTT seed's engineers needed first — "what kind of work?" — at a glance: a broker with
//! 15,000 idle connections spent almost all its CPU polling for I/O while every in-VM
//! tool showed its schedulers "sleeping".
//!
//! ## Rules
//!
//! A rule names a category and a regular expression. A sample's category is found by
//! walking its stack **from the leaf towards the root**: the first frame that some rule
//! matches decides, and among the rules matching that frame the first in order wins. So
//! `memcpy` called by the garbage collector counts as garbage collection, and the
//! kernel's scheduler running under `epoll_wait` counts as I/O polling (the system call
//! decides, not the context switch inside it). Rules on thread names (`thread:`) are
//! tried first: a dirty scheduler's CPU is the dirty schedulers' whatever it runs —
//! except garbage collection, which is garbage collection on any thread (the BEAM
//! collects large heaps on its dirty CPU schedulers; msacc counts that time as `gc`).
//! Samples no rule matches are `other` (or `other (kernel)` when their leaf is a kernel
//! frame).
//!
//! User rules come from a small file, tried before the built-in sets:
//!
//! ```text
//! # CATEGORY = REGEX          matched against every frame name
//! # CATEGORY = user:REGEX     user-space (and JIT) frames only
//! # CATEGORY = kernel:REGEX   kernel frames only
//! # CATEGORY = thread:REGEX   the sample's thread name
//! queue index = ^rabbit_queue_index:
//! TLS = ^(ssl_|tls_|ssl:)
//! ```
//!
//! The built-in sets cover the BEAM (Erlang code, BIFs and NIFs, garbage collection, the
//! scheduler's busy-wait, port and socket I/O, I/O polling, dirty schedulers, the rest
//! of the runtime), Go (GC, scheduler, system calls, network polling, the runtime), the
//! JVM (GC, JIT compilers, interpreter, safepoints, Java code, the VM), V8's and
//! CPython's garbage collectors, and the Linux kernel (system calls by family, softirq, page faults, idle). Their patterns name
//! runtime-specific functions, so they rarely meet; where they do, the same category
//! name (`I/O polling (poll/epoll)`) joins them.
use crate::{FrameKind, Profile, ThreadId};
use regex::{Regex, RegexSet};

use std::path::Path;

/// Why category rules could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RulesError {
    /// A line of a rules file is malformed.
    #[error("{source_name}:{line}: {what}: '{text}'")]
    Line {
        /// The file (or `built-in`).
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// The line's text.
        text: String,
        /// What is wrong.
        what: String,
    },
    /// The rules file could not be read.
    #[error("cannot read the category rules '{path}': {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The rules together are too large for the regular expression engine.
    #[error("the category rules are too large to compile: {0}")]
    TooLarge(String),
}

/// Which names a rule is matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every frame.
    Any,
    /// User-space frames (native, JIT, inlined).
    User,
    /// Kernel frames.
    Kernel,
    /// The sample's thread name.
    Thread,
}

/// One rule: frames (or threads) matching `pattern` belong to `category`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The category's name.
    pub category: String,
    /// What the pattern is matched against.
    pub target: Target,
    /// The regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// Where the rule came from (`file:line`, or `built-in BEAM`).
    pub origin: String,
}

/// An ordered list of rules. Default: the built-in sets ([`Rules::builtin`]).
#[derive(Clone, Debug)]
pub struct Rules {
    /// The rules, first match wins at each frame.
    pub rules: Vec<Rule>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules::builtin()
    }
}

/// The category of `sched_yield`, when no code above it says what the thread spun for: a
/// yield is how a spinning thread gives way (the BEAM's schedulers and process locks, Go's
/// and the JVM's spin loops), so its caller's category decides, not the system call's.
pub const YIELD: &str = "syscall: sched_yield (spinning)";

/// The built-in sets (the BEAM, Go, the JVM, V8, CPython, the Linux kernel), in the syntax of a user's
/// rules file and in order of precedence: `# SET` starts a set.
pub const BUILTIN: &str = r#"# BEAM
BEAM dirty schedulers = thread:dirty_(cpu|io)_s
garbage collection = user:^(erts_garbage_collect\w*|garbage_collect\w*|erts_gc_\w+|do_minor|minor_collection|major_collection|full_sweep_heaps|sweep_\w+|erts_shrink_new_heap|erts_hibernate|\$erlang:garbage_collect/\d+)$
I/O polling (poll/epoll) = user:^(erts_check_io\w*|erts_poll_\w+|check_io_\w+|poll_thread\w*|epoll_wait|epoll_pwait2?|poll|ppoll|select|pselect)$
BEAM lock contention (spin, yield) = user:^(erts_proc_lock_failed|erts_proc_lock_wait\w*|ethr_mutex_lock_wait__|ethr_rwmutex_\w*wait__|rwmutex_\w*wait\w*|ethr_spin_\w+|erts_lcnt_\w+)$
BEAM scheduler (busy-wait, spin) = user:^(erts_schedule|scheduler_wait|sched_spin_wait|sched_busy_wait\w*|erts_sched_\w+|ethr_event_twait|ethr_event_wait|erts_thr_progress_\w+|erts_msacc_\w+|wake_scheduler\w*|erts_sched_finish_poke)$
port and socket I/O = user:^(erts_port_\w+|erts_internal_port_\w+|port_command\w*|call_driver_\w+|tcp_inet_\w+|tcp_sendv|tcp_recv|tcp_deliver|packet_\w+|inet_\w+drv\w*|erl_drv_\w+|driver_\w+|erts_ioq_\w+|erts_io_\w+|\$(prim_inet|gen_tcp|inet|socket|prim_socket|gen_udp|ssl|tls_sender|tls_connection):.+)$
BIFs and NIFs = user:^(\$global::call_(light_)?bif\w*|\$global::\w*bif\w*|erts_call_dirty_nif|erts_bif_\w+|bif_\w+|enif_\w+|\w+_nif|[a-z][a-z0-9]*(_[a-z0-9]+)*_[0-9])$
Erlang code = user:^\$?[a-z][A-Za-z0-9_@.]*:[^/]+/[0-9]+$|^'[^']+':.+/[0-9]+$
BEAM runtime (other) = user:^(erts_\w+|ethr_\w+|beam_\w+|db_\w+|copy_\w+|size_object\w*|process_main|\$global::\w+|beam\.smp\+0x[0-9a-f]+)$
# Go
garbage collection = user:^runtime\.(gcBgMarkWorker|gcDrain\w*|gcMark\w*|gcAssist\w*|scanobject|scanblock|scanstack|markroot\w*|greyobject|gcStart|wbBufFlush\w*|findObject|stopTheWorld\w*|startTheWorld\w*)$
Go allocation and sweeping = user:^runtime\.(mallocgc\w*|newobject|newarray|makeslice\w*|growslice|nextFreeFast|sweepone|bgsweep|bgscavenge|gcSweep\w*|deductSweepCredit|\(\*mcache\)\.\w+|\(\*mcentral\)\.\w+|\(\*mheap\)\.\w+|\(\*mspan\)\.\w+|\(\*sweepLocked\)\.\w+)$
I/O polling (poll/epoll) = user:^(runtime\.netpoll\w*|internal/poll\.\w+|runtime\.epollwait)$
Go scheduler = user:^runtime\.(schedule|findRunnable|findrunnable|park_m|mcall|stealWork|runqsteal|runqgrab|notesleep|notewakeup|futexsleep|futexwakeup|usleep|osyield|stopm|startm|wakep|handoffp|goready|ready|gopark|goschedImpl|gosched_m|checkTimers|runtimer)$
Go system calls = user:^(syscall\.\w*[Ss]yscall\w*|internal/runtime/syscall\.\w+|runtime/internal/syscall\.\w+|runtime\.entersyscall\w*|runtime\.exitsyscall\w*)$
Go runtime (other) = user:^runtime\.\w+
# JVM
garbage collection = thread:^(GC Thread|G1 |VM Periodic|GC task|ParGC|ConcGC|ZWorker|Shenandoah)
JVM JIT compiler = thread:^(C1 CompilerThre|C2 CompilerThre|C\d CompilerThread)
garbage collection = user:^(G1\w+|PSScavenge\w*|PSParallelCompact\w*|PSPromotionManager\w*|PSOldGen|PSYoungGen|ParallelScavengeHeap\w*|ParallelCompactData|ConcurrentMark\w*|MarkSweep\w*|GenMarkSweep|SerialHeap|GenCollectedHeap|DefNewGeneration|TenuredGeneration|CardGeneration|ContiguousSpace|CompactibleSpace|TenuredSpace|CardTableRS|OopClosure\w*|CollectedHeap\w*|ZHeap\w*|Z[A-Z]\w*(Mark|Relocate)\w*|ShenandoahHeap\w*|GCTask\w*|WeakProcessor\w*|ReferenceProcessor\w*|StringDedup\w*)(<.*>)?(::.*)?$|^OopOopIterate\w*Dispatch<
JVM safepoints = user:^(SafepointSynchronize|SafepointMechanism)::
JVM interpreter = user:^(Interpreter|interpreter|TemplateInterpreter\w*|BytecodeInterpreter\w*)
Java code = user:^(L[a-z][\w/$]*;::\w+|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\.[A-Z][\w$]*[.:]+[\w$<>]+)
JVM runtime (other) = user:^(JVM_\w+|jni_\w+|Unsafe_\w+|JavaCalls::\w+|JavaThread::\w+|libjvm\.so\+0x[0-9a-f]+)
# V8 (Node.js)
garbage collection = user:^v8::internal::(Heap|Scavenger\w*|ScavengeJob|MarkCompactCollector|MinorMarkCompactCollector|MinorMarkSweepCollector|ConcurrentMarking\w*|IncrementalMarking\w*|MarkingVisitor\w*|MainMarkingVisitor|ConcurrentMarkingVisitor\w*|MarkingWorklists?\w*|MarkingBarrier|Sweeper|ArrayBufferSweeper|GCTracer|Evacuat\w+|RecordMigratedSlotVisitor|PointersUpdatingVisitor|LiveObjectVisitor|MemoryReducer|GlobalHandles)(<.*>)?(::.*)?$
# CPython
garbage collection = user:^(gc_collect_main|gc_collect_with_callback|gc_collect_generations|gc_collect_impl|collect_with_callback|collect_generations|_PyGC_CollectNoFail|PyGC_Collect|visit_decref|visit_reachable|move_unreachable|deduce_unreachable|move_legacy_finalizers|handle_legacy_finalizers|finalize_garbage|delete_garbage)$
# kernel
kernel page faults = kernel:^(asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|__handle_mm_fault|do_anonymous_page|do_fault|do_page_fault)$
kernel softirq = kernel:^(__do_softirq|handle_softirqs|do_softirq\w*|net_rx_action|__napi_poll|run_ksoftirqd|irq_exit_rcu|__irq_exit_rcu)$
kernel idle = kernel:^(do_idle|cpu_idle\w*|cpuidle_enter\w*|default_idle\w*|intel_idle\w*|poll_idle|cpu_startup_entry|acpi_idle_\w+)$
I/O polling (poll/epoll) = kernel:^__(x64|arm64|ia32|se)_sys_(epoll_\w+|poll|ppoll|select|pselect6)$
syscall: futex (locks, sleeping) = kernel:^__(x64|arm64|ia32|se)_sys_futex\w*$
syscall: read/write = kernel:^__(x64|arm64|ia32|se)_sys_(read|write|readv|writev|pread64|pwrite64|preadv2?|pwritev2?|sendfile64|splice|tee|io_uring_enter|io_submit|io_getevents|io_pgetevents)$
syscall: network = kernel:^__(x64|arm64|ia32|se)_sys_(sendto|recvfrom|sendmsg|recvmsg|sendmmsg|recvmmsg|accept4?|connect|socket|socketpair|bind|listen|shutdown|setsockopt|getsockopt|getsockname|getpeername)$
syscall: files = kernel:^__(x64|arm64|ia32|se)_sys_(openat2?|open|close|close_range|newfstat\w*|fstat\w*|statx|lseek|fsync|fdatasync|sync_file_range|getdents64|unlink\w*|rename\w*|mkdir\w*|fallocate|ftruncate|fcntl|ioctl)$
syscall: memory = kernel:^__(x64|arm64|ia32|se)_sys_(mmap|munmap|mremap|brk|madvise|mprotect|mlock\w*|munlock\w*)$
syscall: time and sleep = kernel:^__(x64|arm64|ia32|se)_sys_(clock_\w+|nanosleep|gettimeofday|timerfd_\w+|alarm|setitimer|getitimer)$
syscall: sched_yield (spinning) = kernel:^(__(x64|arm64|ia32|se|do)_sys_sched_yield|do_sched_yield)$
syscall: other = kernel:^(__(x64|arm64|ia32|se)_sys_\w+|entry_SYSCALL_64\w*|do_syscall_64)$
"#;

impl Rules {
    /// The built-in sets (BEAM, Go, JVM, V8, CPython, kernel): [`BUILTIN`], each rule's origin its
    /// set (`built-in Go`).
    pub fn builtin() -> Rules {
        static RULES: std::sync::OnceLock<Vec<Rule>> = std::sync::OnceLock::new();
        let rules = RULES.get_or_init(|| {
            let mut set = String::new();
            let mut out = Vec::new();
            for (i, line) in BUILTIN.lines().enumerate() {
                if let Some(name) = line.strip_prefix("# ") {
                    set = name.to_string();
                    continue;
                }
                // Each line alone, so that a rule knows its set (the text's own lines are
                // tested to parse: a built-in rule cannot be refused).
                if let Ok(r) = Rules::parse(line, "built-in") {
                    out.extend(r.rules.into_iter().map(|mut r| {
                        r.origin = format!("built-in {set} (line {})", i + 1);
                        r
                    }));
                }
            }
            out
        });
        Rules {
            rules: rules.clone(),
        }
    }

    /// No rules at all (every sample is `other`).
    pub fn empty() -> Rules {
        Rules { rules: Vec::new() }
    }

    /// Parses a rules file's text (see the module docs); `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Rules, RulesError> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |what: &str| RulesError::Line {
                source_name: source_name.to_string(),
                line: i + 1,
                text: raw.chars().take(200).collect(),
                what: what.to_string(),
            };
            let Some((cat, pat)) = line.split_once('=') else {
                return Err(err("expected CATEGORY = REGEX"));
            };
            let category = cat.trim();
            if category.is_empty() {
                return Err(err("the category name is empty"));
            }
            if category.chars().count() > 80 {
                return Err(err("the category name is longer than 80 characters"));
            }
            if category.chars().any(char::is_control) {
                return Err(err("the category name holds a control character"));
            }
            let pat = pat.trim();
            let (target, pattern) = if let Some(p) = pat.strip_prefix("thread:") {
                (Target::Thread, p)
            } else if let Some(p) = pat.strip_prefix("kernel:") {
                (Target::Kernel, p)
            } else if let Some(p) = pat.strip_prefix("user:") {
                (Target::User, p)
            } else {
                (Target::Any, pat)
            };
            if pattern.is_empty() {
                return Err(err("the regular expression is empty"));
            }
            if let Err(e) = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
            {
                let msg = e.to_string();
                let first = msg.lines().last().unwrap_or("invalid").trim().to_string();
                return Err(err(&format!("invalid regular expression ({first})")));
            }
            rules.push(Rule {
                category: category.to_string(),
                target,
                pattern: pattern.to_string(),
                origin: format!("{source_name}:{}", i + 1),
            });
        }
        Ok(Rules { rules })
    }

    /// Reads a rules file; its rules come before the built-in sets.
    pub fn from_file_and_builtin(path: &Path) -> Result<Rules, RulesError> {
        let text = std::fs::read(path).map_err(|source| RulesError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let name = path.display().to_string();
        let text = String::from_utf8(text).map_err(|e| RulesError::Line {
            source_name: name.clone(),
            line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            text: String::new(),
            what: "not UTF-8 text".into(),
        })?;
        let mut r = Rules::parse(&text, &name)?;
        r.rules.extend(Rules::builtin().rules);
        Ok(r)
    }
}

/// Compiled rules: one regular-expression set per target, so each frame name is scanned
/// once whatever the number of rules. What category a frame, a stack, a thread or a
/// sample is in.
pub struct Categoriser {
    categories: Vec<String>,
    /// Per target (any/user, any/kernel, thread): the set and, per pattern, its rule's
    /// category.
    user: (RegexSet, Vec<usize>),
    kernel: (RegexSet, Vec<usize>),
    thread: (RegexSet, Vec<usize>),
}

impl Categoriser {
    /// Compiles `rules`.
    pub fn new(rules: &Rules) -> Result<Categoriser, RulesError> {
        let mut categories: Vec<String> = Vec::new();
        let mut cat_of = |name: &str| -> usize {
            match categories.iter().position(|c| c == name) {
                Some(i) => i,
                None => {
                    categories.push(name.to_string());
                    categories.len() - 1
                }
            }
        };
        let mut user = (Vec::new(), Vec::new());
        let mut kernel = (Vec::new(), Vec::new());
        let mut thread = (Vec::new(), Vec::new());
        for r in &rules.rules {
            let c = cat_of(&r.category);
            let put = |to: &mut (Vec<String>, Vec<usize>)| {
                to.0.push(r.pattern.clone());
                to.1.push(c);
            };
            match r.target {
                Target::Any => {
                    put(&mut user);
                    put(&mut kernel);
                }
                Target::User => put(&mut user),
                Target::Kernel => put(&mut kernel),
                Target::Thread => put(&mut thread),
            }
        }
        let set = |(pats, cats): (Vec<String>, Vec<usize>)| {
            regex::RegexSetBuilder::new(&pats)
                .size_limit(64 << 20)
                .dfa_size_limit(64 << 20)
                .build()
                .map(|s| (s, cats))
                .map_err(|e| RulesError::TooLarge(e.to_string()))
        };
        Ok(Categoriser {
            categories,
            user: set(user)?,
            kernel: set(kernel)?,
            thread: set(thread)?,
        })
    }

    /// The category of each of `p`'s frames (None: no rule names it).
    pub fn frames(&self, p: &Profile) -> Vec<Option<usize>> {
        p.frames
            .iter()
            .map(|(_, f)| {
                let name = String::from_utf8_lossy(p.strings.get(f.name));
                let set = if f.kind == FrameKind::Kernel {
                    &self.kernel
                } else {
                    &self.user
                };
                Categoriser::first(set, crate::waits::base_name(&name))
            })
            .collect()
    }

    /// The category of a name: the first matching rule's.
    fn first(set: &(RegexSet, Vec<usize>), name: &str) -> Option<usize> {
        if set.0.is_empty() {
            return None;
        }
        set.0.matches(name).iter().next().map(|i| set.1[i])
    }

    /// The rules' category names, in order of first appearance; the indexes the other
    /// methods return point into it, then [`OTHER`] (`len()`) and [`OTHER_KERNEL`]
    /// (`len() + 1`).
    pub fn categories(&self) -> &[String] {
        &self.categories
    }

    /// The category a `thread:` rule gives a thread name.
    pub fn thread(&self, name: &str) -> Option<usize> {
        Categoriser::first(&self.thread, name)
    }

    /// The category of each of `p`'s stacks (None: no rule decides): the deepest frame a
    /// rule names decides, except that an unnamed frame or a yield decides only when
    /// nothing above does.
    pub fn stacks(&self, p: &Profile) -> Vec<Option<usize>> {
        stack_categories(p, self)
    }

    /// The category of each of `p`'s samples: its thread's (a `thread:` rule), else its
    /// stack's, else `other` (`categories().len()`) or `other (kernel)`
    /// (`categories().len() + 1`) by its leaf frame. A stack of garbage collection is
    /// garbage collection whatever its thread.
    pub fn samples(&self, p: &Profile) -> Vec<usize> {
        let gc = self.categories.iter().position(|c| c == GC);
        let stack_cat = self.stacks(p);
        let frames = p.stacks.raw_frames();
        let thread_cat: Vec<Option<usize>> = p
            .threads
            .iter()
            .map(|(_, t)| self.thread(&String::from_utf8_lossy(p.strings.get(t.name))))
            .collect();
        let other = self.categories.len();
        (0..p.samples.len())
            .map(|i| {
                let st = p.samples.stack[i];
                let th = p.samples.thread[i];
                let stack = stack_cat.get(st.0 as usize).copied().flatten();
                let collected = gc.is_some() && stack == gc;
                (th != ThreadId::NONE && !collected)
                    .then(|| thread_cat.get(th.0 as usize).copied().flatten())
                    .flatten()
                    .or(stack)
                    .unwrap_or_else(|| {
                        let kernel = frames
                            .get(st.0 as usize)
                            .is_some_and(|&f| p.frames.get(f).kind == FrameKind::Kernel);
                        if kernel {
                            other + 1
                        } else {
                            other
                        }
                    })
            })
            .collect()
    }

    /// `p`'s weight by category, the largest first (`other` and `other (kernel)`
    /// included when they weigh anything), with the whole.
    pub fn totals(&self, p: &Profile) -> (Vec<(String, u128)>, u128) {
        let n = self.categories.len();
        let mut w = vec![0u128; n + 2];
        for (c, &x) in self.samples(p).iter().zip(&p.samples.weight) {
            w[*c] += x as u128;
        }
        let all = w.iter().sum();
        let mut out: Vec<(String, u128)> = w
            .into_iter()
            .enumerate()
            .filter(|(_, x)| *x > 0)
            .map(|(i, x)| {
                let name = match i.checked_sub(n) {
                    None => self.categories[i].clone(),
                    Some(0) => OTHER.to_string(),
                    Some(_) => OTHER_KERNEL.to_string(),
                };
                (name, x)
            })
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        (out, all)
    }
}

/// The category of samples no rule names, their leaf a user frame.
pub const OTHER: &str = "other";
/// ... their leaf a kernel frame.
pub const OTHER_KERNEL: &str = "other (kernel)";

/// The built-in category of garbage collection (every runtime's).
pub const GC: &str = "garbage collection";

/// The category of each stack (None: no rule decides).
fn stack_categories(p: &Profile, c: &Categoriser) -> Vec<Option<usize>> {
    // Category of each frame (None: no rule), then of each stack: its own frame's, else
    // its parent's (parents come before children in the stack table).
    let frame_cat = c.frames(p);
    // Leaf first: a stack's category is decided by its deepest matching frame, which is
    // the stack's own frame if it matches, else its parent stack's deepest match.
    let parents = p.stacks.raw_parents();
    let frames = p.stacks.raw_frames();
    // A frame without a name (`beam.smp+0x73ee0`: a static function of a stripped binary)
    // decides only when no frame above it does: the BEAM's busy-wait is such a function
    // under erts_schedule, and its category is the scheduler's, not "the runtime's".
    let unnamed: Vec<bool> = p
        .frames
        .iter()
        .map(|(_, f)| {
            let n = p.strings.get(f.name);
            n.windows(3).any(|w| w == b"+0x") || n == b"[unknown]"
        })
        .collect();
    // A yield decides only when no user-space frame above it does (the system call's
    // entry frames in between do not count): `user_cat` is the deepest user frame's.
    let yield_cat = c.categories.iter().position(|n| n == YIELD);
    // A runtime's catch-all (`Go runtime (other)`: any `runtime.` function) decides only
    // when nothing above it does: `runtime.memmove` under the collector is collecting.
    let catch_all: Vec<bool> = c
        .categories
        .iter()
        .map(|n| n.ends_with("(other)"))
        .collect();
    let mut stack_cat: Vec<Option<usize>> = Vec::with_capacity(parents.len());
    let mut user_cat: Vec<Option<usize>> = Vec::with_capacity(parents.len());
    for i in 0..parents.len() {
        let f = frames[i].0 as usize;
        let own = frame_cat.get(f).copied().flatten();
        let parent = |of: &[Option<usize>]| match parents[i] {
            u32::MAX => None,
            x => of.get(x as usize).copied().flatten(),
        };
        let (inherited, inherited_user) = (parent(&stack_cat), parent(&user_cat));
        let is_user = p.frames.get(frames[i]).kind != FrameKind::Kernel;
        let weak = own.is_some_and(|k| catch_all.get(k).copied().unwrap_or(false));
        let decided = if unnamed.get(f).copied().unwrap_or(false) {
            inherited.or(own)
        } else if weak {
            // ... but not above a catch-all of its own runtime's: a BEAM frame above Go's
            // is not a thing, and a category only a catch-all gave is no better.
            inherited
                .filter(|k| !catch_all.get(*k).copied().unwrap_or(false))
                .or(own)
        } else if own.is_some() && own == yield_cat {
            inherited_user.or(own)
        } else {
            own.or(inherited)
        };
        stack_cat.push(decided);
        user_cat.push(if is_user { decided } else { inherited_user });
    }
    stack_cat
}

/// Whether `p` weighs off-CPU time (its categories are why it waited, not rules).
pub fn is_offcpu(p: &Profile) -> bool {
    let e = p.event.name.to_ascii_lowercase();
    e.contains("offcpu") || e.contains("off-cpu") || e.contains("sched_switch")
}

/// Whether `name` matches `pattern` (for tests and diagnostics).
pub fn matches(pattern: &str, name: &str) -> bool {
    Regex::new(pattern)
        .map(|r| r.is_match(name))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventInfo, WeightUnit, NO_TIME};

    /// Every line of the built-in text is a set's heading or a rule that parses: none is
    /// left out by [`Rules::builtin`].
    #[test]
    fn every_builtin_line_is_a_rule() {
        let lines = BUILTIN
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count();
        assert_eq!(Rules::builtin().rules.len(), lines);
        assert_eq!(Rules::parse(BUILTIN, "x").unwrap().rules.len(), lines);
        assert!(Rules::builtin().rules[0]
            .origin
            .starts_with("built-in BEAM"));
    }

    /// Totals by category: a thread rule first, then the deepest frame a rule names, the
    /// rest `other` or `other (kernel)` by the leaf; the shares add up to the whole.
    /// A runtime's catch-all under a named category keeps the named one: the collector's
    /// memmove is collecting.
    #[test]
    fn a_catch_all_does_not_hide_its_callers_category() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"srv");
        let path = |p: &mut Profile, names: &[&str]| -> Vec<crate::FrameId> {
            names
                .iter()
                .map(|n| p.frame(n.as_bytes(), FrameKind::User))
                .collect()
        };
        let gc = path(
            &mut p,
            &[
                "runtime.gcBgMarkWorker",
                "runtime.gcDrain",
                "runtime.memmove",
            ],
        );
        let alone = path(&mut p, &["main.serve", "runtime.memmove"]);
        p.add_sample_path(&gc, 3, NO_TIME, t);
        p.add_sample_path(&alone, 1, NO_TIME, t);
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let (totals, _) = c.totals(&p);
        assert_eq!(totals[0], (GC.to_string(), 3), "{totals:?}");
        assert_eq!(
            totals[1],
            ("Go runtime (other)".to_string(), 1),
            "{totals:?}"
        );
    }

    /// Go's allocation is not collection (runtime/metrics counts it as the program's
    /// time): mallocgc and what it calls are allocation, unless it assists the collector.
    #[test]
    fn go_allocation_is_not_garbage_collection_unless_it_assists() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"srv");
        let mut path = |names: &[&str]| -> Vec<crate::FrameId> {
            names
                .iter()
                .map(|n| p.frame(n.as_bytes(), FrameKind::User))
                .collect()
        };
        let alloc = path(&[
            "main.build",
            "runtime.mallocgc",
            "runtime.memclrNoHeapPointers",
        ]);
        let assist = path(&[
            "main.build",
            "runtime.mallocgc",
            "runtime.gcAssistAlloc",
            "runtime.gcDrainN",
            "runtime.scanobject",
        ]);
        p.add_sample_path(&alloc, 5, NO_TIME, t);
        p.add_sample_path(&assist, 2, NO_TIME, t);
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let (totals, _) = c.totals(&p);
        assert!(
            totals.contains(&("Go allocation and sweeping".to_string(), 5)),
            "{totals:?}"
        );
        assert!(totals.contains(&(GC.to_string(), 2)), "{totals:?}");
    }

    /// The serial collector runs in the JVM's "VM Thread": its work is named by the
    /// collector's classes (a young collection, a compaction, the closures it iterates).
    #[test]
    fn the_serial_collectors_functions_are_garbage_collection() {
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(2), b"VM Thread");
        for leaf in [
            "ContiguousSpace::prepare_for_compaction()",
            "DefNewGeneration::copy_to_survivor_space(oopDesc*)",
            "OopOopIterateDispatch<MarkAndPushClosure>::Table::oop_oop_iterate<InstanceKlass, narrowOop>",
            "CompactibleSpace::compact()",
        ] {
            let path = [
                p.frame(b"VMThread::run()", FrameKind::User),
                p.frame(leaf.as_bytes(), FrameKind::User),
            ];
            p.add_sample_path(&path, 1, NO_TIME, t);
        }
        let (totals, _) = c.totals(&p);
        assert_eq!(totals, vec![(GC.to_string(), 4)], "{totals:?}");
    }

    /// V8's collector on Node's main thread and its helpers, as perf names it (frames
    /// seen under `node --max-semi-space-size=1` allocating per request).
    #[test]
    fn v8s_collector_is_garbage_collection() {
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"node");
        for leaf in [
            "v8::internal::Scavenger::EvacuateInPlaceInternalizableString<v8::internal::FullHeapObjectSlot>",
            "v8::internal::ScavengerCollector::CollectGarbage",
            "v8::internal::ConcurrentMarking::RunMajor",
            "v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)",
            "v8::internal::MarkCompactCollector::CollectGarbage",
        ] {
            let path = [
                p.frame(b"JS:*buildPage /srv.js:3:19", FrameKind::User),
                p.frame(leaf.as_bytes(), FrameKind::User),
            ];
            p.add_sample_path(&path, 1, NO_TIME, t);
        }
        // The program's own JavaScript is not.
        let js = [p.frame(b"JS:*buildPage /srv.js:3:19", FrameKind::User)];
        p.add_sample_path(&js, 1, NO_TIME, t);
        let (totals, _) = c.totals(&p);
        assert_eq!(totals[0], (GC.to_string(), 5), "{totals:?}");
        assert_eq!(totals.iter().map(|t| t.1).sum::<u128>(), 6, "{totals:?}");
    }

    /// CPython's cycle collector, as kiln names its frames in a Python server (Debian's
    /// libpython3.11: `gc_collect_main` and the visits under it), and the Python code
    /// that allocated: the collector's stacks are garbage collection, whatever their leaf.
    #[test]
    fn cpythons_collector_is_garbage_collection() {
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"python3");
        let py = p.frame(b"build_catalogue (server.py:40)", FrameKind::User);
        let alloc = p.frame(b"_PyObject_GC_Link", FrameKind::User);
        // As Debian's symbols name it (python3-dbg): a copy made by link-time optimisation.
        let collect = p.frame(b"gc_collect_main.lto_priv.0", FrameKind::User);
        for leaf in ["visit_decref", "dict_traverse", "gc_collect_main"] {
            let path = [
                py,
                alloc,
                collect,
                p.frame(leaf.as_bytes(), FrameKind::User),
            ];
            p.add_sample_path(&path, 1, NO_TIME, t);
        }
        // A broken stack of the collector's own visit is still the collector's.
        let visit = [p.frame(b"visit_reachable", FrameKind::User)];
        p.add_sample_path(&visit, 1, NO_TIME, t);
        // The program's own Python is not.
        p.add_sample_path(&[py], 2, NO_TIME, t);
        let (totals, _) = c.totals(&p);
        assert_eq!(totals[0], (GC.to_string(), 4), "{totals:?}");
        assert_eq!(totals.iter().map(|t| t.1).sum::<u128>(), 6, "{totals:?}");
    }

    #[test]
    fn totals_by_category() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let main = p.frame(b"main", FrameKind::User);
        let gc = p.frame(b"runtime.gcBgMarkWorker", FrameKind::User);
        let scan = p.frame(b"runtime.scanobject", FrameKind::User);
        let k = p.frame(b"clear_page_erms", FrameKind::Kernel);
        let t = p.thread(Some(1), Some(1), b"worker");
        let g = p.thread(Some(1), Some(2), b"GC Thread#0");
        p.add_sample_path(&[main, gc, scan], 5, NO_TIME, t);
        p.add_sample_path(&[main], 3, NO_TIME, t);
        p.add_sample_path(&[main, k], 1, NO_TIME, t);
        p.add_sample_path(&[main], 2, NO_TIME, g);
        let c = Categoriser::new(&Rules::builtin()).unwrap();
        let (totals, all) = c.totals(&p);
        assert_eq!(all, 11);
        assert_eq!(
            totals,
            [
                (GC.to_string(), 7),
                (OTHER.to_string(), 3),
                (OTHER_KERNEL.to_string(), 1)
            ]
        );
    }
}
