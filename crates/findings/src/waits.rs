//! Where threads waited: each off-CPU stack (and each stack of Go's block and mutex
//! profiles) named by the program's own frame above the wait and the primitive it called
//! there (`pthread_mutex_lock under read_block`), by why it waited.
use kiln_model::waits::{go_wait_site, program_frame, stack_owner, stack_reasons};
use kiln_model::waits::{StackOwner, WaitReason};
use kiln_model::{FrameKind, Profile};
use std::collections::HashMap;

/// What a wait for a process's address-space lock is called.
pub const MMAP_LOCK: &str = "mmap_lock (the address space's lock: mmap, munmap, page faults)";

/// What a wait for CPython's global interpreter lock is called.
pub const GIL: &str = "take_gil (Python's GIL)";

/// A place the program waited: its frame and what it called there.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// Why it waited.
    pub reason: WaitReason,
    /// The program's frame above the wait (`read_block`, `LServer;::handle`).
    pub at: String,
    /// The waiting function it called (`pthread_mutex_lock`), or `at` again when the wait
    /// is its own.
    pub primitive: String,
    /// Time waited there, in the profile's weight.
    pub weight: u128,
    /// A CPython wait's C frames below the eval loop, outermost first: where the CPU
    /// profile's Python frames are looked for ([`Waits::name_python_callers`]).
    pub python_chain: Vec<String>,
    /// A condition waited on under the program's frames that also read or write its
    /// connections: in a request's path (a pool of resources, a hand-off to another
    /// thread), not a worker waiting for work.
    pub in_request_path: bool,
    /// The labels its blocks were found under before the CPU profile named the Python
    /// function above them ([`Waits::name_python_callers`]: `time_sleep under Python
    /// code`), as [`program_blocks`] says them, besides its own label.
    pub found_as: Vec<String>,
}

impl Site {
    /// Whether [`program_blocks`]' label `l` is this site's: its own, or one it was found
    /// under before its Python caller was named.
    pub fn is_labelled(&self, l: &str) -> bool {
        l == self.label() || self.found_as.iter().any(|x| x == l)
    }

    /// `pthread_mutex_lock under read_block`, or `read_block`.
    pub fn label(&self) -> String {
        if self.primitive == self.at || self.primitive.is_empty() {
            self.at.clone()
        } else {
            format!("{} under {}", self.primitive, self.at)
        }
    }
}

/// An off-CPU profile's waits: the total, by reason, by site (heaviest first), and what
/// was not the program's (kiln's own requests, the Go runtime idling).
#[derive(Clone, Debug, Default)]
pub struct Waits {
    /// Every block, in the profile's weight.
    pub total: u128,
    /// By reason.
    pub by_reason: Vec<(WaitReason, u128)>,
    /// The program's waits by site, heaviest first (runtimes' idle waits left out).
    pub sites: Vec<Site>,
    /// Waits that are not the program's: kiln observing, a runtime idling.
    pub others: Vec<(StackOwner, u128)>,
}

impl Waits {
    /// The weight of `reason`.
    pub fn of(&self, reason: WaitReason) -> u128 {
        self.by_reason
            .iter()
            .filter(|(r, _)| *r == reason)
            .map(|(_, w)| w)
            .sum()
    }

    /// The sites of `reason`, heaviest first.
    pub fn sites_of(&self, reason: WaitReason) -> impl Iterator<Item = &Site> {
        self.sites.iter().filter(move |s| s.reason == reason)
    }
}

/// The names of a stack's frames from the root to the leaf, the program's part only
/// (kernel frames and the root's process name left out).
fn user_frames(p: &Profile, path: &[kiln_model::FrameId]) -> Vec<String> {
    path.iter()
        .filter(|&&f| !matches!(p.frames.get(f).kind, FrameKind::Kernel | FrameKind::Root))
        .map(|&f| {
            let name = String::from_utf8_lossy(p.frame_name(f));
            // A compiler's copy of a function (`os_fsync.lto_priv.0`) is said as the
            // function.
            kiln_model::waits::base_name(&name).to_string()
        })
        .collect()
}

/// A stack's owner and, for the program's waits, its site: the program's frame above the
/// wait and the function it called to wait.
fn site_of_stack(
    p: &Profile,
    st: kiln_model::StackId,
    reason: WaitReason,
    path: &mut Vec<kiln_model::FrameId>,
) -> (StackOwner, Option<(String, String)>) {
    path.clear();
    p.stacks.path_into(st, path);
    let names = user_frames(p, path);
    let owner = stack_owner(&names);
    let gil = kiln_model::waits::is_gil_wait(&names);
    let all: Vec<std::borrow::Cow<'_, str>> = path
        .iter()
        .map(|&f| String::from_utf8_lossy(p.frame_name(f)))
        .collect();
    let mmap_lock = reason == WaitReason::Lock && kiln_model::waits::waits_for_mmap_lock(&all);
    // A JVM's wait inside the JDK (`ReentrantLock.lock`, `Unsafe.park` under it) is the
    // program's at its own method that called into the JDK.
    let program = program_frame(&names).map(|i| {
        use kiln_model::waits::{is_jdk_method, is_jvm_method};
        let own = names
            .iter()
            .rposition(|n| is_jvm_method(n) && !is_jdk_method(n));
        let deepest = names.iter().rposition(|n| is_jvm_method(n));
        match (own, deepest) {
            (Some(j), Some(k)) if j < k => j,
            _ => i,
        }
    });
    let site = match program {
        Some(i) if gil => Some((names[i].clone(), GIL.to_string())),
        // The kernel's lock on the address space, whichever call took it (a page
        // fault in memset, munmap in free).
        Some(i) if mmap_lock => Some((names[i].clone(), MMAP_LOCK.to_string())),
        // CPython: the C function the Python code called to wait (`time_sleep`),
        // its caller named from the CPU profile's Python frames when there is one
        // ([`Waits::name_python_callers`]).
        _ if !gil && python_callee(&names).is_some() => python_callee(&names).map(|c| {
            (
                PYTHON_CODE.to_string(),
                with_file_call(&names, reason, c.to_string()),
            )
        }),
        // The function it called to wait: the next frame with a name (JIT code
        // the map did not know yet is `[unknown]`, the JVM's interpreter
        // `Interpreter`).
        Some(i) => {
            let called = names[i + 1..]
                .iter()
                .find(|n| !n.starts_with('[') && *n != "Interpreter")
                .map(|n| said_as(n).to_string())
                .unwrap_or_default();
            let called = with_file_call(&names, reason, called);
            Some((names[i].clone(), called))
        }
        // Nothing of the program's own but the interpreter: the GIL still has a name.
        None if gil => Some(("the interpreter".to_string(), GIL.to_string())),
        // A user stack that ends at the call that waited (a library built without frame
        // pointers: the interpreter's `fsync`, and nothing above it): the wait is still
        // the program's, at that call, its caller named from the CPU profile when it saw
        // one ([`Waits::name_python_callers`]). Disk, lock, pipe and child waits only: a
        // sleep or a condition with no frames above it could be any thread's.
        None if matches!(
            reason,
            WaitReason::Io | WaitReason::Lock | WaitReason::Write | WaitReason::Child
        ) && owner == StackOwner::Program =>
        {
            names
                .iter()
                .find(|n| !n.starts_with('['))
                .map(|n| (UNSEEN_CALLER.to_string(), said_as(n).to_string()))
        }
        None => None,
    };
    (owner, site)
}

/// The function a stack called to wait (`called`), and for a disk wait through a
/// library's code (libuv's `uv__fs_work`, CPython's `os_fsync`) the file call that waited
/// before it: `fdatasync in uv__fs_work`.
fn with_file_call(names: &[String], reason: WaitReason, called: String) -> String {
    let leaf = names
        .last()
        .filter(|n| !n.starts_with('['))
        .map(|n| said_as(n));
    // (A file call's name only: a commit waiting on the WAL's lock while another syncs it
    // is said at the lock, not at the futex under it.)
    let file_call = |l: &str| {
        let l = l.trim_start_matches('_');
        let l = l.strip_prefix("libc_").unwrap_or(l);
        [
            "fsync",
            "fdatasync",
            "sync_file_range",
            "pread",
            "pwrite",
            "read",
            "write",
        ]
        .iter()
        .any(|c| {
            l == *c
                || l.strip_prefix(c)
                    .is_some_and(|r| r.starts_with(|x: char| x.is_ascii_digit() || x == 'v'))
        })
    };
    match leaf {
        Some(l)
            if reason == WaitReason::Io && !called.is_empty() && l != called && file_call(l) =>
        {
            format!("{l} in {called}")
        }
        _ => called,
    }
}

/// A wait's function as its program called it: glibc's calls from inside itself go
/// through hidden aliases (`__GI_fdatasync`, `__GI___lll_lock_wait`) that no program calls
/// by that name; a compiler's copy of a function (`sock_recv.lto_priv.0`) is the
/// function.
fn said_as(name: &str) -> &str {
    kiln_model::waits::base_name(name.strip_prefix("__GI_").unwrap_or(name))
}

/// One of the program's blocks: when it began and ended (ns, on the profile's clock), its
/// thread (the profile's index) and its site (an index into the labels beside it).
#[derive(Clone, Copy, Debug)]
pub struct Block {
    /// When the thread blocked, ns.
    pub start: u64,
    /// When it ran again, ns.
    pub end: u64,
    /// Its thread, the profile's index.
    pub thread: u32,
    /// Why it waited.
    pub reason: WaitReason,
    /// Its site, an index into the labels.
    pub site: usize,
}

/// Every thread's waits for more work — for its connections (an event poll, a read) or
/// a runtime's idle wait — by its kernel id: start and end, ns on the profile's clock,
/// oldest first. A wait inside the work (a lock, the disk) is not one. Untimed blocks are
/// left out.
pub fn thread_blocks(p: &Profile) -> HashMap<u32, Vec<(u64, u64)>> {
    let ns = p.event.ns_per_weight().unwrap_or(0.0);
    let reasons = stack_reasons(p);
    let mut out: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for (st, w, t, th) in p.samples.rows() {
        let Some(tid) = p.threads.get(th).and_then(|x| x.tid) else {
            continue;
        };
        let more_work = matches!(
            reasons.get(st.0 as usize),
            Some(WaitReason::Poll | WaitReason::Idle)
        );
        if t != kiln_model::NO_TIME && more_work {
            out.entry(tid)
                .or_default()
                .push((t, t.saturating_add((w as f64 * ns) as u64)));
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

/// The program's blocks one by one, with their sites' labels (`primitive under at`, as
/// [`Site::label`] says them); idle waits, others' and untimed blocks left out.
pub fn program_blocks(p: &Profile) -> (Vec<String>, Vec<Block>) {
    let Some(ns) = p.event.ns_per_weight() else {
        return Default::default();
    };
    let reasons = stack_reasons(p);
    let mut labels: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen: Vec<Option<Option<usize>>> = vec![None; p.stacks.len()];
    let mut path = Vec::new();
    let mut out = Vec::new();
    for (st, w, t, th) in p.samples.rows() {
        let reason = reasons
            .get(st.0 as usize)
            .copied()
            .unwrap_or(WaitReason::Other);
        if reason == WaitReason::Idle || t == kiln_model::NO_TIME {
            continue;
        }
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let site = *slot.get_or_insert_with(|| match site_of_stack(p, st, reason, &mut path) {
            (StackOwner::Program, Some((at, prim))) => {
                let label = Site {
                    reason,
                    at,
                    primitive: prim,
                    weight: 0,
                    python_chain: Vec::new(),
                    in_request_path: false,
                    found_as: Vec::new(),
                }
                .label();
                let n = labels.len();
                Some(*index.entry(label.clone()).or_insert_with(|| {
                    labels.push(label);
                    n
                }))
            }
            _ => None,
        });
        if let Some(site) = site {
            out.push(Block {
                start: t,
                end: t.saturating_add((w as f64 * ns) as u64),
                thread: th.0,
                reason,
                site,
            });
        }
    }
    (labels, out)
}

/// A CPU profile's time in each of `windows` (start, end, the threads left out by their
/// kernel ids; ns on the profile's clock), by the program's frame nearest the leaf and the
/// program's frame that called it (`work under snapshotter`), heaviest first.
pub fn cpu_in_windows(p: &Profile, windows: &[(u64, u64, Vec<u32>)]) -> Vec<Vec<(String, f64)>> {
    let mut out: Vec<HashMap<String, f64>> = vec![HashMap::new(); windows.len()];
    let Some(ns) = p.event.ns_per_weight() else {
        return Vec::new();
    };
    let mut labels: Vec<Option<Option<String>>> = vec![None; p.stacks.len()];
    let mut path = Vec::new();
    for (st, w, t, th) in p.samples.rows() {
        let Some(i) = windows.iter().position(|x| t >= x.0 && t < x.1) else {
            continue;
        };
        let tid = p.threads.get(th).and_then(|t| t.tid);
        if tid.is_some_and(|tid| windows[i].2.contains(&tid)) {
            continue;
        }
        let Some(slot) = labels.get_mut(st.0 as usize) else {
            continue;
        };
        let label = slot.get_or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let names = user_frames(p, &path);
            let at = program_frame(&names)?;
            let caller = names[..at]
                .iter()
                .rposition(|f| kiln_model::waits::is_program_frame(f));
            Some(match caller {
                Some(c) => format!("{} under {}", names[at], names[c]),
                None => names[at].clone(),
            })
        });
        if let Some(l) = label {
            *out[i].entry(l.clone()).or_default() += w as f64 * ns;
        }
    }
    out.into_iter()
        .map(|m| {
            let mut v: Vec<(String, f64)> = m.into_iter().collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v
        })
        .collect()
}

/// An off-CPU profile's waits.
pub fn offcpu_waits(p: &Profile) -> Waits {
    let reasons = stack_reasons(p);
    let mut by_reason: HashMap<WaitReason, u128> = HashMap::new();
    let mut by_site: HashMap<(WaitReason, String, String), u128> = HashMap::new();
    let mut others: HashMap<StackOwner, u128> = HashMap::new();
    let mut chains: HashMap<(WaitReason, String, String), Vec<String>> = HashMap::new();
    // The program's frames under which threads read or wrote their connections, and each
    // condition wait's: a condition waited on under a connection's frames is in the
    // request's path (a pool of resources, a hand-off), not a worker waiting for work.
    type Key = (WaitReason, String, String);
    let mut io_frames: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut futex_stacks: Vec<(Key, u128, Vec<String>)> = Vec::new();
    let mut total = 0u128;
    let mut path = Vec::new();
    // Per stack, once: its owner and its site.
    type Seen = (StackOwner, Option<(String, String)>);
    let mut seen: Vec<Option<Seen>> = vec![None; p.stacks.len()];
    // CPython's threads, which its stacks do not tell apart (the interpreter's frames are
    // every thread's): those that waited on the network serve connections, and a lock
    // they wait on under Python code is in a request's path.
    let mut net_threads: std::collections::HashSet<kiln_model::ThreadId> = Default::default();
    let mut python_locks: Vec<(Key, u128, kiln_model::ThreadId)> = Vec::new();
    for (st, w, _, thread) in p.samples.rows() {
        let w = w as u128;
        total += w;
        let reason = reasons
            .get(st.0 as usize)
            .copied()
            .unwrap_or(WaitReason::Other);
        *by_reason.entry(reason).or_default() += w;
        if reason == WaitReason::Poll {
            net_threads.insert(thread);
        }
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let (owner, site) = slot.get_or_insert_with(|| site_of_stack(p, st, reason, &mut path));
        match (*owner, site, reason) {
            (_, _, WaitReason::Idle) => {}
            (StackOwner::Program, Some((at, prim)), r) => {
                let key = (r, at.clone(), prim.clone());
                if at == PYTHON_CODE && r == WaitReason::Lock {
                    python_locks.push((key.clone(), w, thread));
                }
                if at == PYTHON_CODE && !chains.contains_key(&key) {
                    path.clear();
                    p.stacks.path_into(st, &mut path);
                    chains.insert(key.clone(), python_chain(&user_frames(p, &path)));
                }
                if at == UNSEEN_CALLER && !chains.contains_key(&key) {
                    chains.insert(key.clone(), vec![prim.clone()]);
                }
                if matches!(
                    r,
                    WaitReason::Futex
                        | WaitReason::Poll
                        | WaitReason::Write
                        | WaitReason::Other
                        | WaitReason::Sleep
                ) {
                    path.clear();
                    p.stacks.path_into(st, &mut path);
                    let own: Vec<String> = user_frames(p, &path)
                        .into_iter()
                        .filter(|f| kiln_model::waits::is_program_frame(f))
                        .collect();
                    if matches!(r, WaitReason::Futex | WaitReason::Other | WaitReason::Sleep) {
                        futex_stacks.push((key.clone(), w, own));
                    } else {
                        // The connection's own frames are the innermost few: a thread's
                        // root (`java.lang.Thread.run()`, `main`) is every thread's.
                        io_frames.extend(own.into_iter().rev().take(3));
                    }
                }
                *by_site.entry(key).or_default() += w
            }
            (StackOwner::Program, None, _) => {}
            (o, _, _) => *others.entry(o).or_default() += w,
        }
    }
    let mut in_path: HashMap<Key, u128> = HashMap::new();
    for (key, w, thread) in python_locks {
        if net_threads.contains(&thread) {
            *in_path.entry(key).or_default() += w;
        }
    }
    for (key, w, own) in futex_stacks {
        // A sleep is in the path unless its frames show it is not: a thread of the
        // program's own (a periodic refresher, a flusher) that never touches a connection.
        // Without frames of the program's or of connections, it counts — an interpreter's
        // C stack too (CPython's): its frames are the interpreter's call machinery, the
        // same under any Python code, and which of them a call goes through depends on how
        // the interpreter specialised it (`time.sleep` called straight from the eval loop
        // shares none with a socket's read).
        let sleep_unknown = key.0 == WaitReason::Sleep
            && (own.is_empty() || io_frames.is_empty() || key.1 == PYTHON_CODE);
        if sleep_unknown || own.iter().any(|f| io_frames.contains(f)) {
            *in_path.entry(key).or_default() += w;
        }
    }
    let mut sites: Vec<Site> = Vec::new();
    for (key, weight) in by_site {
        let python_chain = chains.remove(&key).unwrap_or_default();
        let in_request = in_path.get(&key).copied().unwrap_or(0);
        let (reason, at, primitive) = key;
        let site = |weight, in_request_path| Site {
            reason,
            at: at.clone(),
            primitive: primitive.clone(),
            weight,
            python_chain: python_chain.clone(),
            in_request_path,
            found_as: Vec::new(),
        };
        if in_request > 0 {
            sites.push(site(in_request, true));
        }
        if weight > in_request {
            sites.push(site(weight - in_request, false));
        }
    }
    sites.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.at.cmp(&b.at)));
    let mut by_reason: Vec<(WaitReason, u128)> = by_reason.into_iter().collect();
    by_reason.sort_by_key(|(r, _)| WaitReason::ALL.iter().position(|x| x == r));
    let mut others: Vec<(StackOwner, u128)> = others.into_iter().collect();
    others.sort_by_key(|o| std::cmp::Reverse(o.1));
    Waits {
        total,
        by_reason,
        sites,
        others,
    }
}

/// Where a CPython process waited: its Python code, until the CPU profile names the
/// function ([`Waits::name_python_callers`]).
pub const PYTHON_CODE: &str = "Python code";

/// The placeholder caller of a wait whose user stack ends at the call that waited.
pub const UNSEEN_CALLER: &str = "a caller the stack does not show";

/// The interpreter's own frames between Python code and the C function it calls; in a
/// stripped interpreter (Debian's), its unnamed static functions too: the call
/// machinery (`method_vectorcall_VARARGS_KEYWORDS`) is one of them, and the same
/// dispatcher serves every method, so it never says which call a wait was in.
fn python_call_helper(f: &str) -> bool {
    if kiln_model::waits::is_python_binary_address(f) {
        return true;
    }
    [
        "cfunction_",
        "_PyObject_",
        "PyObject_Call",
        "PyObject_Vectorcall",
        "method_vectorcall",
        "_PyFunction_Vectorcall",
        "_PyEval_Vector",
        "slot_tp_call",
        "vectorcall_method",
        "object_vacall",
    ]
    .iter()
    .any(|h| f.starts_with(h))
}

/// In a CPython stack (root first), the C function the innermost Python code called:
/// the first frame after the last `_PyEval_EvalFrameDefault` that is not the
/// interpreter's call machinery (`time_sleep`, `select_epoll_poll`). `None` when the
/// stack is not the interpreter's, or it waits in the eval loop itself.
fn python_callee<S: AsRef<str>>(names: &[S]) -> Option<&str> {
    let k = names
        .iter()
        .rposition(|f| f.as_ref() == "_PyEval_EvalFrameDefault")?;
    names[k + 1..]
        .iter()
        .map(AsRef::as_ref)
        .find(|f| !python_call_helper(f) && !f.starts_with('['))
        .map(said_as)
}

/// Whether a Python function (`Condition.wait (threading.py:320)`; 3.10 names it bare)
/// is one of the standard library's ways to wait for another thread — a condition, an
/// event, a semaphore, a barrier, a queue, a thread's end, a future's result — which
/// wait on a lock that the signalling thread releases, not one it holds.
fn is_python_signal_wait(at: &str) -> bool {
    let Some((func, file)) = at.split_once(" (") else {
        return false;
    };
    let file = file.split(':').next().unwrap_or("");
    let func = func.rsplit('.').next().unwrap_or(func);
    matches!(
        file,
        "threading.py" | "queue.py" | "concurrent/futures/_base.py"
    ) && matches!(
        func,
        "wait" | "wait_for" | "acquire" | "get" | "put" | "join" | "result"
    )
}

/// Whether a Python frame (`Condition.wait (threading.py:320)`) is the standard library's
/// threading, queues, sockets or servers — code every program calls through, not its own.
pub(crate) fn in_python_library(frame: &str) -> bool {
    let Some((_, file)) = frame.split_once(" (") else {
        return false;
    };
    [
        "threading.py",
        "queue.py",
        "concurrent/",
        "socket.py",
        "socketserver.py",
        "selectors.py",
        "http/",
        "asyncio/",
        "ssl.py",
        "subprocess.py",
        "multiprocessing/",
    ]
    .iter()
    .any(|l| file.starts_with(l))
}

/// A CPython stack's frames after its last `_PyEval_EvalFrameDefault` (root first).
fn python_chain<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    let Some(k) = names
        .iter()
        .rposition(|f| f.as_ref() == "_PyEval_EvalFrameDefault")
    else {
        return Vec::new();
    };
    names[k + 1..]
        .iter()
        .map(|f| f.as_ref().to_string())
        .collect()
}

impl Waits {
    /// Names the Python function above each CPython wait (`time_sleep under lookup
    /// (server.py:12)`) from a CPU profile whose stacks hold the interpreter's frames: the
    /// Python frame nearest above the same C function, the heaviest such caller. A wait
    /// whose C function the CPU profile never caught stays under "Python code".
    ///
    /// A wait whose stack ends at the call ([`UNSEEN_CALLER`]) is named the same way by
    /// the program's frame (Python's, or the program's own) nearest above that call in the
    /// CPU profile, however deep below it the call is.
    pub fn name_python_callers(&mut self, cpu: &Profile) {
        if !self
            .sites
            .iter()
            .any(|s| s.at == PYTHON_CODE || s.at == UNSEEN_CALLER)
        {
            return;
        }
        // The C frame directly below a Python frame in the CPU profile (the interpreter's
        // call machinery skipped), and that Python frame: the heaviest caller of each.
        // And every frame below a frame of the program's, with the nearest such.
        let mut callers: HashMap<(String, String), u128> = HashMap::new();
        let mut under: HashMap<(String, String), u128> = HashMap::new();
        // A standard library's waiting function (`Condition.wait`), and the program's own
        // Python frame nearest above it (`query_orders`), the heaviest of each.
        let mut from_program: HashMap<(String, String), u128> = HashMap::new();
        let mut path = Vec::new();
        for (&st, &w) in cpu.samples.stack.iter().zip(&cpu.samples.weight) {
            path.clear();
            cpu.stacks.path_into(st, &mut path);
            let mut py: Option<&str> = None;
            let mut own: Option<&str> = None;
            let mut mine: Option<&str> = None;
            // In a Python stack the program's frames are its Python ones: the C under them
            // is the interpreter's (named where its symbols are).
            let python = path
                .iter()
                .any(|&id| cpu.frames.get(id).kind == FrameKind::Python);
            for &id in &path {
                let name = std::str::from_utf8(cpu.frame_name(id)).unwrap_or("");
                let name = kiln_model::waits::base_name(name);
                let kind = cpu.frames.get(id).kind;
                if kind == FrameKind::Python {
                    if is_python_signal_wait(name) {
                        if let Some(m) = mine {
                            *from_program
                                .entry((name.to_string(), m.to_string()))
                                .or_default() += w as u128;
                        }
                    } else if !in_python_library(name) {
                        mine = Some(name);
                    }
                    py = Some(name);
                    own = Some(name);
                    continue;
                }
                if let Some(o) = own {
                    *under.entry((name.to_string(), o.to_string())).or_default() += w as u128;
                }
                if !python
                    && matches!(kind, FrameKind::User)
                    && kiln_model::waits::is_program_frame(name)
                {
                    own = Some(name);
                }
                if python_call_helper(name) {
                    // Still between the Python frame and the function it called.
                } else if let Some(caller) = py.take() {
                    *callers
                        .entry((name.to_string(), caller.to_string()))
                        .or_default() += w as u128;
                }
            }
        }
        fn heaviest(callers: &HashMap<(String, String), u128>) -> HashMap<&str, (&str, u128)> {
            let mut best: HashMap<&str, (&str, u128)> = HashMap::new();
            for ((c, py), w) in callers {
                let e = best.entry(c.as_str()).or_insert((py.as_str(), 0));
                if *w > e.1 || (*w == e.1 && py.as_str() < e.0) {
                    *e = (py.as_str(), *w);
                }
            }
            best
        }
        let best = heaviest(&callers);
        let nearest = heaviest(&under);
        let programs = heaviest(&from_program);
        let mut moved: Vec<u128> = Vec::new();
        for site in &mut self.sites {
            if site.at == UNSEEN_CALLER {
                if let Some((caller, _)) = nearest.get(site.primitive.as_str()) {
                    site.found_as = vec![site.label()];
                    site.at = caller.to_string();
                }
                continue;
            }
            if site.at != PYTHON_CODE {
                continue;
            }
            // The outermost C frame of the wait that the CPU profile saw called from
            // Python code: the function the Python code called.
            if let Some((c, (py, _))) = site
                .python_chain
                .iter()
                .find_map(|c| best.get(c.as_str()).map(|b| (c, b)))
            {
                site.found_as = vec![site.label()];
                // (The file call that waited under it stays said: `fsync in os_fsync`.)
                site.primitive = match site.primitive.split_once(" in ") {
                    Some((call, _)) if call != c.as_str() => format!("{call} in {c}"),
                    _ => c.clone(),
                };
                site.at = py.to_string();
                // A Python lock acquired by `threading`'s or `queue`'s waiting functions is
                // their signal, not a lock another thread holds: a condition.
                if site.reason == WaitReason::Lock && is_python_signal_wait(&site.at) {
                    site.reason = WaitReason::Futex;
                    moved.push(site.weight);
                    // In a request's path, the program's function that waited so (a
                    // handler's Event.wait, a query's Semaphore.acquire).
                    if let Some((m, _)) = programs
                        .get(site.at.as_str())
                        .filter(|_| site.in_request_path)
                    {
                        site.at = format!("{} from {m}", site.at);
                    }
                }
            }
        }
        for w in moved {
            for (r, total) in &mut self.by_reason {
                match r {
                    WaitReason::Lock => *total = total.saturating_sub(w),
                    WaitReason::Futex => *total += w,
                    _ => {}
                }
            }
            if !self.by_reason.iter().any(|(r, _)| *r == WaitReason::Futex) {
                self.by_reason.push((WaitReason::Futex, w));
                self.by_reason
                    .sort_by_key(|(r, _)| WaitReason::ALL.iter().position(|x| x == r));
            }
        }
        // Sites named alike now (a Python function's waits, some seen whole and some
        // ending at the call) are one.
        let mut merged: Vec<Site> = Vec::new();
        for site in std::mem::take(&mut self.sites) {
            match merged.iter_mut().find(|m| {
                m.reason == site.reason
                    && m.at == site.at
                    && m.primitive == site.primitive
                    && m.in_request_path == site.in_request_path
            }) {
                Some(m) => {
                    m.weight += site.weight;
                    m.found_as.extend(site.found_as);
                }
                None => merged.push(site),
            }
        }
        merged.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.at.cmp(&b.at)));
        self.sites = merged;
    }
}

/// A Go block or mutex profile's delay by site (the primitive and the program's frame
/// that called it), heaviest first, and in all.
pub fn go_sites(p: &Profile) -> (Vec<Site>, u128) {
    type Key = (WaitReason, String, String, bool);
    let mut by_site: HashMap<Key, u128> = HashMap::new();
    let mut total = 0u128;
    let mut path = Vec::new();
    let mut seen: Vec<Option<Option<Key>>> = vec![None; p.stacks.len()];
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        total += w as u128;
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let here = slot.get_or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let mut names = user_frames(p, &path);
            let by_timer =
                names.last().map(String::as_str) == Some(kiln_model::waits::GO_WOKEN_BY_TIMER);
            if by_timer {
                names.pop();
            }
            let (at, primitive) = go_wait_site(&names)?;
            Some((
                go_wait_reason(&names, at, by_timer),
                primitive.to_string(),
                at.to_string(),
                go_in_request(&names),
            ))
        });
        if let Some(k) = here {
            *by_site.entry(k.clone()).or_default() += w as u128;
        }
    }
    let mut v: Vec<Site> = by_site
        .into_iter()
        .map(|((reason, at, primitive, in_request_path), weight)| Site {
            reason,
            at,
            primitive,
            weight,
            python_chain: Vec::new(),
            in_request_path,
            found_as: Vec::new(),
        })
        .collect();
    v.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.at.cmp(&b.at)));
    (v, total)
}

/// Frames that serve one request (Go's HTTP server, gRPC's handlers): a goroutine under
/// them waits in a request's path.
const GO_REQUEST_PATH: [&str; 4] = [
    "net/http.(*conn).serve",
    "google.golang.org/grpc.(*Server).handleStream",
    "github.com/valyala/fasthttp.(*Server).serveConn",
    "ServeHTTP",
];

/// Calls out of the server (an HTTP or gRPC client, a dial, a name lookup): a goroutine
/// parked under one waits for another service, whatever it parks on (net/http's client
/// waits for its connection's reader on a channel).
pub const GO_CALLS_OUT: [&str; 6] = [
    "net/http.(*Client).",
    "net/http.(*Transport).roundTrip",
    "google.golang.org/grpc.(*ClientConn).Invoke",
    "google.golang.org/grpc.invoke",
    "net.(*Dialer).DialContext",
    "net.(*Resolver).",
];

/// Whether a goroutine's frames (root to leaf) are in a call out of the server
/// ([`GO_CALLS_OUT`]).
pub fn go_calls_out<S: AsRef<str>>(frames: &[S]) -> bool {
    frames
        .iter()
        .any(|f| GO_CALLS_OUT.iter().any(|c| f.as_ref().starts_with(c)))
}

/// Whether a goroutine's stack (root to leaf) serves a request: under a server's frames
/// for one ([`GO_REQUEST_PATH`]), and not profiling's own handlers (`net/http/pprof`),
/// which wait for nothing the program does.
fn go_in_request(frames: &[String]) -> bool {
    frames
        .iter()
        .any(|f| GO_REQUEST_PATH.iter().any(|r| f.contains(r)))
        && !frames.iter().any(|f| f.starts_with("net/http/pprof."))
}

/// Why a goroutine in a Go block or mutex profile waited at `primitive`: a lock (a mutex,
/// a semaphore); a channel or a select in a request's path (a pool's slot, a semaphore made
/// of a channel, another goroutine's result): [`WaitReason::Futex`], a wait on an event
/// the request needs; anywhere else a goroutine waiting for work
/// ([`WaitReason::Idle`]). Profiling's own handlers (`net/http/pprof`) wait for nothing
/// the program does.
fn go_wait_reason(frames: &[String], primitive: &str, by_timer: bool) -> WaitReason {
    // The collector holding an allocating goroutine (an assist that found no work left,
    // a collection being started): garbage collection's cost, which its own finding
    // says, not a lock or a channel of the program's.
    if frames.iter().any(|f| GO_COLLECTOR.contains(&f.as_str())) {
        return WaitReason::Other;
    }
    // A program run and waited for (os/exec's Wait, Run, Output: its exit, the copying
    // of its output).
    if kiln_model::waits::waits_for_child(frames) {
        return WaitReason::Child;
    }
    if primitive.contains("Mutex") || primitive.contains("semacquire") {
        return WaitReason::Lock;
    }
    // Goroutine waits traced at the park (not only the block profile's events): a read
    // or write waiting on the network poller, a call to another service, and a timer.
    if frames.iter().any(|f| f == "runtime.netpollblock") || go_calls_out(frames) {
        return WaitReason::Poll;
    }
    // A timer woke it: a sleep, or a channel a timer sends to (time.After, a Ticker).
    if by_timer || primitive == "time.Sleep" || frames.iter().any(|f| f == "runtime.timeSleep") {
        return WaitReason::Sleep;
    }
    // A channel or a condition waited on by the server's machinery alone (net/http
    // ending a request's background read) is not the program's.
    if go_in_request(frames) && frames.iter().any(|f| kiln_model::waits::is_go_program(f)) {
        WaitReason::Futex
    } else {
        WaitReason::Idle
    }
}

/// The runtime's frames that make a goroutine wait for the garbage collector.
const GO_COLLECTOR: [&str; 4] = [
    "runtime.gcParkAssist",
    "runtime.gcAssistAlloc",
    "runtime.gcStart",
    "runtime.GC",
];

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, ThreadId, WeightUnit, NO_TIME};

    #[test]
    fn a_channel_a_request_waits_on_is_in_its_path_a_workers_is_not() {
        let v = |s: &str| s.split(';').map(String::from).collect::<Vec<_>>();
        let handler = v("runtime.goexit;net/http.(*conn).serve;net/http.serverHandler.ServeHTTP;main.work;runtime.chansend1");
        assert_eq!(
            go_wait_reason(&handler, "runtime.chansend1", false),
            WaitReason::Futex
        );
        let worker = v("runtime.goexit;main.worker;runtime.chanrecv2");
        assert_eq!(
            go_wait_reason(&worker, "runtime.chanrecv2", false),
            WaitReason::Idle
        );
        let pprof = v("runtime.goexit;net/http.(*conn).serve;net/http/pprof.Profile;net/http/pprof.sleep;runtime.selectgo");
        assert_eq!(
            go_wait_reason(&pprof, "runtime.selectgo", false),
            WaitReason::Idle
        );
        let poll = v("runtime.goexit;net/http.(*conn).serve;net.(*conn).Read;internal/poll.(*FD).Read;runtime.netpollblock;runtime.gopark");
        assert_eq!(
            go_wait_reason(&poll, "net.(*conn).Read", false),
            WaitReason::Poll
        );
        let sleep =
            v("runtime.goexit;net/http.(*conn).serve;main.handle;time.Sleep;runtime.gopark");
        assert_eq!(
            go_wait_reason(&sleep, "time.Sleep", false),
            WaitReason::Sleep
        );
        let server = v("runtime.goexit;net/http.(*conn).serve;net/http.(*response).finishRequest;net/http.(*connReader).abortPendingRead;sync.(*Cond).Wait");
        assert_eq!(
            go_wait_reason(&server, "sync.(*Cond).Wait", false),
            WaitReason::Idle
        );
        let module = v("runtime.goexit;net/http.(*conn).serve;github.com/acme/pool.(*Pool).Get;runtime.chanrecv1");
        assert_eq!(
            go_wait_reason(&module, "runtime.chanrecv1", false),
            WaitReason::Futex
        );
        let assist = v("runtime.goexit;net/http.(*conn).serve;main.handle;runtime.newobject;runtime.mallocgc;runtime.gcAssistAlloc;runtime.gcParkAssist");
        assert_eq!(
            go_wait_reason(&assist, "runtime.newobject", false),
            WaitReason::Other
        );
        let start = v("runtime.goexit;net/http.(*conn).serve;main.handle;runtime.mallocgc;runtime.gcStart;runtime.semacquire1");
        assert_eq!(
            go_wait_reason(&start, "runtime.semacquire1", false),
            WaitReason::Other
        );
        let output = v("runtime.goexit;net/http.(*conn).serve;main.render;os/exec.(*Cmd).Output;os/exec.(*Cmd).Wait;os/exec.(*Cmd).awaitGoroutines;runtime.chanrecv1");
        assert_eq!(
            go_wait_reason(&output, "runtime.chanrecv1", false),
            WaitReason::Child
        );
        let lock = v("runtime.goexit;main.worker;sync.(*Mutex).Lock");
        assert_eq!(
            go_wait_reason(&lock, "sync.(*Mutex).Lock", false),
            WaitReason::Lock
        );
        // net/http's client waits for its connection's reader on a channel: a call to
        // another service, not a channel of the program's.
        let client = v("runtime.goexit;net/http.(*conn).serve;main.callInventoryService;net/http.(*Client).Get;net/http.(*Client).do;net/http.(*Transport).roundTrip;net/http.(*persistConn).roundTrip;runtime.selectgo");
        assert_eq!(
            go_wait_reason(&client, "net/http.(*Client).Get", false),
            WaitReason::Poll
        );
        // A receive a timer's channel ended (time.After, a Ticker) waited for the timer; a
        // read whose deadline a timer ended waited on the network.
        let after = v("runtime.goexit;net/http.(*conn).serve;main.throttle;runtime.chanrecv1");
        assert_eq!(
            go_wait_reason(&after, "runtime.chanrecv1", true),
            WaitReason::Sleep
        );
        assert_eq!(
            go_wait_reason(&after, "runtime.chanrecv1", false),
            WaitReason::Futex
        );
        assert_eq!(
            go_wait_reason(&poll, "net.(*conn).Read", true),
            WaitReason::Poll
        );
    }

    #[test]
    fn waits_by_reason_and_site() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let root = p.frame(b"srv", FrameKind::Root);
        let (serve, lock, read) = (
            p.frame(b"serve", FrameKind::User),
            p.frame(b"pthread_mutex_lock", FrameKind::User),
            p.frame(b"__libc_read", FrameKind::User),
        );
        let futex = p.frame(b"futex_wait", FrameKind::Kernel);
        let sk = p.frame(b"sk_wait_data", FrameKind::Kernel);
        p.add_sample_path(&[root, serve, lock, futex], 30, NO_TIME, ThreadId::NONE);
        p.add_sample_path(&[root, serve, read, sk], 70, NO_TIME, ThreadId::NONE);
        let w = offcpu_waits(&p);
        assert_eq!(w.total, 100);
        assert_eq!(w.of(WaitReason::Lock), 30);
        let lock_site = w.sites_of(WaitReason::Lock).next().unwrap();
        assert_eq!(lock_site.label(), "pthread_mutex_lock under serve");
        let read_site = w.sites_of(WaitReason::Poll).next().unwrap();
        assert_eq!(read_site.label(), "__libc_read under serve");
    }

    /// A disk wait whose user stack ends at the call (a library without frame pointers) is
    /// still the program's, named by the CPU profile's frame of the program's above the
    /// same call, and one site with the waits seen whole there.
    #[test]
    fn a_wait_whose_stack_ends_at_the_call_is_named_by_the_cpu_profile() {
        let stack = |p: &mut Profile, s: &str| -> Vec<kiln_model::FrameId> {
            s.split(';')
                .map(|n| {
                    let kind = match n {
                        "srv" => FrameKind::Root,
                        _ if n.starts_with("k:") => FrameKind::Kernel,
                        _ => FrameKind::User,
                    };
                    p.frame(n.trim_start_matches("k:").as_bytes(), kind)
                })
                .collect()
        };
        let mut off = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let cut = stack(&mut off, "srv;fsync;k:ext4_sync_file;k:io_schedule");
        let whole = stack(
            &mut off,
            "srv;serve;append_order;fsync;k:ext4_sync_file;k:io_schedule",
        );
        off.add_sample_path(&cut, 90, NO_TIME, ThreadId::NONE);
        off.add_sample_path(&whole, 10, NO_TIME, ThreadId::NONE);
        let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let ran = stack(&mut cpu, "srv;serve;append_order;fsync;k:ext4_sync_file");
        cpu.add_sample_path(&ran, 5, NO_TIME, ThreadId::NONE);
        let mut w = offcpu_waits(&off);
        w.name_python_callers(&cpu);
        let disk: Vec<(String, u128)> = w
            .sites_of(WaitReason::Io)
            .map(|s| (s.label(), s.weight))
            .collect();
        assert_eq!(disk, vec![("fsync under append_order".to_string(), 100)]);
    }

    /// A condition waited on under a connection's own frames is in the request's path; a
    /// worker's, under frames that never touch a connection, is waiting for work.
    #[test]
    fn a_condition_under_a_connections_frames_is_in_the_requests_path() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let mut add = |s: &str, w| {
            let ids: Vec<_> = s
                .split(';')
                .map(|n| {
                    let kind = match n {
                        "srv" => FrameKind::Root,
                        "sk_wait_data" | "futex_wait" => FrameKind::Kernel,
                        _ => FrameKind::User,
                    };
                    p.frame(n.as_bytes(), kind)
                })
                .collect();
            p.add_sample_path(&ids, w, NO_TIME, ThreadId::NONE);
        };
        add("srv;start_thread;serve;__libc_read;sk_wait_data", 10);
        add(
            "srv;start_thread;serve;query_db;acquire_conn;pthread_cond_wait;futex_wait",
            80,
        );
        add(
            "srv;start_thread;worker;queue_pop;pthread_cond_wait;futex_wait",
            40,
        );
        let w = offcpu_waits(&p);
        let conds: Vec<(String, bool, u128)> = w
            .sites_of(WaitReason::Futex)
            .map(|s| (s.at.clone(), s.in_request_path, s.weight))
            .collect();
        assert!(
            conds.contains(&("acquire_conn".into(), true, 80)),
            "{conds:?}"
        );
        assert!(
            conds.contains(&("queue_pop".into(), false, 40)),
            "{conds:?}"
        );
    }

    /// A CPython wait: the off-CPU stack holds the interpreter's C frames only; the CPU
    /// profile's stacks hold the Python frames above the same C function.
    #[test]
    fn a_python_wait_is_named_at_the_python_function_that_called_it() {
        let mut off = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let path = |p: &mut Profile, s: &str| -> Vec<kiln_model::FrameId> {
            s.split(';')
                .map(|n| {
                    let kind = match n {
                        "python3" => FrameKind::Root,
                        "hrtimer_nanosleep" => FrameKind::Kernel,
                        n if n.contains(".py:") => FrameKind::Python,
                        _ => FrameKind::User,
                    };
                    p.frame(n.as_bytes(), kind)
                })
                .collect()
        };
        let sleep = path(&mut off, "python3;Py_RunMain;_PyEval_EvalFrameDefault;task_step_impl;PyGen_am_send;_PyEval_EvalFrameDefault;cfunction_vectorcall_O;time_sleep;__clock_nanosleep_2;hrtimer_nanosleep");
        off.add_sample_path(&sleep, 90, NO_TIME, ThreadId::NONE);
        let mut w = offcpu_waits(&off);
        let site = w.sites.first().unwrap();
        assert_eq!(site.label(), "time_sleep under Python code");
        let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let a = path(
            &mut cpu,
            "python3;<module> (s.py:30);handle (s.py:14);lookup (s.py:7);time_sleep",
        );
        let b = path(
            &mut cpu,
            "python3;<module> (s.py:30);other (s.py:20);time_sleep",
        );
        cpu.add_sample_path(&a, 3, NO_TIME, ThreadId::NONE);
        cpu.add_sample_path(&b, 1, NO_TIME, ThreadId::NONE);
        w.name_python_callers(&cpu);
        assert_eq!(w.sites[0].label(), "time_sleep under lookup (s.py:7)");
    }

    /// A stripped interpreter (Debian's): its static functions have no names. A handler
    /// thread waiting on a `threading.Event` waits in the exported lock function under
    /// the unnamed method dispatcher every call goes through — which says nothing of
    /// the call; the Python function is `Condition.wait`, a signal from another thread
    /// (a condition in the request's path: the thread also reads its connection), while
    /// the worker's same wait for work is not in it.
    #[test]
    fn a_stripped_pythons_event_wait_is_a_condition_in_the_requests_path() {
        let kind = |n: &str| match n {
            "python3" => FrameKind::Root,
            "futex_wait" | "sk_wait_data" => FrameKind::Kernel,
            n if n.contains(".py:") => FrameKind::Python,
            _ => FrameKind::User,
        };
        let mut off = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let add = |p: &mut Profile, s: &str, w: u64, thread: ThreadId| {
            let path: Vec<_> = s
                .split(';')
                .map(|n| p.frame(n.as_bytes(), kind(n)))
                .collect();
            p.add_sample_path(&path, w, NO_TIME, thread);
        };
        let handler = off.thread(Some(1), Some(11), b"python3");
        let worker = off.thread(Some(1), Some(12), b"python3");
        let event = "python3;start_thread;python3.11+0x6543a0;_PyEval_EvalFrameDefault;PyObject_Vectorcall;python3.11+0x550b00;python3.11+0x5897a0;PyThread_acquire_lock_timed;__new_sem_wait_slow64.constprop.0;__futex_abstimed_wait_common;futex_wait";
        let recv = "python3;start_thread;python3.11+0x6543a0;_PyEval_EvalFrameDefault;PyObject_Vectorcall;python3.11+0x550b00;python3.11+0x67d020;recv;sk_wait_data";
        let gil = "python3;start_thread;python3.11+0x6543a0;_PyEval_EvalFrameDefault;PyObject_Vectorcall;python3.11+0x550b00;python3.11+0x67d020;PyEval_RestoreThread;python3.11+0x4f92c0;___pthread_mutex_lock;__lll_lock_wait;futex_wait";
        add(&mut off, event, 60, handler);
        add(&mut off, recv, 10, handler);
        add(&mut off, gil, 20, handler);
        add(&mut off, event, 5, worker);
        let mut w = offcpu_waits(&off);
        // The GIL's mutex, taken back after a call, is the GIL.
        assert!(w
            .sites
            .iter()
            .any(|s| s.reason == WaitReason::Lock && s.primitive == GIL && s.weight == 20));
        let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = cpu.thread(Some(1), Some(11), b"python3");
        add(&mut cpu, "python3;Handler.do_GET (server.py:35);Event.wait (threading.py:622);Condition.wait (threading.py:320);python3.11+0x550b00;python3.11+0x5897a0;PyThread_acquire_lock_timed", 2, t);
        add(&mut cpu, "python3;Handler.do_GET (server.py:30);SocketIO.readinto (socket.py:706);python3.11+0x550b00;python3.11+0x67d020;recv", 9, t);
        w.name_python_callers(&cpu);
        let waits: Vec<_> = w
            .sites
            .iter()
            .filter(|s| s.at.starts_with("Condition.wait (threading.py:320)"))
            .map(|s| (s.label(), s.reason, s.in_request_path, s.weight))
            .collect();
        // (In the request's path, named with the handler that waited so.)
        assert_eq!(
            waits,
            [
                ("PyThread_acquire_lock_timed under Condition.wait (threading.py:320) from Handler.do_GET (server.py:35)".to_string(), WaitReason::Futex, true, 60),
                ("PyThread_acquire_lock_timed under Condition.wait (threading.py:320)".to_string(), WaitReason::Futex, false, 5)
            ]
        );
        assert_eq!(w.of(WaitReason::Futex), 65);
        assert_eq!(w.of(WaitReason::Lock), 20);
    }
}
