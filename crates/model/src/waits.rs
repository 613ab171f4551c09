//! Why a thread was off CPU: the reason a blocked stack waited, read from its frames.
//!
//! An off-CPU profile of a server holds every second every thread spent blocked, and
//! most of it is no news: a runtime's idle threads waiting for work (the BEAM's dirty
//! schedulers, aux and poller threads, Go's idle Ms, the sysmon) block all the time the
//! server is not busy. What the engineer looks for — a lock, a disk, a sleep in the
//! request path — is a small share beside them. This module tells the reasons apart so
//! that idle waiting can be left out in one step (`--drop-idle`), counted, and the rest
//! shown by reason.
//!
//! ## Rules
//!
//! A stack is read from the root towards the leaf. The first frame that belongs to a
//! runtime's idle loop (`erts_schedule` waiting in `ethr_event_twait`, the BEAM's I/O
//! poll `erts_check_io`, Go's `runtime.findRunnable`, `runtime.sysmon`) makes it
//! [`WaitReason::Idle`] unless a lock frame comes after it (a scheduler that blocks on a
//! mutex while looking for work waits for the lock, not for work). Otherwise the frame
//! nearest the leaf that names a kind of wait decides: a lock, disk or page I/O, a
//! sleep, an event poll, another futex wait (a condition variable, an event).
use crate::Profile;
use regex::RegexSet;
use std::sync::OnceLock;

/// Why a blocked stack waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum WaitReason {
    /// A runtime's idle thread waiting for work (no load-related work in it).
    Idle,
    /// A lock held by another thread (pthread/BEAM/Go mutexes, kernel locks).
    Lock,
    /// Disk, page-in or block I/O.
    Io,
    /// A sleep the code asked for (nanosleep, usleep, timers).
    Sleep,
    /// Waiting for events on file descriptors (epoll, poll, select), or network reads.
    Poll,
    /// Writing into a full pipe or socket: the reader at the other end is slower than
    /// the writer (a log shipper, a slow client, a downstream service).
    Write,
    /// A futex wait that is not a lock: a condition variable, an event, a semaphore.
    Futex,
    /// Waiting for a child process to end (wait4, waitpid, waitid; Node's spawnSync):
    /// a program the server ran to do part of the work.
    Child,
    /// Anything else.
    Other,
}

impl WaitReason {
    /// Every reason, in the order reports list them.
    pub const ALL: [WaitReason; 9] = [
        WaitReason::Idle,
        WaitReason::Lock,
        WaitReason::Io,
        WaitReason::Sleep,
        WaitReason::Poll,
        WaitReason::Write,
        WaitReason::Futex,
        WaitReason::Child,
        WaitReason::Other,
    ];

    /// A short name for tables and legends.
    pub fn name(self) -> &'static str {
        match self {
            WaitReason::Idle => "idle (runtime waiting for work)",
            WaitReason::Lock => "lock",
            WaitReason::Io => "disk and page I/O",
            WaitReason::Sleep => "sleep",
            WaitReason::Poll => "event poll and network",
            WaitReason::Write => "writing to a full pipe or socket",
            WaitReason::Futex => "condition or event (futex)",
            WaitReason::Child => "child process",
            WaitReason::Other => "other",
        }
    }
}

/// Frames of runtimes' idle loops.
const IDLE: &[&str] = &[
    // BEAM: a scheduler with nothing to run sleeps in scheduler_wait (static; reached
    // from erts_schedule); the poller, aux and scheduler threads poll for I/O.
    r"^(scheduler_wait|erts_check_io\w*|erts_poll_wait\w*|aux_thread|erts_sys_main_thread)$",
    // Go: an M with no goroutine to run, the network poller when idle, sysmon.
    r"^runtime\.(findRunnable|findrunnable|stopm|sysmon|templateThread)$",
    // JVM: idle worker gangs, the periodic task thread, and the attach listener waiting
    // for its next tool (jcmd, jstack, a profiler's agent).
    r"^(WorkerThread::run|GangWorker::loop|WatcherThread::sleep|WorkerThreads::\w+|\w*AttachListener::dequeue)",
    // Java: a pool's worker waiting for its next task (its queue's take or poll under
    // getTask, a fork-join worker with nothing to steal). The JIT's names carry the
    // return type first: "java.lang.Runnable java.util.concurrent.ThreadPoolExecutor.getTask()".
    r"(^|[ .])java\.util\.concurrent\.(ThreadPoolExecutor\.getTask|ForkJoinPool\.awaitWork|ScheduledThreadPoolExecutor\$DelayedWorkQueue\.take)\(",
    // PostgreSQL: the postmaster's loop and its background processes' (the WAL writer,
    // the background writer, the checkpointer spreading its writes, autovacuum's
    // launcher, the archiver, the logical replication launcher), which wait for their
    // next round whatever the load.
    r"^(ServerLoop|WalWriterMain|BackgroundWriterMain|CheckpointWriteDelay|AutoVacLauncherMain|PgArchiverMain|ApplyLauncherMain|SysLoggerMain|WalSndWaitForWal)$",
];

/// The BEAM's scheduler loop: idle when it waits for an event directly (no lock frame
/// after it); `scheduler_wait` is static in Debian's stripped beam.smp, so the wait
/// functions it calls stand for it.
const BEAM_SCHEDULER: &str = r"^erts_schedule$";
const BEAM_EVENT_WAIT: &str = r"^(ethr_event_twait|ethr_event_wait)$";

/// The kernel's frames that wait for a process's address-space lock (`mmap_lock`): a page
/// fault taking it to read, mmap and munmap to write (the wait is inlined into these),
/// a VMA's own lock.
const MMAP_LOCK: &str = r"^(lock_mm_and_find_vma|mmap_read_lock\w*|mmap_write_lock\w*|__vm_munmap|vm_mmap_pgoff|__vma_start_write|vma_start_write|do_madvise|__do_sys_brk|__x64_sys_brk|__x64_sys_mprotect|do_mprotect_pkey)$";

const LOCK: &[&str] = &[
    MMAP_LOCK,
    // File locks (flock, fcntl's POSIX locks, lockf), System V semaphores, a socket's lock.
    r"^(locks_lock_inode_wait|locks_lock_file_wait|flock_lock_inode_wait|posix_lock_inode_wait|do_lock_file_wait|fcntl_setlk\w*|__x64_sys_flock|do_semtimedop|__x64_sys_semop|__x64_sys_semtimedop|__lock_sock|lock_sock_nested)$",
    r"^(_{0,3}pthread_mutex_(timed)?lock\w*|__lll_lock_wait\w*|pthread_rwlock_\w*lock|__pthread_rwlock_\w+|lll_lock_wait)$",
    r"^(erts_proc_lock_failed|ethr_mutex_lock\w*|ethr_rwmutex_\w*lock\w*|erts_mtx_lock\w*|erts_rwmtx_\w*lock\w*)$",
    r"^(sync\.\(\*(Mutex|RWMutex)\)\.\w*[Ll]ock\w*|runtime\.lock2|runtime\.lockWithRank|runtime\.semacquire\w*|sync\.runtime_Semacquire\w*)$",
    r"^(ObjectMonitor::enter\w*|Mutex::lock\w*|Monitor::lock\w*)",
    // Java's own locks, above the park they wait in (a contended queue lock under a
    // pool's getTask is a lock, not an idle worker).
    r"(^|[ .])java\.util\.concurrent\.locks\.(ReentrantLock|ReentrantReadWriteLock\$\w+Lock|AbstractQueuedSynchronizer)\.(lock\w*|acquire\w*)\(",
    // CPython: the GIL (take_gil, static, under the exported functions that call it) and
    // the interpreter's own locks.
    r"^(take_gil|PyEval_RestoreThread|PyEval_AcquireThread|PyEval_AcquireLock|PyThread_acquire_lock\w*|acquire_timed)$",
    r"^(__mutex_lock\w*|mutex_lock\w*|rwsem_down_\w+|down_read\w*|down_write\w*|__down\w*|rt_mutex_\w+)$",
];

const IO: &[&str] = &[
    // Linux AIO's io_getevents.
    r"^(read_events|do_io_getevents|__x64_sys_io_getevents)$",
    // Direct I/O (O_DIRECT) waits for its request where it was submitted.
    r"^(__iomap_dio_rw|iomap_dio_rw|blk_io_schedule|__blkdev_direct_IO\w*|blkdev_direct_IO\w*|__blockdev_direct_IO|do_blockdev_direct_IO|swap_read_folio\w*|swap_readpage\w*)$",
    r"^(io_schedule\w*|folio_wait_bit\w*|folio_wait_\w+|wait_on_page_bit\w*|__folio_lock\w*|submit_bio_wait|blk_mq_\w+|wait_for_completion_io\w*|jbd2_\w+|ext4_sync_file|xfs_file_fsync|bit_wait_io|__wait_on_buffer|filemap_fault|do_read_cache_\w+)$",
];

const SLEEP: &[&str] = &[
    r"^(do_nanosleep|hrtimer_nanosleep|common_nsleep|__x64_sys_nanosleep|__x64_sys_clock_nanosleep|msleep\w*|usleep_range\w*|schedule_timeout_\w*interruptible)$",
    r"^(nanosleep|__nanosleep|clock_nanosleep|__clock_nanosleep\w*|usleep|sleep|runtime\.usleep|time\.Sleep)$",
    // A JVM's Thread.sleep parks on a condition with a timeout: its own frames say sleep.
    r"^(JVM_Sleep|JavaThread::sleep\w*|os::sleep\w*|(\S+ )?java\.lang\.Thread\.sleep\w*\(.*)$",
];

const POLL: &[&str] = &[
    // Connecting (a downstream slow to accept), opening a FIFO until its other end does.
    r"^(inet_wait_for_connect|__inet_stream_connect|wait_for_partner|fifo_open)$",
    r"^(do_epoll_wait|ep_poll|do_sys_poll|do_select|core_sys_select|poll_schedule_timeout\w*|sk_wait_data|inet_csk_accept|wait_woken|unix_stream_read_generic|pipe_read|anon_pipe_read|tcp_recvmsg\w*|sock_recvmsg)$",
    r"^(epoll_wait|epoll_pwait2?|__GI_ppoll|ppoll|poll|__poll|select|pselect|runtime\.netpoll\w*|internal/poll\.\w+)$",
];

/// A writer blocked until the reader makes room: a pipe's buffer, a socket's send buffer.
const WRITE: &[&str] = &[
    r"^(pipe_write|anon_pipe_write|pipe_wait_writable|sk_stream_wait_memory|unix_wait_for_peer|sock_alloc_send_pskb)$",
];

/// A parent waiting for its child to end: the kernel's wait (wait4, waitid), libc's and the
/// runtimes' calls of it, Node's synchronous spawn (its private loop polls for the exit);
/// and for its child to start: a vfork (posix_spawn's) holds the parent until the child
/// has run its program (`wait_for_vfork_done`), which takes the longer the busier the
/// machine is.
const CHILD: &[&str] = &[
    r"^(do_wait|kernel_wait4|kernel_waitid|__do_sys_wait4|__x64_sys_wait4|__x64_sys_waitid|__do_sys_waitid|do_waitid|wait_for_vfork_done)$",
    r"^(wait4|__wait4|waitpid|__waitpid|waitid|__waitid|os\.\(\*Process\)\.(wait|blockUntilWaitable)|os_waitpid\w*|os_wait\w*_impl)$",
    // Python's subprocess: waiting for the exit, or reading the child's output to its end.
    r"^(Popen\.(communicate|_communicate|wait|_wait|_try_wait)|run|check_output|check_call|call) \(subprocess\.py:",
    // Go's os/exec: Wait (and Run, Output) for the process and the copying of its output.
    r"^os/exec\.\(\*Cmd\)\.(Wait|Run|Output|CombinedOutput)$",
    r"^(node::SyncProcessRunner::\w+|java\.lang\.ProcessHandleImpl\.waitForProcessExit0|Java_java_lang_ProcessHandleImpl_waitForProcessExit0)",
    // Java's Process: waitFor (the reaper thread notifies it when the child ends), and
    // reading the child's output to its end (its pipe's stream). The JIT's names carry
    // the return type first.
    r"(^|[ .])java\.lang\.(ProcessImpl\.waitFor|Process\.waitFor|ProcessImpl\$ProcessPipeInputStream\.)",
];

/// Calls that wait for a kind of thing whatever their own wait is made of: a database's
/// lock manager sleeps on a latch (PostgreSQL's `ProcSleep` polls its latch's
/// descriptors; its lightweight locks wait on a semaphore; SQLite's busy handler sleeps
/// between tries), a sleep function on a latch or `select`. A wait anywhere under one of them is of its kind, the first row that holds
/// deciding: a commit flushing the WAL waits for the disk, in its own fsync or for the
/// lock of the backend doing it (`XLogFlush` → `LWLockAcquireOrWait`, group commit).
const WAITS_UNDER: &[(WaitReason, &str)] = &[
    (
        WaitReason::Io,
        r"^(XLogFlush|issue_xlog_fsync|pg_fsync\w*|pg_fdatasync|FileSync)$",
    ),
    (WaitReason::Sleep, r"^(pg_sleep|pg_usleep)$"),
    // SQLite's busy handler sleeps and tries again while another connection holds the
    // database's lock: a lock waited for by polling.
    (
        WaitReason::Lock,
        r"^(sqlite3InvokeBusyHandler|btreeInvokeBusyHandler|sqliteDefaultBusyCallback)$",
    ),
    (
        WaitReason::Lock,
        r"^(ProcSleep|LockAcquire\w*|XactLockTableWait|LockTuple|WaitOnLock|LWLockAcquire\w*|LWLockWaitForVar|LockBufferForCleanup|SyncRepWaitForLSN)$",
    ),
];

const FUTEX: &[&str] = &[
    r"^(futex_wait\w*|futex_do_wait|__futex_wait|futex_wait_queue\w*|do_futex)$",
    // A hand-off through a System V or POSIX message queue: waiting for another's message.
    r"^(do_msgrcv|__x64_sys_msgrcv|do_mq_timedreceive|__x64_sys_mq_timedreceive)$",
];

struct Compiled {
    idle: RegexSet,
    beam_scheduler: regex::Regex,
    beam_event_wait: regex::Regex,
    lock: RegexSet,
    io: RegexSet,
    sleep: RegexSet,
    poll: RegexSet,
    write: RegexSet,
    futex: RegexSet,
    child: RegexSet,
    under: Vec<(WaitReason, regex::Regex)>,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let set = |p: &[&str]| RegexSet::new(p).expect("built-in wait rules compile");
        let one = |p: &str| regex::Regex::new(p).expect("built-in wait rules compile");
        Compiled {
            idle: set(IDLE),
            beam_scheduler: one(BEAM_SCHEDULER),
            beam_event_wait: one(BEAM_EVENT_WAIT),
            lock: set(LOCK),
            io: set(IO),
            sleep: set(SLEEP),
            poll: set(POLL),
            write: set(WRITE),
            futex: set(FUTEX),
            child: set(CHILD),
            under: WAITS_UNDER.iter().map(|&(r, p)| (r, one(p))).collect(),
        }
    })
}

/// The reason a blocked stack waited; `frames` from the root (the thread) to the leaf.
pub(crate) fn wait_reason<S: AsRef<str>>(frames: &[S]) -> WaitReason {
    let c = compiled();
    let names: Vec<&str> = frames
        .iter()
        .map(|f| {
            let f = f.as_ref();
            base_name(f.strip_prefix("__GI_").unwrap_or(f))
        })
        .collect();
    if is_gil_wait(&names) {
        return WaitReason::Lock;
    }
    // A pool's thread waiting for its next task, whatever its queue waits with.
    if waits_for_a_task(&names) {
        return WaitReason::Idle;
    }
    // Idle: a runtime's idle loop with no lock wait after it.
    let lock_at = names.iter().rposition(|f| c.lock.is_match(f));
    let idle_at = names.iter().position(|f| c.idle.is_match(f)).or_else(|| {
        let sched = names.iter().position(|f| c.beam_scheduler.is_match(f))?;
        names[sched..]
            .iter()
            .position(|f| c.beam_event_wait.is_match(f))
            .map(|i| sched + i)
    });
    if let Some(i) = idle_at {
        if lock_at.is_none_or(|l| l < i) {
            return WaitReason::Idle;
        }
    }
    // A wait under a call that waits for a child process is for the child, whatever the
    // wait's own frames (Node's spawnSync polls its private loop for the exit).
    if names.iter().any(|f| c.child.is_match(f)) {
        return WaitReason::Child;
    }
    // A wait under a call that waits for a kind of thing is of its kind.
    for (r, re) in &c.under {
        if names.iter().any(|f| re.is_match(f)) {
            return *r;
        }
    }
    // Otherwise the frame nearest the leaf that names a kind of wait.
    for f in names.iter().rev() {
        for (set, reason) in [
            (&c.lock, WaitReason::Lock),
            (&c.io, WaitReason::Io),
            (&c.sleep, WaitReason::Sleep),
            (&c.write, WaitReason::Write),
            (&c.poll, WaitReason::Poll),
        ] {
            if set.is_match(f) {
                return reason;
            }
        }
    }
    if names.iter().any(|f| c.futex.is_match(f)) {
        return WaitReason::Futex;
    }
    WaitReason::Other
}

/// Whether a pool's thread waits for its next task on the pool's queue: the wait called
/// straight from the thread's loop — libuv's pool (`worker`, the threads Node's `fs`,
/// `dns.lookup`, `crypto.pbkdf2` and zlib use), Node's platform workers (V8's GC and
/// compiler tasks) — or Python's `queue.SimpleQueue.get` (the `_queue` module: a
/// `concurrent.futures` executor's idle workers, asyncio's default executor among them).
/// The same loop blocked anywhere deeper is at work.
fn waits_for_a_task(names: &[&str]) -> bool {
    names.windows(2).any(|w| {
        (matches!(
            w[0],
            "worker" | "node::(anonymous namespace)::PlatformWorkerThread"
        ) && w[1] == "uv_cond_wait")
            || ((w[0].starts_with("_queue.cpython-") || w[0].starts_with("_queue_SimpleQueue_get"))
                && w[1] == "PyThread_acquire_lock_timed")
    })
}

/// Code the JVM generates for itself, named in its perf map beside the methods: the
/// interpreter, call stubs and intrinsics (`StubRoutines (2)`: SHA-256, array copies),
/// adapters between compiled and interpreted code.
pub fn is_jvm_generated(name: &str) -> bool {
    name == "Interpreter"
        || [
            "StubRoutines",
            "I2C/C2I adapters",
            "vtable chunks",
            "itable stub",
            "RuntimeStub",
            "Stub<",
        ]
        .iter()
        .any(|p| name.starts_with(p))
}

/// A method of the JDK (`void java.util.HashMap.resize()`, `byte[]
/// sun.security.provider.DigestBase.digest()`): its name as the JVM's map says it, the
/// return type first.
pub fn is_jdk_method(name: &str) -> bool {
    let Some((head, _)) = name.split_once('(') else {
        return false;
    };
    let method = head.rsplit(' ').next().unwrap_or(head);
    ["java.", "javax.", "jdk.", "sun.", "com.sun."]
        .iter()
        .any(|p| method.starts_with(p))
}

/// A method as the JVM's map names it (`long Journal.append(long)`: a return type, a
/// class-qualified name, its parameters), the JDK's or the program's.
pub fn is_jvm_method(name: &str) -> bool {
    let Some((head, _)) = name.split_once('(') else {
        return false;
    };
    name.ends_with(')')
        && head
            .rsplit_once(' ')
            .is_some_and(|(ret, m)| !ret.is_empty() && m.contains('.') && !m.contains(' '))
}

/// Whether a blocked stack (root to leaf, kernel frames included) waited for its process's
/// address-space lock (`mmap_lock`): the leaf-most frame that names a wait is one of its.
pub fn waits_for_mmap_lock<S: AsRef<str>>(frames: &[S]) -> bool {
    static R: OnceLock<regex::Regex> = OnceLock::new();
    let r = R.get_or_init(|| regex::Regex::new(MMAP_LOCK).expect("built-in wait rules compile"));
    let c = compiled();
    frames
        .iter()
        .rev()
        .map(|f| f.as_ref())
        .find(|f| {
            r.is_match(f)
                || c.lock.is_match(f)
                || c.io.is_match(f)
                || c.sleep.is_match(f)
                || c.poll.is_match(f)
                || c.write.is_match(f)
        })
        .is_some_and(|f| r.is_match(f))
}

/// Whether a stack (root to leaf) waits for a child process: a frame of a call that
/// waits for one to end (or for its output to end), whatever waits below it.
pub fn waits_for_child<S: AsRef<str>>(frames: &[S]) -> bool {
    let c = compiled();
    frames.iter().any(|f| c.child.is_match(f.as_ref()))
}

/// Whether a stack (root to leaf) waits for CPython's GIL: `take_gil`, or — in Debian's
/// stripped interpreter, where `take_gil` is an unnamed static function — the
/// interpreter's own code waiting on a condition variable with a timeout (the GIL's wait
/// is the only one CPython makes that way: its `threading` locks wait on semaphores).
pub fn is_gil_wait<S: AsRef<str>>(frames: &[S]) -> bool {
    frames.windows(2).any(|w| {
        let (a, b) = (base_name(w[0].as_ref()), w[1].as_ref());
        a == "take_gil"
            // Taking the GIL back after a call that let it go: whatever it blocks on there
            // (the GIL's condition, or the mutex beside it) is the GIL.
            || matches!(a, "PyEval_RestoreThread" | "PyEval_AcquireThread")
            || (is_python_binary_address(a)
                && matches!(
                    b.trim_start_matches('_'),
                    "pthread_cond_timedwait"
                        | "pthread_cond_timedwait64"
                        | "GI___pthread_cond_timedwait"
                ))
    })
}

/// `python3.11+0x4f92c0`: an address in the CPython binary (or `libpython3.11.so.1.0`) that
/// no symbol names.
pub fn is_python_binary_address(name: &str) -> bool {
    name.strip_prefix("python3")
        .or_else(|| name.strip_prefix("libpython3"))
        .and_then(|r| r.split_once("+0x"))
        .is_some_and(|(v, _)| v.is_empty() || v.starts_with('.'))
}

/// Whether `name` is a waiting primitive rather than the code that waits: a lock, sleep,
/// poll or futex function, or a system call's wrapper (`syscall`, `__GI_…`).
pub fn is_wait_primitive(name: &str) -> bool {
    let c = compiled();
    let n = unversioned(name);
    let n = base_name(n.strip_prefix("__GI_").unwrap_or(n));
    n == "syscall"
        || c.lock.is_match(n)
        || c.sleep.is_match(n)
        || c.poll.is_match(n)
        || c.futex.is_match(n)
        || c.io.is_match(n)
        || c.child.is_match(n)
        || c.beam_event_wait.is_match(n)
}

/// The wait reason of every stack of `p` (indexed by stack id), computed once per stack.
pub fn stack_reasons(p: &Profile) -> Vec<WaitReason> {
    let mut out = Vec::with_capacity(p.stacks.len());
    let mut path = Vec::new();
    for id in p.stacks.ids() {
        path.clear();
        p.stacks.path_into(id, &mut path);
        let names: Vec<std::borrow::Cow<'_, str>> = path
            .iter()
            .map(|&f| String::from_utf8_lossy(p.frame_name(f)))
            .collect();
        out.push(wait_reason(&names));
    }
    out
}

/// Whose wait an off-CPU stack is. A Go server's threads block for the program (a read, a
/// lock's holder waiting for the disk) and for what is no part of its work: the goroutine
/// that serves kiln's own `--pprof` requests (the CPU profile's writer waits for its
/// buffer a whole window long, `net/http/pprof` sleeps through `profile?seconds=N`), the
/// signal-handling goroutine (`os/signal.loop`) and the runtime's idle Ms and workers.
/// Those are kept apart from the program's waits and named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackOwner {
    /// The program's own code.
    Program,
    /// kiln observing the target: a Go server serving kiln's pprof requests.
    KilnPprof,
    /// The Go runtime waiting for nothing in particular: signals, idle Ms, parked workers.
    GoRuntimeIdle,
}

impl StackOwner {
    /// The words a summary names it by.
    pub fn name(self) -> &'static str {
        match self {
            StackOwner::Program => "the program",
            StackOwner::KilnPprof => "kiln's pprof requests",
            StackOwner::GoRuntimeIdle => "the Go runtime idle",
        }
    }
}

/// Which stacks are not the program's: any frame matching a pattern gives the stack its
/// owner (the first row that matches wins).
const OWNERS: &[(StackOwner, &str)] = &[
    // The handlers of /debug/pprof/ (profile?seconds=N sleeps in net/http/pprof.sleep).
    (StackOwner::KilnPprof, r"^net/http/pprof\."),
    // runtime/pprof's writers: profileWriter waiting on the CPU profile's buffer
    // (runtime/pprof.readProfile), the profileBuilder, the snapshot writers.
    (StackOwner::KilnPprof, r"^runtime/pprof\."),
    // The signal goroutine: os/signal.loop waiting in signal_recv for a signal.
    (
        StackOwner::GoRuntimeIdle,
        r"^(os/signal\.(loop|signal_recv)|runtime\.signal_recv)$",
    ),
    // Idle Ms (stopm, notesleep under it), sysmon, the template thread, parked GC and
    // scavenger workers, the finaliser goroutine.
    (
        StackOwner::GoRuntimeIdle,
        r"^runtime\.(stopm|findRunnable|findrunnable|sysmon|templateThread|gcBgMarkWorker|bgsweep|bgscavenge|forcegchelper|runfinq|ensureSigM)$",
    ),
];

/// Go's runtime and the standard library's lowest layers: not the code a reader looks for
/// above a wait (`runtime.futex.abi0`, `internal/runtime/syscall.Syscall6`,
/// `syscall.pread`, `sync.(*Mutex).lockSlow`).
const GO_RUNTIME: &str = r"^(runtime|internal(/[\w.-]+)*|syscall|sync(/atomic)?)\.";

/// A Go program's own code: package main, or a package outside the standard library (its
/// path starts with a domain: `github.com/x/y.(*T).f`).
const GO_PROGRAM: &str = r"^(main\.|[\w-]+(\.[\w-]+)+/[^;\s]*\.)";

/// Frames that are no program's code above a wait in any runtime: the C library's
/// system-call wrappers and thread internals, thread starts, the JVM's monitors and
/// parking, Python's interpreter and GIL, libuv and V8, the BEAM's runtime. Above them,
/// the program's own frame is what a reader looks for (a Java method above
/// `ObjectMonitor::enter`, a C function above `__libc_read`).
const NOT_PROGRAM: &[&str] = &[
    // glibc: wrappers, futex and pthread internals, thread starts.
    r"^(__GI_|__libc_|__lll_|___?pthread_|__pthread_|__futex|futex_|__new_sem|sem_(timed)?wait|do_futex_wait|__?sched_yield|__nanosleep|__clock_nanosleep|__poll|__select|__?epoll_\w+|__recv\w*|__send\w*|__read\w*|__write\w*|__fsync|__fdatasync|__open\w*|__close\w*|start_thread|__?clone\d*|thread_start|_start|__libc_start\w*)",
    // The C library's internal names (`__sigtimedwait`, `__wait4`, `__memset_avx2_…`) and
    // its allocator's (`sysmalloc_mmap`, `_int_free`): a library's, not the program's.
    r"^__(mem\w+|str\w+|sig\w+|wait\w*|flock|lockf\w*|fcntl\w*|ioctl|mmap\w*|munmap|mprotect|madvise|brk|sbrk|getrandom|posix_spawn\w*|spawn\w*|execve|fork|vfork|exit\w*|lseek\w*|internal_\w+|nptl_\w+|GI_\w+|libc_\w+)",
    r"^(_int_\w+|sysmalloc\w*|malloc_consolidate|munmap_chunk|tcache_\w+|arena_get\w*|new_heap|grow_heap|alloc_perturb)",
    r"^(malloc|free|calloc|realloc|memalign|posix_memalign|aligned_alloc|mmap|mmap64|munmap|mprotect|madvise|brk|sbrk|memset|memcpy|memmove)$",
    r"^(read|write|pread64|pwrite64|readv|writev|recv|recvfrom|recvmsg|send|sendto|sendmsg|accept4?|connect|fsync|fdatasync|sync_file_range|openat|open|close|poll|ppoll|select|epoll_wait|epoll_pwait2?|nanosleep|usleep|sleep|clock_nanosleep|wait4|waitpid|waitid|flock|lockf|fcntl|semop|semtimedop|msgrcv|mq_timedreceive|sigtimedwait|sigwaitinfo|sigwait|sigsuspend|pause|syscall|pthread_\w+|sem_\w+|sched_yield|\[unknown\]|\[vdso\]|\[unknown kernel\])$",
    // The JVM: monitors, parking, the VM's own frames (libjvm addresses), stubs.
    r"^(ObjectMonitor|ObjectSynchronizer|JavaThread|Parker|os::|PlatformEvent|PlatformMonitor|PlatformMutex|Monitor|Mutex|MutexLocker|ThreadBlockInVM|InterpreterRuntime|SharedRuntime|Runtime1|OptoRuntime|JavaCalls|JVM_|Unsafe_|StubRoutines|CallStub|VMThread|SafepointSynchronize|Interpreter$|call_stub|libjvm\.so)",
    // The JIT's runtime stubs in its perf map (`_complete_monitor_locking_Java`, the
    // allocation and rethrow stubs, adapters): the compiled method above is the program's.
    r"^(_\w+_Java$|Stub::|RuntimeStub|I2C/C2I adapters|i2c_|c2i_)|\sstub$",
    // CPython: the eval loop and its calls, the GIL and its locks.
    r"^(take_gil|drop_gil|_?Py[A-Z_]\w*|method_vectorcall\w*|cfunction_\w+|slot_tp_\w+|pysleep|time_sleep|lock_PyThread_acquire_lock|acquire_timed|libpython\S*\+0x|python3(\.\d+)?\+0x)",
    // PostgreSQL's waiting machinery: latches, wait event sets, its lock manager's sleep
    // and semaphores (the caller above is the lock or the read waited for).
    r"^(WaitEventSetWait\w*|WaitLatch\w*|ProcSleep|WaitOnLock|LockAcquire\w*|LWLockAcquire\w*|PGSemaphoreLock|ConditionVariable(Sleep|TimedSleep))$",
    // libuv, Node and V8 internals.
    r"^(uv_\w+|uv__\w+|node::|v8::|Builtins_|libnode\S*\+0x)",
    // The BEAM's runtime, and OTP's process machinery every process runs in (a process's
    // entry and exit, the behaviours' loops: the program's code is the callback they call).
    r"^(erts_\w+|ethr_\w+|beam\.smp\+0x|\$global::|process_main$|sys_\w+)",
    r"^\$(erts_\w+|proc_lib|gen|gen_server2?|gen_statem|gen_event|supervisor2?|erlang|erl_eval|init):",
    // An address no symbol names (`_asyncio.cpython-311-x86_64-linux-gnu.so+0x7db0`): no
    // name a reader can look for.
    r"\+0x[0-9a-f]+$",
];

struct Owners {
    rows: Vec<(StackOwner, regex::Regex)>,
    go_runtime: regex::Regex,
    go_program: regex::Regex,
    not_program: regex::RegexSet,
}

fn owners() -> &'static Owners {
    static O: OnceLock<Owners> = OnceLock::new();
    O.get_or_init(|| {
        let one = |p: &str| regex::Regex::new(p).expect("built-in owner rules compile");
        Owners {
            rows: OWNERS.iter().map(|&(o, p)| (o, one(p))).collect(),
            go_runtime: one(GO_RUNTIME),
            go_program: one(GO_PROGRAM),
            not_program: regex::RegexSet::new(NOT_PROGRAM).expect("built-in rules compile"),
        }
    })
}

/// Whose wait a stack is (`frames` from the root to the leaf), by [`OWNERS`].
pub fn stack_owner<S: AsRef<str>>(frames: &[S]) -> StackOwner {
    let o = owners();
    o.rows
        .iter()
        .find(|(_, re)| frames.iter().any(|f| re.is_match(f.as_ref())))
        .map_or(StackOwner::Program, |&(owner, _)| owner)
}

/// A symbol without its version (`pthread_spin_lock@@GLIBC_2.34`, `memcpy@GLIBC_2.2.5`:
/// a shared library's versioned name, as its symbol table spells it).
pub fn unversioned(name: &str) -> &str {
    match name.split_once('@') {
        Some((base, v))
            if !base.is_empty()
                && v.trim_start_matches('@')
                    .starts_with(|c: char| c.is_ascii_uppercase())
                && v.trim_start_matches('@').chars().all(|c| {
                    c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '.'
                }) =>
        {
            base
        }
        _ => name,
    }
}

/// The suffixes compilers give the copies they make of a function: GCC's
/// `.lto_priv.N` (a static function made private by link-time optimisation), `.isra.N`,
/// `.constprop.N`, `.part.N`, `.cold` (the function's rarely run part), and clang's
/// `.llvm.N`.
const CLONE_KINDS: &[&str] = &[
    "lto_priv",
    "isra",
    "constprop",
    "part",
    "cold",
    "localalias",
    "llvm",
];

/// A function's name without the suffixes its compiler's copies add
/// (`gc_collect_main.lto_priv.0` → `gc_collect_main`, `take_gil.lto_priv.0.cold` →
/// `take_gil`): the function the source names, for matching (the profile keeps the
/// name as the symbol table spells it, as perf does).
pub fn base_name(name: &str) -> &str {
    let mut n = name;
    loop {
        let Some((head, tail)) = n.rsplit_once('.') else {
            return n;
        };
        let numbered = !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit());
        let shorter = if numbered {
            match head.rsplit_once('.') {
                Some((h, kind)) if CLONE_KINDS.contains(&kind) => h,
                _ => return n,
            }
        } else if tail == "cold" && (!head.contains('.') || base_name(head) != head) {
            // A bare `.cold` (a method named `cold` of a dotted class is not one).
            head
        } else {
            return n;
        };
        if shorter.is_empty() {
            return n;
        }
        n = shorter;
    }
}

/// Whether a frame is the program's own code (not a runtime's, a library's wait
/// primitive, or the thread's start).
pub fn is_program_frame(f: &str) -> bool {
    let o = owners();
    let f = unversioned(f);
    !o.go_runtime.is_match(f) && !is_wait_primitive(f) && !o.not_program.is_match(f)
}

/// The program's code nearest the leaf in `frames` (root to leaf, user frames only): a
/// Go `main.` frame (or a package outside Go's standard library); else the frame nearest
/// the leaf that is neither a waiting primitive, Go's runtime, sync or internal packages,
/// nor another runtime's own frames ([`NOT_PROGRAM`]: glibc's wrappers, the JVM's
/// monitors, CPython's eval loop and GIL, libuv, the BEAM); `None` when every frame is one
/// of those.
pub fn program_frame<S: AsRef<str>>(frames: &[S]) -> Option<usize> {
    let o = owners();
    // CPython: the program is its Python; the C under its last Python frame is the
    // interpreter's and its modules' (`sock_call_ex`, `select_poll_poll`, `thread_run`
    // where the interpreter keeps its symbols), named or not.
    if frames.iter().any(|f| is_cpython_frame(f.as_ref())) {
        return frames.iter().rposition(|f| is_python_code(f.as_ref()));
    }
    frames
        .iter()
        .rposition(|f| o.go_program.is_match(f.as_ref()))
        .or_else(|| {
            frames.iter().rposition(|f| {
                let f = unversioned(f.as_ref());
                !o.go_runtime.is_match(f) && !is_wait_primitive(f) && !o.not_program.is_match(f)
            })
        })
}

/// A Python function as kiln names it: `qualname (file.py:line)` (or a module the
/// interpreter made: `<frozen importlib._bootstrap>`, `<string>`).
pub fn is_python_code(f: &str) -> bool {
    f.ends_with(')')
        && f.rsplit_once(" (")
            .is_some_and(|(_, at)| at.contains(".py") || at.starts_with('<'))
}

/// Whether a frame is CPython's: a Python function, or the interpreter's own code (its
/// eval loop, entry and GIL; its binary's unnamed addresses) by names no other program's
/// functions take (its threads' start, `thread_run`, might be a C server's).
fn is_cpython_frame(f: &str) -> bool {
    is_python_code(f)
        || is_python_binary_address(f)
        || matches!(
            base_name(f),
            "_PyEval_EvalFrameDefault" | "Py_RunMain" | "Py_BytesMain" | "take_gil"
        )
}

/// Whether a Go function is the program's own or a module's it imports (package `main`,
/// an import path starting with a domain), not the standard library's or the runtime's.
pub fn is_go_program(f: &str) -> bool {
    owners().go_program.is_match(f)
}

/// The leaf kiln puts above `runtime.gopark` in a goroutine-wait profile when a timer
/// woke the goroutine (a sleep, or a receive from a timer's channel: `time.After`, a
/// `Ticker`): its wait was for the timer, whatever it parked on.
pub const GO_WOKEN_BY_TIMER: &str = "[woken by a timer]";

/// Where a Go profile's stack (block or mutex: root to leaf) waited, as a reader names it:
/// the program's frame nearest the leaf ([`program_frame`]) and the function it called
/// there (`sync.(*Mutex).Lock` under `main.(*blockCache).get`). `None` for an empty stack.
pub fn go_wait_site<S: AsRef<str>>(frames: &[S]) -> Option<(&str, &str)> {
    let under = program_frame(frames).unwrap_or(frames.len().checked_sub(1)?);
    let at = frames.get(under + 1).unwrap_or(&frames[under]);
    Some((at.as_ref(), frames[under].as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(stack: &str) -> WaitReason {
        wait_reason(&stack.split(';').collect::<Vec<_>>())
    }

    #[test]
    fn a_wait_for_a_child_process_is_the_childs_whatever_its_own_frames() {
        assert_eq!(r("spawn;start_thread;handle;render_with_helper;__GI___wait4;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_wait4;__do_sys_wait4;kernel_wait4;do_wait;schedule"), WaitReason::Child);
        assert_eq!(r("main;main.render;os/exec.(*Cmd).Wait;os.(*Process).wait;os.(*Process).blockUntilWaitable;syscall.Syscall6;do_syscall_64;__x64_sys_waitid;do_waitid;do_wait;schedule"), WaitReason::Child);
        // Node's execSync waits for the exit in epoll on a private loop.
        assert_eq!(r("node;uv_run;node::SyncProcessRunner::Run;uv_run;uv__io_poll;epoll_wait;do_epoll_wait;ep_poll;schedule"), WaitReason::Child);
        assert_eq!(
            r("node;uv_run;uv__io_poll;epoll_wait;do_epoll_wait;ep_poll;schedule"),
            WaitReason::Poll
        );
        // Java: a request's thread reading its child's output to the end, then waiting
        // for the reaper thread's word that it ended.
        assert_eq!(r("pool-1-thread-2;java.lang.String Receipts.stampReceipt();byte[] java.io.InputStream.readAllBytes();int java.lang.ProcessImpl$ProcessPipeInputStream.read(byte[], int, int);int java.io.FileInputStream.readBytes(byte[], int, int);readBytes;__libc_read;pipe_read;schedule"), WaitReason::Child);
        assert_eq!(r("pool-1-thread-2;java.lang.String Receipts.stampReceipt();int java.lang.ProcessImpl.waitFor();void java.lang.Object.wait(long);ObjectMonitor::wait;futex_do_wait"), WaitReason::Child);
        // Python reading a child's output to its end (subprocess.run(capture_output=True)).
        assert_eq!(r("python3;do_GET (srv.py:7);run (subprocess.py:550);Popen.communicate (subprocess.py:1209);Popen._communicate (subprocess.py:2115);_PollLikeSelector.select (selectors.py:415);select_poll_poll;__GI___poll;do_sys_poll"), WaitReason::Child);
    }

    #[test]
    fn a_java_pools_idle_workers_are_idle_and_its_locks_are_locks() {
        // The attach listener between two tools' requests (kiln's own thread dumps).
        assert_eq!(r("Attach Listener;__clone3;start_thread;thread_native_entry;Thread::call_run;JavaThread::thread_main_inner;attach_listener_thread_entry;LinuxAttachListener::dequeue;__libc_accept;do_syscall_64;__x64_sys_accept;inet_accept;inet_csk_accept;schedule"), WaitReason::Idle);
        assert_eq!(r("pool-1-thread-3;void java.lang.Thread.run();void java.util.concurrent.ThreadPoolExecutor.runWorker(java.util.concurrent.ThreadPoolExecutor$Worker);java.lang.Runnable java.util.concurrent.ThreadPoolExecutor.getTask();java.lang.Object java.util.concurrent.LinkedBlockingQueue.take();void java.util.concurrent.locks.LockSupport.park(java.lang.Object);void jdk.internal.misc.Unsafe.park(boolean, long);Unsafe_Park;Parker::park;__futex_abstimed_wait_common;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("pool-1-thread-3;void java.lang.Thread.run();java.lang.Runnable java.util.concurrent.ThreadPoolExecutor.getTask();java.lang.Object java.util.concurrent.LinkedBlockingQueue.take();void java.util.concurrent.locks.ReentrantLock.lockInterruptibly();void jdk.internal.misc.Unsafe.park(boolean, long);Unsafe_Park;futex_do_wait"), WaitReason::Lock);
        assert_eq!(r("pool-1-thread-1;__clone3;start_thread;thread_native_entry;Interpreter;void com.sun.net.httpserver.Filter$Chain.doFilter(com.sun.net.httpserver.HttpExchange);void java.lang.Thread.sleep(long);JVM_Sleep;JavaThread::sleep;os::PlatformEvent::park;__GI___pthread_cond_timedwait;__futex_abstimed_wait_common;do_syscall_64;__x64_sys_futex;do_futex;futex_wait;__futex_wait;futex_do_wait"), WaitReason::Sleep);
        assert_eq!(r("pool-1-thread-3;void java.lang.Thread.run();long Ledger.post(long);ObjectMonitor::enter;ObjectMonitor::EnterI;PlatformEvent::park;futex_do_wait"), WaitReason::Lock);
        // A contended synchronized block in compiled code: the compiled method above the
        // runtime's stub is the program's frame.
        let frames = [
            "pool-1-thread-3",
            "void java.lang.Thread.run()",
            "long Ledger.post(long)",
            "_complete_monitor_locking_Java",
            "SharedRuntime::complete_monitor_locking_C",
            "ObjectMonitor::enter",
            "PlatformEvent::park",
            "__futex_abstimed_wait_common",
        ];
        assert_eq!(program_frame(&frames), Some(2));
        // The same in C1's code: its Runtime1 stub.
        let frames = [
            "pool-1-thread-3",
            "void java.lang.Thread.run()",
            "long Ledger.post(long)",
            "monitorenter_nofpu Runtime1 stub",
            "Runtime1::monitorenter",
            "ObjectMonitor::enter",
            "__futex_abstimed_wait_common",
        ];
        assert_eq!(program_frame(&frames), Some(2));
    }

    #[test]
    fn jvm_methods_are_told_from_the_jdks_and_the_jvms_own_code() {
        assert!(is_jvm_method("long Journal.append(long)"));
        assert!(is_jvm_method(
            "void jdk.internal.misc.Unsafe.park(boolean, long)"
        ));
        assert!(!is_jvm_method("post_entry (server.py:24)"));
        assert!(!is_jvm_method("StubRoutines (2)"));
        assert!(!is_jvm_method("JavaCalls::call_helper"));
        assert!(is_jdk_method(
            "void jdk.internal.misc.Unsafe.park(boolean, long)"
        ));
        assert!(is_jdk_method(
            "void java.util.concurrent.locks.ReentrantLock.lock()"
        ));
        assert!(!is_jdk_method("long Journal.append(long)"));
        assert!(is_jvm_generated("StubRoutines (2)") && is_jvm_generated("Interpreter"));
    }

    #[test]
    fn pool_threads_waiting_for_a_task_are_idle() {
        // libuv's pool and the platform's workers waiting for a task are idle; the same
        // threads blocked inside a task are not.
        assert_eq!(r("node;__clone3;start_thread;node::(anonymous namespace)::PlatformWorkerThread;uv_cond_wait;___pthread_cond_wait;__futex_abstimed_wait_common;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("node;__clone3;start_thread;worker;uv_cond_wait;___pthread_cond_wait;__futex_abstimed_wait_common;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("node;__clone3;start_thread;worker;uv__fs_work;__GI_fdatasync;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_fdatasync;ext4_sync_file;io_schedule"), WaitReason::Io);
        assert_eq!(r("node;__clone3;start_thread;worker;uv_mutex_lock;___pthread_mutex_lock;__GI___lll_lock_wait;futex_do_wait"), WaitReason::Lock);
        assert_eq!(r("node;__clone3;start_thread;node::(anonymous namespace)::PlatformWorkerThread;v8::platform::DefaultJobWorker::Run;v8::internal::ScavengerCollector::JobTask::Run;___pthread_cond_wait;futex_do_wait"), WaitReason::Futex);
        // Python's executor workers waiting on their SimpleQueue (Debian's stripped
        // interpreter: the _queue module by address); taking the GIL back after is the GIL.
        assert_eq!(r("python3;__clone3;start_thread;python3.11+0x6543a0;_PyEval_EvalFrameDefault;PyObject_Vectorcall;python3.11+0x5deca0;_queue.cpython-311-x86_64-linux-gnu.so+0x2880;PyThread_acquire_lock_timed;__new_sem_wait_slow64.constprop.0;__futex_abstimed_wait_common;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("python3;__clone3;start_thread;_PyEval_EvalFrameDefault;_queue.cpython-311-x86_64-linux-gnu.so+0x2880;PyEval_RestoreThread;python3.11+0x4f92c0;__GI___pthread_cond_timedwait;futex_do_wait"), WaitReason::Lock);
    }

    #[test]
    fn beam_idle_threads_are_idle_and_its_locks_are_locks() {
        // What kiln recorded of RabbitMQ under load.
        assert_eq!(r("aux;__clone3;start_thread;beam.smp+0x2e9b00;beam.smp+0x73660;erts_check_io;erts_poll_wait_flbk;__GI_ppoll;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_ppoll;do_sys_poll;poll_schedule_timeout.constprop.0"), WaitReason::Idle);
        assert_eq!(r("dirty_io_sche;__clone3;start_thread;beam.smp+0x2e9b00;beam.smp+0x699a0;erts_dirty_process_main;erts_schedule;beam.smp+0x73ee0;ethr_event_twait;syscall;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_futex;do_futex;futex_wait;__futex_wait;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("poller;__clone3;start_thread;beam.smp+0x2e9b00;beam.smp+0x6b800;erts_check_io;erts_poll_wait;epoll_wait;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_epoll_wait;do_epoll_wait"), WaitReason::Idle);
        assert_eq!(r("scheduler;$global::process_main;erts_schedule;erts_port_task_execute;___pthread_mutex_lock;__GI___lll_lock_wait;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_futex;do_futex;futex_wait;__futex_wait;futex_do_wait"), WaitReason::Lock);
        assert_eq!(r("scheduler;$global::call_light_bif_shared;erl_send;erts_send_message;erts_proc_sig_queue_lock;erts_proc_lock_failed;ethr_event_wait;syscall;do_syscall_64;futex_do_wait"), WaitReason::Lock);
        assert_eq!(r("poller;__clone3;start_thread;erts_check_io;erts_port_task_schedule;___pthread_mutex_lock;__GI___lll_lock_wait;futex_do_wait"), WaitReason::Lock);
        // A versioned symbol is the primitive it names.
        assert!(!is_program_frame("pthread_spin_lock@@GLIBC_2.34"));
        assert_eq!(unversioned("memcpy@GLIBC_2.2.5"), "memcpy");
        assert_eq!(
            unversioned("JS:*f /app/node_modules/@scope/x.js:1"),
            "JS:*f /app/node_modules/@scope/x.js:1"
        );
        let frames = [
            "srv",
            "serve",
            "post_entry",
            "pthread_spin_lock@@GLIBC_2.34",
        ];
        assert_eq!(program_frame(&frames), Some(2));
        // OTP's process machinery is not the program's code; the behaviour's callback is.
        for f in [
            "$erts_beamasm:normal_exit/0",
            "$proc_lib:init_p_do_apply/3",
            "$gen_server:loop/7",
            "$gen_server2:handle_msg/2",
        ] {
            assert!(!is_program_frame(f), "{f}");
        }
        assert!(is_program_frame("$ledger:handle_call/3"));
        assert!(is_program_frame("$rabbit_channel:handle_cast/2"));
        let frames = [
            "1_scheduler",
            "$erts_beamasm:normal_exit/0",
            "$proc_lib:init_p_do_apply/3",
            "$gen_server:loop/7",
            "$gen_server:handle_msg/6",
            "$ledger:handle_call/3",
            "$ledger:spin/2",
            "erts_mixed_plus",
        ];
        assert_eq!(program_frame(&frames), Some(6));
    }

    #[test]
    fn a_compilers_copies_of_a_function_are_the_function() {
        assert_eq!(base_name("gc_collect_main.lto_priv.0"), "gc_collect_main");
        assert_eq!(base_name("take_gil.lto_priv.0.cold"), "take_gil");
        assert_eq!(base_name("finish_task_switch.isra.0"), "finish_task_switch");
        assert_eq!(base_name("PyGC_Collect.cold"), "PyGC_Collect");
        assert_eq!(base_name("work.constprop.0.part.0"), "work");
        assert_eq!(base_name("foo.llvm.1234567"), "foo");
        // Not a copy's suffix: left as it is.
        for name in [
            "java.lang.Thread.run",
            "com.example.Weather.cold",
            "handle (server.py:42)",
            "python3.11+0x4f92c0",
            "libc.so.6+0x1234",
            ".isra.0",
            "v8::internal::Heap::part",
        ] {
            assert_eq!(base_name(name), name);
        }
        // CPython's GIL as Debian's symbols name it.
        assert_eq!(
            r("python3;worker;take_gil.lto_priv.0;PyCOND_TIMEDWAIT;pthread_cond_timedwait"),
            WaitReason::Lock
        );
    }

    #[test]
    fn pythons_gil_is_a_lock_even_stripped() {
        assert_eq!(r("python3;worker (gil.py:12);python3.11+0x4f92c0;__pthread_cond_timedwait;__futex_abstimed_wait_common;futex_wait"), WaitReason::Lock);
        assert_eq!(
            r("python3;worker;take_gil;PyCOND_TIMEDWAIT;pthread_cond_timedwait"),
            WaitReason::Lock
        );
        // A threading.Lock waits on a semaphore: a lock too, by its own name.
        assert_eq!(
            r("python3;worker;PyThread_acquire_lock_timed;sem_clockwait;futex_wait"),
            WaitReason::Lock
        );
        assert!(!is_gil_wait(&["app", "worker", "pthread_cond_timedwait"]));
    }

    #[test]
    fn other_reasons() {
        assert_eq!(r("mm;main;usleep;__nanosleep;__clock_nanosleep_2;do_syscall_64;__x64_sys_clock_nanosleep;common_nsleep;hrtimer_nanosleep;do_nanosleep;schedule;__schedule"), WaitReason::Sleep);
        // SQLite's busy handler sleeping between tries for the database's lock (Debian's
        // libsqlite3 under Python's sqlite3 module, as the off-CPU profile has it).
        assert_eq!(r("python3;start_thread;_PyEval_EvalFrameDefault;_sqlite3.cpython-311-x86_64-linux-gnu.so+0xb0d0;sqlite3_step;sqlite3VdbeExec;sqlite3BtreeBeginTrans;sqlite3PagerSharedLock;libsqlite3.so.0.8.6+0xae850;sqlite3InvokeBusyHandler;libsqlite3.so.0.8.6+0xa1c30;usleep;__nanosleep;__clock_nanosleep_2;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_clock_nanosleep;common_nsleep;hrtimer_nanosleep"), WaitReason::Lock);
        assert_eq!(
            r("nginx;main;ngx_process_events;epoll_wait;do_syscall_64;do_epoll_wait"),
            WaitReason::Poll
        );
        assert_eq!(r("db;main;pread64;do_syscall_64;vfs_read;filemap_read;folio_wait_bit_common;io_schedule"), WaitReason::Io);
        // O_DIRECT: the wait for the request is in the direct I/O code (its schedule trimmed).
        assert_eq!(r("server;serve;read_block_from_disk;__GI___pread;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pread64;vfs_read;ext4_file_read_iter;iomap_dio_rw;__iomap_dio_rw"), WaitReason::Io);
        assert_eq!(
            r("app;worker;pthread_cond_wait;do_syscall_64;futex_wait;futex_do_wait"),
            WaitReason::Futex
        );
        assert_eq!(r("server;runtime.mstart;runtime.schedule;runtime.findRunnable;runtime.stopm;runtime.mPark;runtime.notesleep;runtime.futexsleep;runtime.futex;futex_do_wait"), WaitReason::Idle);
        assert_eq!(r("server;main.(*blockCache).get;sync.(*Mutex).Lock;sync.(*Mutex).lockSlow;runtime.semacquire1;runtime.futex"), WaitReason::Lock);
        assert_eq!(r("x;main;wait4;do_wait"), WaitReason::Child);
        // PostgreSQL: a row lock's wait polls the backend's latch; a lightweight lock waits
        // on a semaphore; pg_sleep on the latch; the WAL writer waits for its next round.
        let pg =
            "postgres;main;PostmasterMain;PostgresMain;PortalRun;standard_ExecutorRun;heap_update";
        assert_eq!(
            r(&format!("{pg};XactLockTableWait;LockAcquireExtended;ProcSleep;WaitLatch;WaitEventSetWait;epoll_wait;do_epoll_wait")),
            WaitReason::Lock
        );
        assert_eq!(
            r(&format!(
                "{pg};LWLockAcquire;PGSemaphoreLock;__new_sem_wait_slow64.constprop.0;futex_wait"
            )),
            WaitReason::Lock
        );
        assert_eq!(
            r("postgres;PostgresMain;PortalRun;pg_sleep;WaitLatch;WaitEventSetWait;epoll_wait"),
            WaitReason::Sleep
        );
        // A commit waiting for another backend's WAL flush (group commit): the disk.
        assert_eq!(
            r("postgres;PostgresMain;CommitTransaction;RecordTransactionCommit;XLogFlush;LWLockAcquireOrWait;PGSemaphoreLock;__new_sem_wait_slow64;futex_wait"),
            WaitReason::Io
        );
        assert_eq!(
            r("postgres;main;PostmasterMain;AuxiliaryProcessMain;WalWriterMain;WaitLatch;WaitEventSetWait;epoll_wait"),
            WaitReason::Idle
        );
        assert_eq!(
            r("postgres;PostgresMain;pq_getbyte;secure_read;WaitEventSetWait;epoll_wait"),
            WaitReason::Poll
        );
        // posix_spawn's parent, held until its child has run its program.
        assert_eq!(
            r("x;run_helper;__posix_spawn;__spawni;__GI___clone3;__x64_sys_clone3;kernel_clone;wait_for_vfork_done;schedule"),
            WaitReason::Child
        );
        assert_eq!(r("x;main;pause;sys_pause"), WaitReason::Other);
        let munmap = "pf;start_thread;serve;build_report;__GI___libc_free;__GI___munmap;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_munmap;__vm_munmap";
        assert_eq!(r(munmap), WaitReason::Lock);
        assert!(waits_for_mmap_lock(&munmap.split(';').collect::<Vec<_>>()));
        assert_eq!(r("pf;serve;build_report;__memset_avx512_unaligned_erms;asm_exc_page_fault;exc_page_fault;lock_mm_and_find_vma"), WaitReason::Lock);
        assert!(!waits_for_mmap_lock(&[
            "x",
            "serve",
            "pthread_mutex_lock",
            "futex_wait"
        ]));
        assert_eq!(r("x;serve;take_ticket;__GI___flock;do_syscall_64;__x64_sys_flock;locks_lock_inode_wait;schedule"), WaitReason::Lock);
        assert_eq!(
            r("x;serve;reserve;semop;do_syscall_64;__x64_sys_semop;do_semtimedop;schedule"),
            WaitReason::Lock
        );
        assert_eq!(
            r("x;serve;next_job;msgrcv;do_syscall_64;__x64_sys_msgrcv;do_msgrcv;schedule"),
            WaitReason::Futex
        );
        assert_eq!(r("x;serve;call_backend;__libc_connect;__sys_connect;__inet_stream_connect;inet_wait_for_connect;schedule"), WaitReason::Poll);
        // A writer waits for its reader to make room; a reader waits for data.
        assert_eq!(
            r("p;serve;log_request;__GI___libc_write;do_syscall_64;ksys_write;vfs_write;anon_pipe_write"),
            WaitReason::Write
        );
        assert_eq!(
            r("p;serve;send;do_syscall_64;tcp_sendmsg;tcp_sendmsg_locked;sk_stream_wait_memory"),
            WaitReason::Write
        );
        assert_eq!(
            r("p;serve;read;do_syscall_64;ksys_read;vfs_read;anon_pipe_read"),
            WaitReason::Poll
        );
    }

    fn frames(folded: &str) -> Vec<&str> {
        folded.split(';').collect()
    }

    #[test]
    fn kilns_own_requests_and_gos_idle_goroutines_are_not_the_programs() {
        use StackOwner::*;
        // Thread stacks kiln recorded off CPU in go-blockcache under load with --pprof.
        let cases = [
            ("go-blockcache;runtime.goexit.abi0;runtime/pprof.profileWriter;runtime/pprof.readProfile;runtime.(*profBuf).read;runtime.notetsleepg;runtime.notetsleep_internal;runtime.futexsleep;runtime.futex.abi0", KilnPprof),
            ("go-blockcache;runtime.goexit.abi0;net/http.(*conn).serve;net/http.serverHandler.ServeHTTP;net/http.(*ServeMux).ServeHTTP;net/http.HandlerFunc.ServeHTTP;net/http/pprof.Profile;net/http/pprof.sleep;time.Sleep;runtime.futex.abi0", KilnPprof),
            ("go-blockcache;runtime.goexit.abi0;net/http/pprof.handler.ServeHTTP;runtime/pprof.(*Profile).WriteTo;runtime/pprof.writeBlock;runtime/pprof.(*profileBuilder).build;runtime.futex.abi0", KilnPprof),
            ("go-blockcache;runtime.goexit.abi0;os/signal.loop;os/signal.signal_recv;runtime.notetsleepg;runtime.futexsleep;runtime.futex.abi0", GoRuntimeIdle),
            ("go-blockcache;runtime.mstart.abi0;runtime.mstart1;runtime.schedule;runtime.findRunnable;runtime.stopm;runtime.mPark;runtime.notesleep;runtime.futexsleep;runtime.futex.abi0", GoRuntimeIdle),
            ("go-blockcache;runtime.goexit.abi0;runtime.gcBgMarkWorker;runtime.systemstack.abi0;runtime.futex.abi0", GoRuntimeIdle),
            ("go-blockcache;runtime.goexit.abi0;net/http.(*conn).serve;main.(*server).query;main.(*blockCache).get;main.(*blockCache).readBlock;os.(*File).ReadAt;internal/poll.(*FD).Pread;syscall.pread;internal/runtime/syscall.Syscall6", Program),
            ("nginx;main;ngx_process_events;epoll_wait", Program),
        ];
        for (s, want) in cases {
            assert_eq!(stack_owner(&frames(s)), want, "{s}");
        }
    }

    #[test]
    fn the_waiting_code_is_the_programs_frame() {
        fn at(s: &str) -> Option<&str> {
            program_frame(&frames(s)).map(|i| frames(s)[i])
        }
        assert_eq!(
            at("go-blockcache;runtime.goexit.abi0;net/http.(*conn).serve;main.(*server).query;main.(*blockCache).get;main.(*blockCache).readBlock;os.(*File).ReadAt;internal/poll.(*FD).Pread;syscall.pread;internal/runtime/syscall.Syscall6"),
            Some("main.(*blockCache).readBlock")
        );
        assert_eq!(
            at("svc;runtime.goexit.abi0;github.com/acme/db.(*Table).Get;sync.(*Mutex).Lock;sync.(*Mutex).lockSlow;runtime.semacquire1;runtime.futex.abi0"),
            Some("github.com/acme/db.(*Table).Get")
        );
        // No program frame: the first one outside the runtime.
        assert_eq!(
            at("svc;runtime.goexit.abi0;net/http.(*conn).serve;bufio.(*Reader).Read;internal/poll.(*FD).Read;syscall.read"),
            Some("bufio.(*Reader).Read")
        );
        // C: the function that called the primitive, as before.
        assert_eq!(
            at("app;main;worker;pthread_mutex_lock;syscall"),
            Some("worker")
        );
        assert_eq!(at("runtime.futex.abi0"), None);
        // Another runtime's frames are not the program's: the Java method above the
        // monitor, the C function above glibc's wrappers.
        let java = [
            "java",
            "start_thread",
            "JavaThread::run",
            "Interpreter",
            "LHotServer;::handle",
            "SharedRuntime::complete_monitor_locking_C",
            "ObjectMonitor::enter",
            "ObjectMonitor::EnterI",
            "Parker::park",
            "__pthread_cond_wait",
            "__futex_abstimed_wait_common",
        ];
        assert_eq!(program_frame(&java), Some(4));
        assert_eq!(
            at("srv;__clone3;start_thread;serve;__libc_read"),
            Some("serve")
        );
        assert_eq!(
            at("python3;_start;__libc_start_main;Py_RunMain;_PyEval_EvalFrameDefault;handle (server.py:42);take_gil;PyCOND_TIMEDWAIT;__futex_abstimed_wait_common"),
            Some("handle (server.py:42)")
        );
        // A C server's own thread_run is its program's.
        assert_eq!(
            at("srv;start_thread;thread_run;serve;pthread_mutex_lock"),
            Some("serve")
        );
        assert_eq!(
            at("srv;start_thread;thread_run;__libc_read"),
            Some("thread_run")
        );
        // The interpreter's C named by its symbols (python3-dbg) is not the program's.
        assert_eq!(
            at("python3;start_thread;thread_run.lto_priv.0;_PyEval_EvalFrameDefault;Handler.do_GET (server.py:35);_PyEval_EvalFrameDefault;method_vectorcall_VARARGS.lto_priv.0;sock_recv.lto_priv.0;sock_call_ex.lto_priv.0;PyEval_RestoreThread;take_gil.lto_priv.0;pthread_cond_timedwait"),
            Some("Handler.do_GET (server.py:35)")
        );
        assert_eq!(
            at("python3;start_thread;thread_run.lto_priv.0;take_gil.lto_priv.0;pthread_cond_timedwait"),
            None
        );
        assert_eq!(
            at("__clone3;start_thread;__futex_abstimed_wait_common"),
            None
        );
        // Go's block profile: the lock and its caller.
        assert_eq!(
            go_wait_site(&frames("runtime.goexit;net/http.(*conn).serve;main.(*server).query;main.(*blockCache).get;sync.(*Mutex).Lock;sync.(*Mutex).lockSlow")),
            Some(("sync.(*Mutex).Lock", "main.(*blockCache).get"))
        );
        assert_eq!(
            go_wait_site(&frames(
                "runtime.goexit;main.(*blockCache).get;sync.(*Mutex).Unlock"
            )),
            Some(("sync.(*Mutex).Unlock", "main.(*blockCache).get"))
        );
        assert_eq!(
            go_wait_site(&frames("runtime.goexit;runtime.selectgo")),
            Some(("runtime.selectgo", "runtime.selectgo"))
        );
        assert_eq!(go_wait_site::<&str>(&[]), None);
    }
}
