//! What a stored run is: metadata, per-second series, latency histograms, profiles and
//! attachments. Every field that can be absent is optional, so that runs written by
//! older kilns (and runs of loads that measure no latency, such as an external command)
//! read back.
use kiln_model::Profile;
use serde::{Deserialize, Serialize};

/// A run's identity in its store.
pub type RunId = i64;

/// Whether a run measured what it was asked to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    /// The measurement window ran to its end.
    pub complete: bool,
    /// Why not (target exited, load failed, interrupted by SIGINT...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The process a run profiled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Process ids.
    pub pids: Vec<u32>,
    /// The first process's name (`comm`).
    #[serde(default)]
    pub comm: String,
    /// Its executable (`/proc/PID/exe`).
    #[serde(default)]
    pub exe: String,
    /// The executable's GNU build id, hex; empty when it has none.
    #[serde(default)]
    pub build_id: String,
    /// Its command line.
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// How many CPUs it may run on (`Cpus_allowed_list` of `/proc/PID/status`: its
    /// affinity and cpuset); absent when unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_allowed: Option<u32>,
    /// Its runtimes' settings from its environment (`GOMAXPROCS=1`,
    /// `JAVA_TOOL_OPTIONS=…`): only the variables of [`RUNTIME_ENV`], never the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// How many files it may hold open (the soft `Max open files` of `/proc/PID/limits`,
    /// `ulimit -n`); absent when unlimited or unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files_limit: Option<u64>,
    /// The services it was connected to as a client when the measurement ended (its
    /// established TCP connections from a port it does not listen on), by address, the
    /// most connections first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<Peer>,
}

/// A service the target held connections to, as a client.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Peer {
    /// Its address, `127.0.0.1:5432` or `[::1]:8080`.
    pub address: String,
    /// The target's connections to it.
    pub connections: u32,
    /// The process listening there, when it is on this host: `postgres (pid 812)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
}

/// The environment variables kiln keeps of a target: the runtimes' own settings of
/// parallelism, memory and flags (an environment holds secrets too: nothing else is read).
pub const RUNTIME_ENV: &[&str] = &[
    "GOMAXPROCS",
    "GOGC",
    "GOMEMLIMIT",
    "GODEBUG",
    "UV_THREADPOOL_SIZE",
    "NODE_OPTIONS",
    "ERL_FLAGS",
    "ERL_AFLAGS",
    "ERL_ZFLAGS",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "OMP_NUM_THREADS",
    "MALLOC_ARENA_MAX",
    "PYTHONMALLOC",
];

/// The load a run drove.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    /// `amqp`, `mqtt`, `http`, or `exec` for an external command.
    pub protocol: String,
    /// Its arguments as given (`-x 1 -y 1 -r 20000`, or the command line).
    pub argv: Vec<String>,
    /// What one operation is: `msg`, `req`, `conn`; empty when unknown (external commands).
    #[serde(default)]
    pub unit: String,
    /// The series column counting completed operations (`received`, `answered`,
    /// `connected`), per second; empty when the load counts none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub completed: String,
    /// The load's own options and summary, as it reports them.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub report: serde_json::Value,
    /// The rate the load was set to, operations per second in all (`-r` × producers,
    /// `-R`); absent for an open-ended load, a varying rate or a sweep (each step's rate
    /// is its window's value). A setting, which `kiln compare` reports as held or not,
    /// never as better or worse. Absent in runs stored before kiln kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// How many producers, connections or clients drive the load (a setting); absent when
    /// a sweep varies it. Absent in runs stored before kiln kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<f64>,
}

/// The load as a command line would give it: its protocol and its arguments
/// (`amqp -x 1 -y 1 -r 20000`, `exec wrk -t2 …`). Untrusted text: escape it before a
/// terminal or a page shows it.
impl std::fmt::Display for LoadInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.protocol)?;
        for a in &self.argv {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// A span of a run on the CLOCK_MONOTONIC clock of the machine it ran on (ns), the clock
/// of profile samples and series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// A name (`measure`, a sweep step such as `48` or `20000`).
    pub name: String,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
}

impl Window {
    /// Length in seconds.
    pub fn seconds(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    /// Whether `t_ns` lies in the window (start included, end excluded).
    pub fn contains(&self, t_ns: u64) -> bool {
        t_ns >= self.start_ns && t_ns < self.end_ns
    }
}

/// The figures a run is listed and compared by, over its measurement window. Absent
/// where the run could not measure them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// Operations completed per second (messages received, requests answered...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// Operations per second sent (messages published; equal to throughput for requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_rate: Option<f64>,
    /// Operations counted in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<u64>,
    /// A fleet of connections (MQTT `conn`: operations are connections): how many the load
    /// held open at the end of the window. Such a run has no throughput: connecting is not
    /// its work, holding is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// What the latency figures measure (`consumer`, `consumer (intended)`, `request`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    /// Latency median, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    /// 99th percentile, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    /// 99.9th percentile, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    /// Maximum, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    /// Target CPU (user + system) in the window, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_s: Option<f64>,
    /// Its user part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_user_s: Option<f64>,
    /// Its system part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_system_s: Option<f64>,
    /// Target CPU per operation, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_op_us: Option<f64>,
    /// Largest RSS of the target, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_max_bytes: Option<u64>,
    /// Context switches (voluntary + involuntary) of the target in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches: Option<u64>,
    /// Context switches per operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switches_per_op: Option<f64>,
    /// kiln's own CPU in the window (load, recorder, sampling), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kiln_cpu_s: Option<f64>,
    /// CPU the kernel spent in kiln's eBPF programs (stack walks of samples, off-CPU
    /// blocks) over the recording, seconds: outside kiln's process, on the recorded
    /// threads' time. Added in 0.2 (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kiln_bpf_cpu_s: Option<f64>,
    /// CPU of an external load command (and its children) in the window, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_cpu_s: Option<f64>,
    /// Busy share of the whole machine in the window, percent of all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_busy_pct: Option<f64>,
    /// The deepest the queues the load fed were in the window, messages ready, as the broker
    /// answered kiln once a second (AMQP named queues). Added in 0.3 (absent in older runs
    /// and where no queue was watched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth_max: Option<f64>,
    /// What the BEAM's schedulers did, by the states of its microstate accounting, from the
    /// CPU samples of a `beam.smp` target. Added in 0.3 (absent in older runs and for other
    /// targets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beam: Option<SchedulerStates>,
}

/// The BEAM's normal schedulers' time by state (msacc's names), from CPU samples (and,
/// with [`SchedulerStates::runnable_pct`], their off-CPU time): each a percentage of
/// their time outside `sleep` (what msacc counts as awake), and `sleep_pct` the share of
/// all their time spent sleeping (from CPU samples alone: going to sleep and waking).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedulerStates {
    /// Erlang code, BIFs and NIFs (`emulator`).
    pub emulator_pct: f64,
    /// Port tasks and drivers (`port`).
    pub port_pct: f64,
    /// Garbage collection (`gc`).
    pub gc_pct: f64,
    /// Polling for I/O (`check_io`).
    pub check_io_pct: f64,
    /// Auxiliary work (`aux`).
    pub aux_pct: f64,
    /// Scheduling and the busy-wait before sleeping (`other`).
    pub other_pct: f64,
    /// Going to sleep and waking, % of all the schedulers' CPU.
    pub sleep_pct: f64,
    /// CPU samples of the schedulers these come from.
    pub samples: u64,
    /// When the recording had the `offcpu` and `runnable` events: the shares above are of
    /// the schedulers' wall time (on CPU, waiting for a CPU, blocked), as msacc counts
    /// it, `sleep_pct` of all of it; and this is the share of their awake time they
    /// waited for a CPU (preempted, or yielded in the busy-wait). `None`: the shares are
    /// of their CPU. Added in 0.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_pct: Option<f64>,
}

impl SchedulerStates {
    /// What the BEAM's schedulers did by state ([`kiln_model::beam`]), from the first CPU
    /// profile of `profiles` that has scheduler threads. With the `offcpu` and `runnable`
    /// profiles of the same recording the shares are of the schedulers' wall time, as the
    /// BEAM's microstate accounting counts it: on CPU, waiting for a CPU (preempted, or
    /// yielded in the busy-wait) and blocked, each in the state its stack names.
    pub fn of_profiles(profiles: &[kiln_model::Profile]) -> Option<SchedulerStates> {
        let src = StateSources::of(profiles)?;
        src.states(&src.sums(|_| true))
    }
}

/// The profiles the BEAM's scheduler states are read from ([`SchedulerStates::of_profiles`]):
/// the first CPU profile with a scheduler's sample, and the `offcpu` and `runnable`
/// profiles of the same recording (both, or neither), each with the ns one unit of its
/// weight stands for.
#[derive(Clone, Copy, Debug)]
pub struct StateSources<'a> {
    cpu: (&'a kiln_model::Profile, f64),
    wall: Option<[(&'a kiln_model::Profile, Option<f64>); 2]>,
}

/// The schedulers' weight by state (in the order of [`kiln_model::beam::BeamState::ALL`])
/// in the CPU, off-CPU and runnable profiles of some of their samples: integers, so that
/// sums over seconds add up to the sum over their window in any order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateSums {
    /// CPU samples' weight by state.
    pub cpu: [u128; 7],
    /// Off-CPU weight by the state the scheduler was blocked in.
    pub blocked: [u128; 7],
    /// Runnable weight by state.
    pub runnable: [u128; 7],
}

impl StateSums {
    /// Adds `o` to `self`.
    pub fn add(&mut self, o: &StateSums) {
        for k in 0..7 {
            self.cpu[k] += o.cpu[k];
            self.blocked[k] += o.blocked[k];
            self.runnable[k] += o.runnable[k];
        }
    }

    /// `self` minus `o`, `o` a part of `self` (an earlier prefix sum).
    pub fn minus(&self, o: &StateSums) -> StateSums {
        let mut d = *self;
        for k in 0..7 {
            d.cpu[k] -= o.cpu[k].min(d.cpu[k]);
            d.blocked[k] -= o.blocked[k].min(d.blocked[k]);
            d.runnable[k] -= o.runnable[k].min(d.runnable[k]);
        }
        d
    }
}

impl<'a> StateSources<'a> {
    /// The sources among `profiles`; `None` when no CPU profile has a scheduler's sample.
    pub fn of(profiles: &'a [kiln_model::Profile]) -> Option<StateSources<'a>> {
        let cpu = profiles
            .iter()
            .filter(|p| p.event.is_clock())
            .find_map(|p| {
                let per = p.event.ns_per_weight()?;
                kiln_model::beam::scheduler_states(p)?;
                Some((p, per))
            })?;
        let named = |n: &str| profiles.iter().find(|p| p.event.name == n);
        let wall = match (named("offcpu"), named("runnable")) {
            (Some(o), Some(r)) => {
                Some([(o, o.event.ns_per_weight()), (r, r.event.ns_per_weight())])
            }
            _ => None,
        };
        Some(StateSources { cpu, wall })
    }

    /// The ns one unit of weight stands for: in the CPU profile, and in the off-CPU and
    /// runnable ones when the recording had both (`None`: the shares are of CPU time); and
    /// the CPU profile's sampling period, ns. What [`StateSources::states`] multiplies the
    /// weights by.
    pub fn scales(&self) -> (f64, Option<[f64; 2]>, f64) {
        let wall = self
            .wall
            .map(|[o, r]| [o.1.unwrap_or(0.0), r.1.unwrap_or(0.0)]);
        let period = self.cpu.0.event.sample_period_ns.unwrap_or(1).max(1) as f64;
        (self.cpu.1, wall, period)
    }

    /// Every scheduler sample's weight by state, with its time (an off-CPU or runnable
    /// block's: when it began): `f(time, that one sample's sums)`.
    pub fn each(&self, mut f: impl FnMut(u64, &StateSums)) {
        let mut parts = vec![(self.cpu.0, 0usize)];
        if let Some([o, r]) = &self.wall {
            parts.extend([(o.0, 1), (r.0, 2)]);
        }
        for (p, n) in parts {
            let states = kiln_model::beam::sample_states(p, n == 1);
            for (i, s) in states.into_iter().enumerate() {
                let Some(s) = s else { continue };
                let k = kiln_model::beam::BeamState::ALL
                    .iter()
                    .position(|&x| x == s)
                    .unwrap_or(0);
                let mut one = StateSums::default();
                let w = p.samples.weight[i] as u128;
                match n {
                    0 => one.cpu[k] = w,
                    1 => one.blocked[k] = w,
                    _ => one.runnable[k] = w,
                }
                f(p.samples.time[i], &one);
            }
        }
    }

    /// The weights by state of the scheduler samples whose time `keep` holds.
    pub fn sums(&self, keep: impl Fn(u64) -> bool) -> StateSums {
        let mut out = StateSums::default();
        self.each(|t, one| {
            if keep(t) {
                out.add(one);
            }
        });
        out
    }

    /// The states of the samples summed in `s`; `None` when they hold no scheduler time.
    pub fn states(&self, s: &StateSums) -> Option<SchedulerStates> {
        use kiln_model::beam::BeamState;
        let at = |x: BeamState| BeamState::ALL.iter().position(|&y| y == x).unwrap_or(0);
        // Scheduler time by state, in ns.
        let ns = |w: &[u128; 7], per: Option<f64>| -> [f64; 7] {
            let per = per.unwrap_or(0.0);
            w.map(|x| x as f64 * per)
        };
        let cpu = ns(&s.cpu, Some(self.cpu.1));
        let (blocked, runnable) = match &self.wall {
            // Blocked time in the state msacc counts it in (a blocking poll is sleep; a
            // stack that names no state, asleep).
            Some([o, r]) => (ns(&s.blocked, o.1), Some(ns(&s.runnable, r.1))),
            None => ([0.0; 7], None),
        };
        let mut w = cpu;
        for (i, x) in w.iter_mut().enumerate() {
            *x += blocked[i] + runnable.map_or(0.0, |r| r[i]);
        }
        let all: f64 = w.iter().sum();
        let sleep = w[at(BeamState::Sleep)];
        let awake = all - sleep;
        if all <= 0.0 {
            return None;
        }
        let pct = |x: f64| if awake > 0.0 { x * 100.0 / awake } else { 0.0 };
        let period = self.cpu.0.event.sample_period_ns.unwrap_or(1).max(1) as f64;
        Some(SchedulerStates {
            emulator_pct: pct(w[at(BeamState::Emulator)]),
            port_pct: pct(w[at(BeamState::Port)]),
            gc_pct: pct(w[at(BeamState::Gc)]),
            check_io_pct: pct(w[at(BeamState::CheckIo)]),
            aux_pct: pct(w[at(BeamState::Aux)]),
            other_pct: pct(w[at(BeamState::Other)]),
            sleep_pct: sleep * 100.0 / all,
            samples: (cpu.iter().sum::<f64>() / period).round() as u64,
            runnable_pct: runnable.map(|r| pct(r.iter().sum::<f64>() - r[at(BeamState::Sleep)])),
        })
    }
}

/// Per-second values sharing one time column (uPlot's columnar layout): `time_ns[i]` is
/// the end of the i-th interval on the run's CLOCK_MONOTONIC clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesTable {
    /// `load`, `target`, `machine`, `kiln`.
    pub name: String,
    /// End of each interval, ns.
    pub time_ns: Vec<u64>,
    /// The columns, each as long as `time_ns`.
    pub columns: Vec<Column>,
}

impl SeriesTable {
    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// One series of a [`SeriesTable`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Name (`sent/s`, `p99`, `cpu user %:scheduler`).
    pub name: String,
    /// Unit: `msg/s`, `req/s`, `us`, `%`, `bytes`, `1/s`, `count`, `bool`.
    pub unit: String,
    /// Values; `None` where nothing was measured (no latency in a second without
    /// messages).
    pub values: Vec<Option<f64>>,
}

/// A latency histogram (HdrHistogram, V2 deflate serialisation: mergeable, so repeated
/// runs and windows combine exactly).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredHistogram {
    /// What it measures (`consumer`, `consumer (intended)`, `confirm`, `request`).
    pub name: String,
    /// The window it covers (`measure`, or a sweep step's name), or [`PER_SECOND`].
    pub window: String,
    /// Unit of recorded values (`us`).
    pub unit: String,
    /// The serialised histogram; for [`PER_SECOND`], an interval log.
    pub data: Vec<u8>,
}

/// The window name of a latency's per-second histograms: `data` is then an HdrHistogram
/// interval log (the text `HistogramLogWriter` writes and any HdrHistogram tool reads), one
/// line per row of the `load` series in its order, empty seconds included; timestamps are
/// CLOCK_MONOTONIC seconds. Any window's exact percentiles are the merge of its seconds
/// (the report's figures follow a selected window this way). Runs stored before this
/// existed have none.
pub const PER_SECOND: &str = "per-second";

/// How the names of a run's profiles fetched from the target itself begin (`pprof cpu`,
/// `pprof mutex delay`, kept by `kiln run --pprof`): the report marks them by it as the
/// target's own.
pub const PPROF_EVENT_PREFIX: &str = "pprof ";

/// The event of a Go target's goroutine waits, traced at each park (kiln-record's
/// `goparks`): nanoseconds parked by the stack where each goroutine parked.
pub const GOROUTINE_WAITS_EVENT: &str = "goroutine waits";

/// The attachment in which `kiln run` keeps what its thread dumps of a JVM target showed
/// (JSON, a [`JvmDumps`]): who waited on which monitor, in which method, held by whom.
pub const JVM_DUMPS_ATTACHMENT: &str = "jvm-thread-dumps.json";

/// What the thread dumps `kiln run` took of a JVM target over the measurement showed
/// (HotSpot's attach protocol, the `threaddump` command `jstack` sends). A dump names the
/// Java method a thread waits in even where the JIT inlined it into its caller, which a
/// profile's compiled frames cannot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JvmDumps {
    /// The JVM's process id.
    pub pid: u32,
    /// How many dumps kiln asked for.
    pub asked: u32,
    /// The dumps the JVM answered, in order.
    pub dumps: Vec<JvmDump>,
    /// Why the others are missing, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// One thread dump's summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JvmDump {
    /// When the dump arrived, CLOCK_MONOTONIC ns (the run's clock).
    pub at_ns: u64,
    /// How long the JVM took to answer, ms (its threads stop at a safepoint meanwhile).
    pub took_ms: f64,
    /// The Java threads dumped, by their name with each run of digits as `N`
    /// (`pool-N-thread-N`): how many.
    pub groups: Vec<(String, u32)>,
    /// The threads BLOCKED waiting to enter a monitor.
    pub blocked: Vec<MonitorWait>,
    /// Lines of the dump's threads kiln did not understand (not dropped silently).
    #[serde(default)]
    pub unparsed: u32,
}

/// A thread BLOCKED waiting to enter a monitor, or parked waiting for a
/// `java.util.concurrent` lock (`parked`), as a dump shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorWait {
    /// The thread's name.
    pub thread: String,
    /// Its name with each run of digits as `N`.
    pub group: String,
    /// The Java method waiting to lock (`pkg.Ledger.post`): the frame above the dump's
    /// `- waiting to lock` line.
    pub method: String,
    /// The monitor's object: its address (`0x000000069cc14e50`).
    pub address: String,
    /// ... and its class (`pkg.Ledger`).
    pub class: String,
    /// The thread that held the monitor, when the dump shows one (`- locked` at the same
    /// address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// The holder's method that locked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_method: Option<String>,
    /// Parked waiting for a `java.util.concurrent` lock (`ReentrantLock`: WAITING
    /// (parking), the lock's class in `class`, the program's method that took it in
    /// `method`), not BLOCKED on a monitor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parked: bool,
}

/// A file kept with a run: an external load's stdout and stderr, for instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// Name (`load.stdout`).
    pub name: String,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// How a host's CLOCK_MONOTONIC relates to the controlling host's, measured over the SSH
/// channel with NTP-style round trips at the start and the end of the run: its times are
/// placed on the controlling host's clock by subtracting the offset (interpolated between
/// the two measurements: the drift).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// The host's clock minus the controlling host's at the start, ns.
    pub offset_ns: i64,
    /// The same at the end (absent when the host was lost before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_offset_ns: Option<i64>,
    /// How far the offsets may be wrong, ns: half the round trip of the best exchange,
    /// the larger of the two measurements.
    pub uncertainty_ns: u64,
    /// The drift between the two measurements, parts per million.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<f64>,
    /// Round trips measured (start and end).
    #[serde(default)]
    pub exchanges: u32,
}

/// Another host a run used: a load agent, a recorded node, or both. Added in 0.2 (absent in
/// older runs and in runs on one host).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The name the run gives the host (the host part of its destination, or its label):
    /// the `host` label of its samples and the suffix of its series (`load@NAME`).
    pub name: String,
    /// How it was reached: `ssh://[user@]host[:port]`.
    pub destination: String,
    /// What it did: `load`, `target`.
    pub roles: Vec<String>,
    /// Its own host name (`uname -n`), kernel and CPUs, as its agent reported them.
    #[serde(default)]
    pub hostname: String,
    /// Kernel release.
    #[serde(default)]
    pub kernel: String,
    /// CPUs online.
    #[serde(default)]
    pub cpus: u32,
    /// The processes recorded there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
    /// Its clock against the controlling host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockOffset>,
    /// Why the host failed (its agent could not start, died, or lost its connection); the
    /// other hosts went on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// Everything about a run except its bulk data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Id in the store it was read from; `None` before it is saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RunId>,
    /// `--name`.
    pub name: String,
    /// Runs of one `--repeat` share a group; a run alone is its own group.
    pub group: String,
    /// Position in its group (1-based) and the group's size.
    #[serde(default)]
    pub repeat: (u32, u32),
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// Complete, or why not.
    pub status: RunStatus,
    /// kiln's command line.
    pub command_line: Vec<String>,
    /// `--note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `--tag k=v`.
    #[serde(default)]
    pub tags: Vec<(String, String)>,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// CPUs online.
    pub cpus: u32,
    /// kiln's version.
    pub kiln_version: String,
    /// The profiled process.
    pub target: TargetInfo,
    /// The load.
    pub load: LoadInfo,
    /// Recorded events (`cpu-clock`, `offcpu`...).
    pub events: Vec<String>,
    /// Sampling frequency of the cpu event, Hz.
    #[serde(default)]
    pub frequency: u32,
    /// The measurement window.
    pub measure: Window,
    /// Further windows: the steps of a sweep.
    #[serde(default)]
    pub windows: Vec<Window>,
    /// Headline figures over the measurement window.
    pub headline: Headline,
    /// What the reader must know (lost samples, a saturated client...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The other hosts the run used (load agents, recorded nodes), with their clocks. Added
    /// in 0.2: empty for a run on one host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostInfo>,
    /// The experiment of interleaved variants the run belongs to (`kiln run --variant`):
    /// one id shared by every variant's runs of one command. Added in 0.3: `None` for a
    /// run outside an experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// The round of its experiment (1-based): the runs of one round, one per variant, ran
    /// back to back. Added in 0.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The commands run around it (a variant's set-up, `--after-each`) and how they
    /// ended; their output is in the attachments `setup.stdout`, `setup.stderr`,
    /// `after-each.stdout`, `after-each.stderr`. Added in 0.3.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandRecord>,
}

/// A command run around a run, through `sh -c`, and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// `setup` or `after-each`.
    pub role: String,
    /// The command.
    pub command: String,
    /// Its exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Why kiln ended it, when kiln did (`stopped on SIGTERM`, `ran past --setup-timeout
    /// 600 s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// What was not kept of its output (`stdout: 1181116006 bytes written; …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A whole run.
#[derive(Clone, Debug, Default)]
pub struct RunData {
    /// Metadata and headline figures.
    pub meta: RunMeta,
    /// Per-second series.
    pub series: Vec<SeriesTable>,
    /// Latency histograms.
    pub histograms: Vec<StoredHistogram>,
    /// One profile per recorded event.
    pub profiles: Vec<Profile>,
    /// Files kept with the run.
    pub attachments: Vec<Attachment>,
}
