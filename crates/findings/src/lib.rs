//! # kiln-findings: why the server did what it did, in ranked claims
//!
//! A stored run holds what happened — the load's seconds, each thread group's states, the
//! profiles, the runtime's own accounting, the target's command line — and this crate
//! says what it means, as a performance engineer would, for servers nobody wrote a
//! sentence for:
//!
//! ```text
//! kiln run --name api -p "$(pgrep -x api)" -e cpu,offcpu -d 30 load http -c 64 http://127.0.0.1:8080/
//!   findings:
//!     1. Lock contention: requests waited on a lock 78% of their time, in pthread_mutex_lock under read_block [78% of request time]
//!        evidence: …
//!        check: …
//! ```
//!
//! ## Design constraints
//!
//! * **Methods, not cases.** The rules come from methods that reach any server: the
//!   thread-state split of every thread group (on a CPU, runnable and waiting for one,
//!   blocked by reason: a lock, the disk, a sleep, the network or nothing to do —
//!   [`threads`]), the USE method per resource (utilisation, saturation, errors: CPUs, one
//!   thread, a lock, the disk, the accept queue, a broker's queue), Little's law wherever
//!   a backlog is measured, then the runtimes' own refinements (garbage collection,
//!   busy-waits, memory churn) by the categories every page shows
//!   ([`kiln_model::categories`]).
//! * **Each rule its own unit** ([`rules`]), like JDK Mission Control's automated
//!   analysis: it reads the [`Facts`] of a run, returns findings with their evidence, the
//!   share of the outcome they explain and the command that checks them, and is tested
//!   alone.
//! * **A finding its own evidence contradicts is a bug.** Each rule checks the conditions
//!   that would make it false before it speaks: no flag advice the command line already
//!   has, no "limited by the client" while the target's threads were busy, no "short of
//!   CPU" while they were blocked.
//! * **One engine for every reader.** `kiln run`, `kiln runs show`, the run report and
//!   `kiln compare` render the same [`Finding`]s; none keeps an analysis of its own.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod facts;
pub mod profile;
pub mod rules;
pub mod text;
pub mod threads;
pub mod waits;

pub use facts::Facts;
use serde::Serialize;

/// The kinds of cause a finding names: what a performance engineer calls them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Class {
    /// The server used every CPU it had on its own work.
    CpuBound,
    /// One thread ran a whole CPU while other CPUs were free: its work is serialised.
    OneThreadSaturated,
    /// The server's threads were runnable and waited for a CPU: others (or a quota) had it.
    CpuStarvation,
    /// Threads waited for a lock (a mutex, a monitor, the GIL).
    LockContention,
    /// Threads waited for the disk.
    DiskIo,
    /// The server was idle while the latency was high: the time is outside it.
    NetworkWait,
    /// The runtime's garbage collector took a large share of the CPU.
    GarbageCollection,
    /// Memory taken from and given back to the kernel over and over (page faults, mmap).
    MemoryChurn,
    /// A queue grew: the work arrived faster than it was done.
    QueueGrowing,
    /// Connections waited in the server's accept queue.
    AcceptBacklog,
    /// The server held as many files open as it may (`ulimit -n`): accepts fail.
    OpenFilesLimit,
    /// Each operation paid for a new connection: the server closed them after each answer.
    ConnectionChurn,
    /// Threads waited for programs they started (child processes) to finish.
    ChildProcesses,
    /// Threads blocked in the work's path in a wait of no kind kiln names.
    BlockedOther,
    /// Threads spun on a CPU waiting for something.
    BusyWait,
    /// The load generator, not the server, was the limit.
    ClientLimited,
    /// The server held the load back (a broker's flow control: a resource alarm).
    HeldBack,
    /// A sleep in the path of the work.
    SleepInPath,
    /// Operations failed.
    Errors,
    /// Messages sent were never delivered (a broker's queue limit dropped them).
    MessagesLost,
    /// Memory grew through the run.
    MemoryGrowth,
    /// The server's cgroup's memory limit kept its file cache too small: what it reads was
    /// evicted and read from the disk again.
    MemoryLimit,
    /// Where a sweep's outcome broke.
    Knee,
}

impl Class {
    /// The class as a title: `Lock contention`.
    pub fn title(self) -> &'static str {
        match self {
            Class::CpuBound => "CPU-bound",
            Class::OneThreadSaturated => "One thread saturated",
            Class::CpuStarvation => "CPU starvation",
            Class::LockContention => "Lock contention",
            Class::DiskIo => "Disk I/O",
            Class::NetworkWait => "Waiting outside the server",
            Class::GarbageCollection => "Garbage collection",
            Class::MemoryChurn => "Memory churn",
            Class::QueueGrowing => "Queue growing",
            Class::AcceptBacklog => "Accept backlog",
            Class::OpenFilesLimit => "At its open-files limit",
            Class::ConnectionChurn => "A new connection per request",
            Class::ChildProcesses => "Waiting for child processes",
            Class::BlockedOther => "Blocked in the kernel",
            Class::BusyWait => "Busy-wait",
            Class::ClientLimited => "Limited by the client",
            Class::HeldBack => "Held back by the server",
            Class::SleepInPath => "Sleep in the request path",
            Class::Errors => "Errors",
            Class::MessagesLost => "Messages lost",
            Class::MemoryGrowth => "Memory growth",
            Class::MemoryLimit => "Memory limit",
            Class::Knee => "Knee",
        }
    }

    /// The class's stable name (`lock-contention`), as the JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Class::CpuBound => "cpu-bound",
            Class::OneThreadSaturated => "one-thread-saturated",
            Class::CpuStarvation => "cpu-starvation",
            Class::LockContention => "lock-contention",
            Class::DiskIo => "disk-io",
            Class::NetworkWait => "network-wait",
            Class::GarbageCollection => "garbage-collection",
            Class::MemoryChurn => "memory-churn",
            Class::QueueGrowing => "queue-growing",
            Class::AcceptBacklog => "accept-backlog",
            Class::OpenFilesLimit => "open-files-limit",
            Class::ConnectionChurn => "connection-churn",
            Class::ChildProcesses => "child-processes",
            Class::BlockedOther => "blocked-other",
            Class::BusyWait => "busy-wait",
            Class::ClientLimited => "client-limited",
            Class::HeldBack => "held-back",
            Class::SleepInPath => "sleep-in-path",
            Class::Errors => "errors",
            Class::MessagesLost => "messages-lost",
            Class::MemoryGrowth => "memory-growth",
            Class::MemoryLimit => "memory-limit",
            Class::Knee => "knee",
        }
    }
}

/// One figure a finding rests on: what it is, its value, where kiln read it and over
/// which seconds (from the measurement's start).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// What the figure is (`blocked on a lock`).
    pub what: String,
    /// Its value in words (`23.4 s of 30.0 s`).
    pub value: String,
    /// Where it was read (`off-CPU profile (eBPF sched_switch)`, `/proc/PID/task/*/schedstat`).
    pub source: String,
    /// Its seconds, from the measurement's start.
    pub from_s: f64,
    /// ... to.
    pub to_s: f64,
    /// The series (`table/column`) that shows it, for a page to point at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// The profile (event name) that shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The function to focus on in that profile's flame graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

/// How much of the outcome a finding explains.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explains {
    /// Percent.
    pub pct: f64,
    /// Of what: `request time`, `the server's CPU`, `the threads' time`.
    pub of: String,
}

/// A claim about a run: its class, one sentence, the figures it rests on, how much of
/// the outcome it explains and the command that checks it independently.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The rule that made it (a stable id).
    pub rule: &'static str,
    /// The kind of cause.
    pub class: Class,
    /// The class in words.
    pub title: &'static str,
    /// The claim, one sentence.
    pub claim: String,
    /// How much of the outcome it explains.
    pub explains: Option<Explains>,
    /// The figures it rests on.
    pub evidence: Vec<Evidence>,
    /// A command that checks it without kiln.
    pub check: String,
    /// Its rank: the larger, the more of the outcome it explains (0 to 1).
    pub score: f64,
    /// A cause outside the server (others holding the CPUs): it ranks below the server's
    /// own causes that explain more of the same outcome, whatever its score.
    #[serde(skip)]
    pub outside: bool,
}

impl Finding {
    /// A finding of `class` by `rule`, claiming `claim`, ranked `score`.
    pub fn new(rule: &'static str, class: Class, score: f64, claim: impl Into<String>) -> Self {
        Finding {
            rule,
            class,
            title: class.title(),
            claim: claim.into(),
            explains: None,
            evidence: Vec::new(),
            check: String::new(),
            score: score.clamp(0.0, 1.0),
            outside: false,
        }
    }

    /// With how much of the outcome it explains.
    pub fn explains(mut self, pct: f64, of: impl Into<String>) -> Self {
        self.explains = Some(Explains {
            pct: pct.clamp(0.0, 100.0),
            of: of.into(),
        });
        self
    }

    /// With one more figure.
    pub fn evidence(mut self, e: Evidence) -> Self {
        self.evidence.push(e);
        self
    }

    /// With the command that checks it.
    pub fn check(mut self, cmd: impl Into<String>) -> Self {
        self.check = cmd.into();
        self
    }
}

/// A run's findings, the most important first, and what the run could not tell.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Findings {
    /// The findings, by score.
    pub findings: Vec<Finding>,
    /// What was missing to tell more (`record -e offcpu to name what blocked threads waited for`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
}

/// Findings scoring less than this are left out: they explain too little to name.
pub const MIN_SCORE: f64 = 0.1;

/// The findings of `run` over its measurement window (or over `w`, a window of it).
pub fn analyse(run: &kiln_store::RunData, w: Option<&kiln_store::Window>) -> Findings {
    let facts = Facts::of(run, w);
    rules::run_all(&facts)
}
