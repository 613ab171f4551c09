//! Where the CPU went, by category: frame rules that name what a sample was doing (Erlang
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
//! tried first: a dirty scheduler's CPU is the dirty schedulers' whatever it runs.
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
//! JVM (GC, JIT compilers, interpreter, safepoints, Java code, the VM) and the Linux
//! kernel (system calls by family, softirq, page faults, idle). Their patterns name
//! runtime-specific functions, so they rarely meet; where they do, the same category
//! name (`I/O polling (poll/epoll)`) joins them.
use kiln_model::waits::{self, WaitReason};
use kiln_model::{FrameKind, Profile, Quantity, StackId, ThreadId, NO_TIME};
use regex::{Regex, RegexSet};
use serde::Serialize;
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
const YIELD: &str = "syscall: sched_yield (spinning)";

/// The built-in sets: `(set, category, target, pattern)`, in order of precedence.
const BUILTIN: &[(&str, &str, Target, &str)] = &[
    // BEAM: dirty schedulers by thread (truncated comm names: 1_dirty_cpu_sch).
    (
        "BEAM",
        "BEAM dirty schedulers",
        Target::Thread,
        r"dirty_(cpu|io)_s",
    ),
    (
        "BEAM",
        "garbage collection",
        Target::User,
        r"^(erts_garbage_collect\w*|garbage_collect\w*|erts_gc_\w+|do_minor|minor_collection|major_collection|full_sweep_heaps|sweep_\w+|erts_shrink_new_heap|erts_hibernate|\$erlang:garbage_collect/\d+)$",
    ),
    (
        "BEAM",
        "I/O polling (poll/epoll)",
        Target::User,
        r"^(erts_check_io\w*|erts_poll_\w+|check_io_\w+|poll_thread\w*|epoll_wait|epoll_pwait2?|poll|ppoll|select|pselect)$",
    ),
    (
        "BEAM",
        "BEAM lock contention (spin, yield)",
        Target::User,
        r"^(erts_proc_lock_failed|erts_proc_lock_wait\w*|ethr_mutex_lock_wait__|ethr_rwmutex_\w*wait__|rwmutex_\w*wait\w*|ethr_spin_\w+|erts_lcnt_\w+)$",
    ),
    (
        "BEAM",
        "BEAM scheduler (busy-wait, spin)",
        Target::User,
        r"^(erts_schedule|scheduler_wait|sched_spin_wait|sched_busy_wait\w*|erts_sched_\w+|ethr_event_twait|ethr_event_wait|erts_thr_progress_\w+|erts_msacc_\w+|wake_scheduler\w*|erts_sched_finish_poke)$",
    ),
    (
        "BEAM",
        "port and socket I/O",
        Target::User,
        r"^(erts_port_\w+|erts_internal_port_\w+|port_command\w*|call_driver_\w+|tcp_inet_\w+|tcp_sendv|tcp_recv|tcp_deliver|packet_\w+|inet_\w+drv\w*|erl_drv_\w+|driver_\w+|erts_ioq_\w+|erts_io_\w+|\$(prim_inet|gen_tcp|inet|socket|prim_socket|gen_udp|ssl|tls_sender|tls_connection):.+)$",
    ),
    (
        "BEAM",
        "BIFs and NIFs",
        Target::User,
        r"^(\$global::call_(light_)?bif\w*|\$global::\w*bif\w*|erts_call_dirty_nif|erts_bif_\w+|bif_\w+|enif_\w+|\w+_nif|[a-z][a-z0-9]*(_[a-z0-9]+)*_[0-9])$",
    ),
    (
        "BEAM",
        "Erlang code",
        Target::User,
        r"^\$?[a-z][A-Za-z0-9_@.]*:[^/]+/[0-9]+$|^'[^']+':.+/[0-9]+$",
    ),
    (
        "BEAM",
        "BEAM runtime (other)",
        Target::User,
        r"^(erts_\w+|ethr_\w+|beam_\w+|db_\w+|copy_\w+|size_object\w*|process_main|\$global::\w+|beam\.smp\+0x[0-9a-f]+)$",
    ),
    // Go.
    (
        "Go",
        "garbage collection",
        Target::User,
        r"^runtime\.(gcBgMarkWorker|gcDrain\w*|gcMark\w*|gcAssist\w*|scanobject|scanblock|scanstack|markroot\w*|greyobject|sweepone|bgsweep|bgscavenge|mallocgc\w*|gcStart|gcSweep\w*|wbBufFlush\w*|findObject)$",
    ),
    (
        "Go",
        "I/O polling (poll/epoll)",
        Target::User,
        r"^(runtime\.netpoll\w*|internal/poll\.\w+|runtime\.epollwait)$",
    ),
    (
        "Go",
        "Go scheduler",
        Target::User,
        r"^runtime\.(schedule|findRunnable|findrunnable|park_m|mcall|stealWork|runqsteal|runqgrab|notesleep|notewakeup|futexsleep|futexwakeup|usleep|osyield|stopm|startm|wakep|handoffp|goready|ready|gopark|goschedImpl|gosched_m|checkTimers|runtimer)$",
    ),
    (
        "Go",
        "Go system calls",
        Target::User,
        r"^(syscall\.\w*[Ss]yscall\w*|internal/runtime/syscall\.\w+|runtime/internal/syscall\.\w+|runtime\.entersyscall\w*|runtime\.exitsyscall\w*)$",
    ),
    ("Go", "Go runtime (other)", Target::User, r"^runtime\.\w+"),
    // JVM.
    (
        "JVM",
        "garbage collection",
        Target::Thread,
        r"^(GC Thread|G1 |VM Periodic|GC task|ParGC|ConcGC|ZWorker|Shenandoah)",
    ),
    (
        "JVM",
        "JVM JIT compiler",
        Target::Thread,
        r"^(C1 CompilerThre|C2 CompilerThre|C\d CompilerThread)",
    ),
    (
        "JVM",
        "garbage collection",
        Target::User,
        r"^(G1\w+|PSScavenge\w*|PSParallelCompact\w*|ParallelScavengeHeap\w*|ConcurrentMark\w*|MarkSweep\w*|OopClosure\w*|CollectedHeap\w*|ZHeap\w*|ShenandoahHeap\w*|GCTask\w*)(::.*)?$",
    ),
    (
        "JVM",
        "JVM safepoints",
        Target::User,
        r"^(SafepointSynchronize|SafepointMechanism)::",
    ),
    (
        "JVM",
        "JVM interpreter",
        Target::User,
        r"^(Interpreter|interpreter|TemplateInterpreter\w*|BytecodeInterpreter\w*)",
    ),
    (
        "JVM",
        "Java code",
        Target::User,
        r"^(L[a-z][\w/$]*;::\w+|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\.[A-Z][\w$]*[.:]+[\w$<>]+)",
    ),
    (
        "JVM",
        "JVM runtime (other)",
        Target::User,
        r"^(JVM_\w+|jni_\w+|Unsafe_\w+|JavaCalls::\w+|JavaThread::\w+|libjvm\.so\+0x[0-9a-f]+)",
    ),
    // The Linux kernel: what the system call was, or what interrupted the thread.
    (
        "kernel",
        "kernel page faults",
        Target::Kernel,
        r"^(asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|__handle_mm_fault|do_anonymous_page|do_fault|do_page_fault)$",
    ),
    (
        "kernel",
        "kernel softirq",
        Target::Kernel,
        r"^(__do_softirq|handle_softirqs|do_softirq\w*|net_rx_action|__napi_poll|run_ksoftirqd|irq_exit_rcu|__irq_exit_rcu)$",
    ),
    (
        "kernel",
        "kernel idle",
        Target::Kernel,
        r"^(do_idle|cpu_idle\w*|cpuidle_enter\w*|default_idle\w*|intel_idle\w*|poll_idle|cpu_startup_entry|acpi_idle_\w+)$",
    ),
    (
        "kernel",
        "I/O polling (poll/epoll)",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(epoll_\w+|poll|ppoll|select|pselect6)$",
    ),
    (
        "kernel",
        "syscall: futex (locks, sleeping)",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_futex\w*$",
    ),
    (
        "kernel",
        "syscall: read/write",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(read|write|readv|writev|pread64|pwrite64|preadv2?|pwritev2?|sendfile64|splice|tee|io_uring_enter|io_submit|io_getevents|io_pgetevents)$",
    ),
    (
        "kernel",
        "syscall: network",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(sendto|recvfrom|sendmsg|recvmsg|sendmmsg|recvmmsg|accept4?|connect|socket|socketpair|bind|listen|shutdown|setsockopt|getsockopt|getsockname|getpeername)$",
    ),
    (
        "kernel",
        "syscall: files",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(openat2?|open|close|close_range|newfstat\w*|fstat\w*|statx|lseek|fsync|fdatasync|sync_file_range|getdents64|unlink\w*|rename\w*|mkdir\w*|fallocate|ftruncate|fcntl|ioctl)$",
    ),
    (
        "kernel",
        "syscall: memory",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(mmap|munmap|mremap|brk|madvise|mprotect|mlock\w*|munlock\w*)$",
    ),
    (
        "kernel",
        "syscall: time and sleep",
        Target::Kernel,
        r"^__(x64|arm64|ia32|se)_sys_(clock_\w+|nanosleep|gettimeofday|timerfd_\w+|alarm|setitimer|getitimer)$",
    ),
    (
        "kernel",
        YIELD,
        Target::Kernel,
        r"^(__(x64|arm64|ia32|se|do)_sys_sched_yield|do_sched_yield)$",
    ),
    (
        "kernel",
        "syscall: other",
        Target::Kernel,
        r"^(__(x64|arm64|ia32|se)_sys_\w+|entry_SYSCALL_64\w*|do_syscall_64)$",
    ),
];

impl Rules {
    /// The built-in sets (BEAM, Go, JVM, kernel).
    pub fn builtin() -> Rules {
        Rules {
            rules: BUILTIN
                .iter()
                .map(|&(set, cat, target, pat)| Rule {
                    category: cat.to_string(),
                    target,
                    pattern: pat.to_string(),
                    origin: format!("built-in {set}"),
                })
                .collect(),
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
/// once whatever the number of rules.
struct Compiled {
    categories: Vec<String>,
    /// Per target (any/user, any/kernel, thread): the set and, per pattern, its rule's
    /// category.
    user: (RegexSet, Vec<usize>),
    kernel: (RegexSet, Vec<usize>),
    thread: (RegexSet, Vec<usize>),
}

impl Compiled {
    fn new(rules: &Rules) -> Result<Compiled, RulesError> {
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
        Ok(Compiled {
            categories,
            user: set(user)?,
            kernel: set(kernel)?,
            thread: set(thread)?,
        })
    }

    /// The category of each of `p`'s frames (None: no rule names it).
    fn frames(&self, p: &Profile) -> Vec<Option<usize>> {
        p.frames
            .iter()
            .map(|(_, f)| {
                let name = String::from_utf8_lossy(p.strings.get(f.name));
                let set = if f.kind == FrameKind::Kernel {
                    &self.kernel
                } else {
                    &self.user
                };
                Compiled::first(set, &name)
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
}

/// Where a profile's weight went per interval, by category.
#[derive(Clone, Debug, Serialize)]
pub struct CategorySeries {
    /// The profile's event (`cpu-clock`, `offcpu`).
    pub event: String,
    /// What the values are: `% of one CPU` (CPU time), `threads` (off-CPU time: the mean
    /// number of threads blocked), or `/s` (other events per second).
    pub unit: String,
    /// Category names, largest total first; `other` and `other (kernel)` last.
    pub names: Vec<String>,
    /// The interval edges, ns relative to the page's origin: interval `i` is
    /// `[edges[i], edges[i + 1])`.
    pub edges: Vec<i64>,
    /// `values[c][i]`: category `c` in interval `i`, in `unit`.
    pub values: Vec<Vec<f64>>,
    /// Each category's share of the profile's weight inside the intervals, percent.
    pub shares: Vec<f64>,
    /// Samples outside every interval (before the first or after the last), not charted.
    pub outside: u64,
    /// Samples without a timestamp, not charted.
    pub untimed: u64,
}

/// Categorises `p`'s samples with `rules` and sums them over the intervals whose edges
/// are `edges` (absolute ns on the profile's clock, increasing), writing times relative to
/// `origin`. Samples weighing time (off-CPU blocks) cover `[t, t + weight]` and are
/// spread over the intervals they overlap. `None` when there are fewer than two edges or
/// the profile has no timestamps.
pub fn categorise(
    p: &Profile,
    rules: &Rules,
    edges: &[u64],
    origin: u64,
) -> Result<Option<CategorySeries>, RulesError> {
    if edges.len() < 2 || !p.samples.has_time() {
        return Ok(None);
    }
    let c = Compiled::new(rules)?;
    let other = c.categories.len();
    let other_kernel = other + 1;
    // Off-CPU time goes by why it waited (kiln_model::waits), after the rules' categories.
    let reasons_at = other + 2;
    let n_cat = reasons_at + WaitReason::ALL.len();
    let is_offcpu = is_offcpu(p);
    let wait_reasons = is_offcpu.then(|| waits::stack_reasons(p));

    let stack_cat = stack_categories(p, &c);
    let frames = p.stacks.raw_frames();
    let thread_cat: Vec<Option<usize>> = p
        .threads
        .iter()
        .map(|(_, t)| Compiled::first(&c.thread, &String::from_utf8_lossy(p.strings.get(t.name))))
        .collect();
    let leaf_kernel = |s: StackId| {
        frames
            .get(s.0 as usize)
            .map(|&f| p.frames.get(f).kind == FrameKind::Kernel)
            .unwrap_or(false)
    };

    // ns each unit of weight stands for, and whether samples cover a span.
    let ns_per_weight = p.event.ns_per_weight();
    let spans = matches!(p.event.quantity(), Quantity::Time { .. });
    let unit = match (ns_per_weight, is_offcpu) {
        (Some(_), true) => "threads",
        (Some(_), false) => "% of one CPU",
        (None, _) => "/s",
    };
    let category = |i: usize| -> usize {
        let st = p.samples.stack[i];
        let th = p.samples.thread[i];
        match &wait_reasons {
            Some(r) => {
                let reason = r.get(st.0 as usize).copied().unwrap_or(WaitReason::Other);
                reasons_at
                    + WaitReason::ALL
                        .iter()
                        .position(|&x| x == reason)
                        .unwrap_or(0)
            }
            None => (th != ThreadId::NONE)
                .then(|| thread_cat.get(th.0 as usize).copied().flatten())
                .flatten()
                .or_else(|| stack_cat.get(st.0 as usize).copied().flatten())
                .unwrap_or(if leaf_kernel(st) { other_kernel } else { other }),
        }
    };
    let span_ns = spans.then_some(ns_per_weight.unwrap_or(1.0));
    let Binned {
        sums,
        outside,
        untimed,
    } = bin_samples(p, edges, n_cat, span_ns, category);
    let values = in_chart_unit(&sums, edges, ns_per_weight, is_offcpu);
    let totals: Vec<f64> = sums.iter().map(|r| r.iter().sum()).collect();
    let all: f64 = totals.iter().sum();
    let mut names = c.categories.clone();
    names.push("other".into());
    names.push("other (kernel)".into());
    names.extend(WaitReason::ALL.iter().map(|r| r.name().to_string()));
    let order = chart_order(&totals, is_offcpu, other, reasons_at);
    Ok(Some(CategorySeries {
        event: p.event.name.clone(),
        unit: unit.to_string(),
        names: order.iter().map(|&i| names[i].clone()).collect(),
        edges: edges.iter().map(|&e| e as i64 - origin as i64).collect(),
        values: order.iter().map(|&i| values[i].clone()).collect(),
        shares: order
            .iter()
            .map(|&i| {
                if all > 0.0 {
                    totals[i] / all * 100.0
                } else {
                    0.0
                }
            })
            .collect(),
        outside,
        untimed,
    }))
}

/// The category of each stack (None: no rule decides).
fn stack_categories(p: &Profile, c: &Compiled) -> Vec<Option<usize>> {
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
        let decided = if unnamed.get(f).copied().unwrap_or(false) {
            inherited.or(own)
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

/// Samples summed by category (rows) and interval (columns), and the samples left out.
struct Binned {
    sums: Vec<Vec<f64>>,
    outside: u64,
    untimed: u64,
}

/// Sums `p`'s samples into `n_cat` rows by `category` (of a sample's index) over the
/// intervals of `edges`. With `span_ns` (ns per unit of weight), a sample covers
/// `[t, t + weight × span_ns)` and is spread over the intervals it overlaps.
fn bin_samples(
    p: &Profile,
    edges: &[u64],
    n_cat: usize,
    span_ns: Option<f64>,
    category: impl Fn(usize) -> usize,
) -> Binned {
    let nb = edges.len() - 1;
    let mut sums = vec![vec![0.0f64; nb]; n_cat];
    let (lo, hi) = (edges[0], edges[nb]);
    let mut outside = 0u64;
    let mut untimed = 0u64;
    let bin_of = |t: u64| -> usize { edges.partition_point(|&e| e <= t).saturating_sub(1) };
    for i in 0..p.samples.len() {
        let t = p.samples.time[i];
        if t == NO_TIME {
            untimed += 1;
            continue;
        }
        let cat = category(i);
        let w = p.samples.weight[i] as f64;
        let len = span_ns.map_or(0.0, |ns| w * ns);
        if len <= 0.0 {
            if t < lo || t >= hi {
                outside += 1;
                continue;
            }
            sums[cat][bin_of(t)] += w;
            continue;
        }
        // A span [t, t + len): its weight spread over the intervals it overlaps.
        let (a, b) = (t as f64, t as f64 + len);
        if b <= lo as f64 || a >= hi as f64 {
            outside += 1;
            continue;
        }
        let mut k = bin_of(t.max(lo));
        while k < nb && (edges[k] as f64) < b {
            let (s, e) = (edges[k] as f64, edges[k + 1] as f64);
            let overlap = b.min(e) - a.max(s);
            if overlap > 0.0 {
                sums[cat][k] += w * overlap / len;
            }
            k += 1;
        }
    }
    Binned {
        sums,
        outside,
        untimed,
    }
}

/// `sums` in the chart's unit, per interval: time as a share of the interval (threads,
/// or % of one CPU), counts per second.
fn in_chart_unit(
    sums: &[Vec<f64>],
    edges: &[u64],
    ns_per_weight: Option<f64>,
    is_offcpu: bool,
) -> Vec<Vec<f64>> {
    let mut values = sums.to_vec();
    for row in values.iter_mut() {
        for (k, v) in row.iter_mut().enumerate() {
            let dt = (edges[k + 1] - edges[k]) as f64;
            *v = match (ns_per_weight, is_offcpu) {
                (Some(ns), true) => *v * ns / dt,
                (Some(ns), false) => *v * ns / dt * 100.0,
                (None, _) => *v / (dt / 1e9),
            };
        }
    }
    values
}

/// The rows to chart: largest first, the "other"s last; empty categories dropped.
fn chart_order(totals: &[f64], is_offcpu: bool, other: usize, reasons_at: usize) -> Vec<usize> {
    let other_kernel = other + 1;
    let (firsts, lasts) = if is_offcpu {
        let last = reasons_at + WaitReason::ALL.len() - 1;
        ((reasons_at..last).collect::<Vec<_>>(), vec![last])
    } else {
        ((0..other).collect(), vec![other, other_kernel])
    };
    let mut order: Vec<usize> = firsts.into_iter().filter(|&i| totals[i] > 0.0).collect();
    order.sort_by(|&a, &b| totals[b].total_cmp(&totals[a]).then(a.cmp(&b)));
    order.extend(lasts.into_iter().filter(|&i| totals[i] > 0.0));
    order
}

/// Whether `p` weighs off-CPU time (its categories are why it waited, not rules).
fn is_offcpu(p: &Profile) -> bool {
    let e = p.event.name.to_ascii_lowercase();
    e.contains("offcpu") || e.contains("off-cpu") || e.contains("sched_switch")
}

/// What kind of work each frame is, for the flame graphs' "by category" colouring: the
/// rules' decision per frame, which the viewer applies along each stack as [`categorise`]
/// does (a frame's own category, else its caller's; an unnamed frame's or a yield's only
/// when nothing above decides), so a frame's colour is the category its self time counts
/// in.
#[derive(Clone, Debug, Serialize)]
pub struct FrameCategories {
    /// Category names: the category chart's order first (and so its colours), then the
    /// rest of the rules' and `other`, `other (kernel)`.
    pub names: Vec<String>,
    /// `(frame name, 1 for a kernel frame else 0, category)` of every frame a rule names.
    pub frames: Vec<(String, u8, usize)>,
    /// `(thread name, category)` of every thread a `thread:` rule names.
    pub threads: Vec<(String, usize)>,
    /// The category of a stack no rule decides, its leaf a user frame.
    pub other: usize,
    /// The category of a stack no rule decides, its leaf a kernel frame.
    pub other_kernel: usize,
    /// The category of `sched_yield`, which decides only when no user frame above does.
    pub yield_category: Option<usize>,
}

/// `p`'s frames by category under `rules`, names in `order` first (the profile's
/// [`CategorySeries::names`]). `None` for off-CPU profiles, whose categories are why
/// each stack waited, not its frames.
pub fn frame_categories(
    p: &Profile,
    rules: &Rules,
    order: &[String],
) -> Result<Option<FrameCategories>, RulesError> {
    if is_offcpu(p) {
        return Ok(None);
    }
    let c = Compiled::new(rules)?;
    let mut all = c.categories.clone();
    all.push("other".into());
    all.push("other (kernel)".into());
    let mut names: Vec<String> = order.iter().filter(|n| all.contains(n)).cloned().collect();
    for n in &all {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let at = |i: usize| names.iter().position(|n| *n == all[i]).unwrap_or(0);
    let frames = p
        .frames
        .iter()
        .zip(c.frames(p))
        .filter_map(|((_, f), cat)| {
            let name = String::from_utf8_lossy(p.strings.get(f.name)).into_owned();
            cat.map(|k| (name, u8::from(f.kind == FrameKind::Kernel), at(k)))
        })
        .collect();
    let threads = p
        .threads
        .iter()
        .filter_map(|(_, t)| {
            let name = String::from_utf8_lossy(p.strings.get(t.name)).into_owned();
            Compiled::first(&c.thread, &name).map(|k| (name, at(k)))
        })
        .collect();
    Ok(Some(FrameCategories {
        other: at(all.len() - 2),
        other_kernel: at(all.len() - 1),
        yield_category: c.categories.iter().position(|n| n == YIELD).map(at),
        names,
        frames,
        threads,
    }))
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
    use kiln_model::{EventInfo, WeightUnit};

    fn category_of(rules: &Rules, stack: &[(&str, FrameKind)], thread: &str) -> String {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let frames: Vec<_> = stack
            .iter()
            .map(|(n, k)| p.frame(n.as_bytes(), *k))
            .collect();
        let th = p.thread(Some(1), Some(2), thread.as_bytes());
        p.add_sample_path(&frames, 1, 1_500, th);
        let s = categorise(&p, rules, &[1_000, 2_000], 0).unwrap().unwrap();
        assert_eq!(s.names.len(), 1);
        s.names[0].clone()
    }

    const U: FrameKind = FrameKind::User;
    const J: FrameKind = FrameKind::Jit;
    const K: FrameKind = FrameKind::Kernel;

    #[test]
    fn frame_categories_name_each_frame_a_rule_decides_in_the_chart_s_order() {
        let rules = Rules::parse(
            "gc = user:^gc$\nread = kernel:^sys_read$\ndirty = thread:^dirty\nunused = ^never$\n",
            "test",
        )
        .unwrap();
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let frames: Vec<_> = [("main", U), ("gc", U), ("sys_read", K), ("sys_read", U)]
            .iter()
            .map(|(n, k)| p.frame(n.as_bytes(), *k))
            .collect();
        p.thread(Some(1), Some(2), b"dirty_cpu_s");
        let th = p.thread(Some(1), Some(3), b"main");
        p.add_sample_path(&frames[..2], 1, 1_500, th);
        // The chart's order first (largest first), then the rest, the others last.
        let order = ["read".to_string(), "gc".to_string(), "other".to_string()];
        let c = frame_categories(&p, &rules, &order).unwrap().unwrap();
        assert_eq!(
            c.names,
            ["read", "gc", "other", "dirty", "unused", "other (kernel)"]
        );
        // Kernel rules name kernel frames only, user rules user frames only.
        assert_eq!(
            c.frames,
            [("gc".to_string(), 0, 1), ("sys_read".to_string(), 1, 0)]
        );
        assert_eq!(c.threads, [("dirty_cpu_s".to_string(), 3)]);
        assert_eq!((c.other, c.other_kernel, c.yield_category), (2, 5, None));
        // Off-CPU time goes by why it waited: no frame categories.
        let off = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        assert!(frame_categories(&off, &rules, &[]).unwrap().is_none());
    }

    #[test]
    fn builtin_sets_name_what_the_seeds_saw() {
        let r = Rules::builtin();
        // The BEAM poller in epoll: I/O polling, not the context switch inside it.
        let poller = [
            ("erts_check_io", U),
            ("erts_poll_wait", U),
            ("epoll_wait", U),
            ("entry_SYSCALL_64_after_hwframe", K),
            ("do_syscall_64", K),
            ("__x64_sys_epoll_wait", K),
            ("do_epoll_wait", K),
            ("schedule", K),
            ("__schedule", K),
            ("finish_task_switch.isra.0", K),
        ];
        assert_eq!(
            category_of(&r, &poller, "0_poller"),
            "I/O polling (poll/epoll)"
        );
        // Erlang code calling a BIF that copies memory: the BIF.
        let bif = [
            ("$rabbit_reader:recvloop/4", J),
            ("$global::call_light_bif_shared", J),
            ("setelement_3", U),
            ("__memcpy_avx_unaligned_erms", U),
        ];
        assert_eq!(category_of(&r, &bif, "1_scheduler"), "BIFs and NIFs");
        let gc = [
            ("$lists:foldl/3", J),
            ("erts_garbage_collect_nobump", U),
            ("sweep_one_area", U),
            ("memcpy", U),
        ];
        assert_eq!(category_of(&r, &gc, "1_scheduler"), "garbage collection");
        let erl = [("$proc_lib:init_p_do_apply/3", J), ("$lists:foldl/3", J)];
        assert_eq!(category_of(&r, &erl, "2_scheduler"), "Erlang code");
        let spin = [
            ("process_main", U),
            ("erts_schedule", U),
            ("ethr_event_twait", U),
        ];
        assert_eq!(
            category_of(&r, &spin, "1_scheduler"),
            "BEAM scheduler (busy-wait, spin)"
        );
        // The spin of a stripped VM: an unnamed function under erts_schedule is the
        // scheduler's; an unnamed function under nothing named is the runtime's.
        let stripped = [
            ("[unknown]", U),
            ("erts_schedule", U),
            ("beam.smp+0x73ee0", U),
        ];
        assert_eq!(
            category_of(&r, &stripped, "1_scheduler"),
            "BEAM scheduler (busy-wait, spin)"
        );
        let unnamed = [("[unknown]", U), ("beam.smp+0x1c6740", U)];
        assert_eq!(
            category_of(&r, &unnamed, "1_scheduler"),
            "BEAM runtime (other)"
        );
        let futex = [
            ("erts_schedule", U),
            ("syscall", U),
            ("__x64_sys_futex", K),
            ("futex_wait", K),
        ];
        assert_eq!(
            category_of(&r, &futex, "1_scheduler"),
            "syscall: futex (locks, sleeping)"
        );
        // A yield is its caller's: a process lock that spun (the stack a RabbitMQ under
        // load gave, between the syscall's entry frames and the libc wrapper), the
        // scheduler's own spin, and only with no caller known the system call's.
        let yield_in = |caller: &[(&'static str, FrameKind)]| -> String {
            let mut s = caller.to_vec();
            s.extend([
                ("__GI___sched_yield", U),
                ("entry_SYSCALL_64_after_hwframe", K),
                ("do_syscall_64", K),
                ("__do_sys_sched_yield", K),
                ("schedule", K),
                ("__schedule", K),
                ("finish_task_switch.isra.0", K),
            ]);
            category_of(&r, &s, "1_scheduler")
        };
        assert_eq!(
            yield_in(&[
                ("$global::process_main", U),
                ("erts_schedule", U),
                ("beam.smp+0x69830", U),
                ("erts_proc_lock_failed", U),
            ]),
            "BEAM lock contention (spin, yield)"
        );
        assert_eq!(
            yield_in(&[("erts_schedule", U), ("beam.smp+0x69830", U)]),
            "BEAM scheduler (busy-wait, spin)"
        );
        assert_eq!(yield_in(&[("main", U)]), YIELD);
        let x64 = [("sched_yield", U), ("__x64_sys_sched_yield", K)];
        assert_eq!(category_of(&r, &x64, "t"), YIELD);
        let dirty = [("erts_call_dirty_nif", U)];
        assert_eq!(
            category_of(&r, &dirty, "1_dirty_cpu_sch"),
            "BEAM dirty schedulers"
        );
        let pf = [
            ("erts_alloc", U),
            ("asm_exc_page_fault", K),
            ("clear_page_erms", K),
        ];
        assert_eq!(category_of(&r, &pf, "1_scheduler"), "kernel page faults");
        // Go.
        let go_gc = [
            ("runtime.gcBgMarkWorker", U),
            ("runtime.gcDrain", U),
            ("runtime.scanobject", U),
        ];
        assert_eq!(category_of(&r, &go_gc, "server"), "garbage collection");
        let go_net = [("runtime.findRunnable", U), ("runtime.netpoll", U)];
        assert_eq!(
            category_of(&r, &go_net, "server"),
            "I/O polling (poll/epoll)"
        );
        let go_app = [("main.main", U), ("main.handle", U)];
        assert_eq!(category_of(&r, &go_app, "server"), "other");
        // The JVM.
        let java = [("Lcom/example/Server;::handle", J)];
        assert_eq!(category_of(&r, &java, "pool-1-thread-3"), "Java code");
        let jit = [("CompileBroker::invoke_compiler_on_method", U)];
        assert_eq!(category_of(&r, &jit, "C2 CompilerThre"), "JVM JIT compiler");
        // Nothing known, leaf in the kernel.
        let k = [("mystery", U), ("some_kernel_fn", K)];
        assert_eq!(category_of(&r, &k, "x"), "other (kernel)");
    }

    #[test]
    fn user_rules_come_first_and_errors_name_the_line() {
        let mut r = Rules::parse(
            "# mine\n\nqueue index = ^rabbit_queue_index:\nTLS = user:^ssl_\nsched = thread:^1_sch\n",
            "cats.txt",
        )
        .unwrap();
        assert_eq!(r.rules.len(), 3);
        assert_eq!(r.rules[1].target, Target::User);
        assert_eq!(r.rules[2].origin, "cats.txt:5");
        r.rules.extend(Rules::builtin().rules);
        let s = [("rabbit_queue_index:publish/6", J)];
        assert_eq!(category_of(&r, &s, "2_scheduler"), "queue index");
        assert_eq!(category_of(&r, &[("x", U)], "1_scheduler"), "sched");
        for (text, what) in [
            ("no equals sign", "expected CATEGORY = REGEX"),
            ("= x", "the category name is empty"),
            ("a = ", "the regular expression is empty"),
            ("a = (unclosed", "invalid regular expression"),
            ("a = kernel:", "the regular expression is empty"),
        ] {
            let e = Rules::parse(&format!("ok = x\n{text}\n"), "f.rules").unwrap_err();
            let m = e.to_string();
            assert!(m.starts_with("f.rules:2: "), "{m}");
            assert!(m.contains(what), "{m}");
        }
    }

    #[test]
    fn blocks_are_spread_over_the_intervals_they_cover() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        let lock = p.frame(b"___pthread_mutex_lock", FrameKind::User);
        let f = p.frame(b"futex_do_wait", K);
        let th = p.thread(Some(1), Some(1), b"t");
        // A 1.5 s block from 0.5 s: half a second in the first interval, one in the second.
        // Off-CPU time goes by why it waited: here a lock.
        p.add_sample_path(&[lock, f], 1_500_000_000, 500_000_000, th);
        let s = categorise(&p, &Rules::builtin(), &[0, 1_000_000_000, 2_000_000_000], 0)
            .unwrap()
            .unwrap();
        assert_eq!(s.unit, "threads");
        assert_eq!(s.names, ["lock"]);
        assert!((s.values[0][0] - 0.5).abs() < 1e-9, "{:?}", s.values);
        assert!((s.values[0][1] - 1.0).abs() < 1e-9, "{:?}", s.values);
        assert!(matches("^a", "abc"));
    }
}
