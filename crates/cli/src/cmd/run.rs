//! `kiln run`: drive a load, profile the target under it, keep the run.
use super::load::LoadCommand;
use super::store::StoreArgs;
use anyhow::{bail, Context, Result};
use kiln_model::text;
use kiln_os::stop::Stop;
use kiln_record::{EventSpec, UnwindMode};
use kiln_run::remote::{HostSpec, RemoteOptions};
use kiln_run::{Phase, Progress, RunOptions, Workload};
use kiln_store::{RunData, Saved};
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Drive a load against a server and profile the server under it, on one clock; every run
/// is stored (kiln runs) and can be compared (kiln compare).
///
/// The load is a kiln load protocol with its own flags (`load amqp -x 1 -y 1 -r 20000`) or
/// any command after `exec --` (its output is kept with the run). After --warmup seconds
/// the target is recorded for -d seconds while the load runs (the measurement window);
/// then the load is stopped unless it ended first. The target's CPU per thread group,
/// memory, context switches, threads and files, and the machine's CPU, are sampled every
/// second. A run cut short (the target exits, the load fails, Ctrl-C) is still stored,
/// marked incomplete with the reason.
///
/// A run its store cannot take (a PostgreSQL server away through 10 s of retries, a full
/// disk, a file size limit, a store made read-only) is kept in ./kiln-unsaved-runs.db (else
/// $TMPDIR/kiln-unsaved-runs.db); kiln says how to push it (kiln runs import) and exits 1.
///
/// Examples:
///   kiln run --name before -p "$(pgrep -o beam.smp)" -e cpu,offcpu -d 30 --warmup 5 load amqp -x 1 -y 1 -r 20000
///   kiln run --name wrk-48 -p "$(pgrep -x myserver)" -d 30 exec -- wrk -c 48 -d 40 http://127.0.0.1:8080/q
///   kiln run --name aa --repeat 5 -p 4242 -d 10 load amqp -x 1 -y 1 -r 5000
///   kiln run --variant before='rabbitmqctl trace_off' --variant after='rabbitmqctl trace_on' --repeat 6 -p "$(pgrep -o beam.smp)" -d 5 --warmup 2 load amqp -r 25000
///   kiln run --name fleet -p "$(pgrep -x mosquitto)" -d 30 --otlp-endpoint http://127.0.0.1:4318 load mqtt conn -c 15000 -i 0
///   kiln run --name go -p "$(pgrep -x myserver)" -e cpu,offcpu -d 30 --pprof http://127.0.0.1:6060/debug/pprof/ load http -c 48 -d 60s http://127.0.0.1:8080/q
#[derive(Debug, clap::Args)]
#[command(subcommand_value_name = "LOAD", subcommand_help_heading = "Loads")]
pub struct Args {
    /// Name of the run (runs of one name are compared as a group: kiln compare before after).
    /// 1 to 128 characters, no control characters, not a number and not starting with #,
    /// id: or name: (those name runs by id: kiln runs rm 12, #12, id:12).
    #[arg(short, long, default_value = "run")]
    pub name: String,

    /// The process(es) to profile (the server under load). Comma-separated or repeated.
    /// A local process's workers come with it: its descendants that run its own program
    /// (nginx's, PostgreSQL's, a pre-forking server's) and live past their first second
    /// (kiln waits that long for young ones), as kiln says on stderr. HOST:PID records a process on another host, through kiln's agent there (started
    /// over ssh, as for --agent), with the same events: HOST is a --host or --agent name,
    /// or an ssh destination ([user@]host, ssh's own config applies). Every sample is
    /// labelled with its host (host=NAME: kiln flamegraph --focus-label host=node1
    /// run:NAME draws one node), and the host's CPU, memory and switches are its own series
    /// (target@NAME). Example: -p rabbit1:4242 -p rabbit2:4311
    #[arg(
        short,
        long,
        value_name = "[HOST:]PID[,...]",
        value_delimiter = ',',
        required_unless_present = "variant_pid"
    )]
    pub pid: Vec<String>,

    /// Run the load from another host too (repeatable): an ssh destination,
    /// ssh://[user@]host[:port] or [user@]host (IPv6 in brackets: ssh://[::1]:22), optionally
    /// named NAME=DESTINATION. kiln starts
    /// itself there over ssh (no daemon, no port: copying this binary to --agent-dir first
    /// when that build is not there) and EACH AGENT RUNS THE LOAD AS GIVEN: N agents drive N
    /// times the load (N x the rate, the connections, the producers), and the run's settings
    /// are the sums. The run's seconds are the exact merge of every agent's (counts added
    /// over the same seconds of one clock, latency histograms merged), and each agent's own
    /// seconds are kept (series load@NAME). An agent that fails is marked in the run and the
    /// others go on; a stop (Ctrl-C, the end of the measurement, kiln or its ssh killed)
    /// stops every agent's load. Kiln's own loads only (load amqp|mqtt|http, not exec or
    /// sweeps). Example: --agent c1=ssh://bench@10.0.0.11 --agent c2=ssh://bench@10.0.0.12
    #[arg(long, value_name = "[NAME=]DESTINATION")]
    pub agent: Vec<String>,

    /// Name a host to record processes on (-p NAME:PID) without running load there:
    /// NAME=DESTINATION (repeatable). Example: --host n1=ssh://root@10.0.0.21:2222 -p n1:4242
    #[arg(long = "host", value_name = "NAME=DESTINATION")]
    pub hosts: Vec<String>,

    /// The ssh command (with its options, split on whitespace) kiln reaches other hosts
    /// with. Default: $KILN_SSH, else 'ssh -o BatchMode=yes'.
    /// Example: --ssh-command 'ssh -i ~/.ssh/bench -o BatchMode=yes'
    #[arg(long, value_name = "COMMAND")]
    pub ssh_command: Option<String>,

    /// Where kiln keeps its own binary on other hosts (~/ is the remote home), as
    /// kiln-BUILD_ID: a host that has this build already runs it as it is.
    #[arg(long, value_name = "DIR", default_value = "~/.cache/kiln")]
    pub agent_dir: String,

    /// How long a host (--agent, --host, -p HOST:PID) may take to start kiln's agent over
    /// ssh and greet, seconds; a copy of kiln to it may go this long without progress. A
    /// host that says nothing in that time (an ssh that hangs, a firewall that drops) is
    /// marked failed and its ssh ended; the others go on.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub connect_timeout: f64,

    /// Events to record, as kiln record's -e: cpu, offcpu, runnable, page-faults, mmap, munmap, brk,
    /// or a tracepoint. Example: -e cpu,offcpu
    #[arg(
        short,
        long,
        value_name = "EVENT[,EVENT...]",
        value_delimiter = ',',
        default_value = "cpu"
    )]
    pub event: Vec<String>,

    /// Sampling frequency of the cpu event, Hz.
    #[arg(short = 'F', long = "freq", value_name = "HZ", default_value_t = 999)]
    pub frequency: u32,

    /// Length of the measurement (recording) window, seconds.
    #[arg(short, long, value_name = "SECONDS", default_value_t = 30.0)]
    pub duration: f64,

    /// Seconds of load before the measurement starts (connections warmed, caches filled);
    /// `fleet` (or `SECONDS,fleet`): for a fleet (load mqtt conn), then until it holds
    /// every connection asked for — or has opened none for 30 s, said in the run. A fleet
    /// still connecting when the measurement begins is said too, with how many it held.
    #[arg(short, long, value_name = "SECONDS|fleet", default_value = "0", value_parser = parse_warmup)]
    pub warmup: Warmup,

    /// Run the same configuration N times (one group: kiln compare uses the repeats to tell
    /// change from noise). 4 or more: groups of 3 can never show a change at p < 0.05 (the
    /// smallest p of 3 runs against 3 is 0.10; 4 against 4 reach 0.029), 5 for 0.01.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,

    /// A variant of an interleaved experiment, NAME=SETUP_COMMAND (two or more; repeatable):
    /// with --repeat N, N rounds of one run per variant, ABBA by default (round r runs the
    /// variants in order when r is odd, reversed when even). Before each of a variant's
    /// runs its set-up command runs through sh -c (its output and exit status are kept with
    /// the run); one that fails stops the experiment, the runs made so far kept. Each
    /// variant's runs are a group under its name (--name does not apply), each run with its
    /// round: kiln compare NAME1 NAME2 compares them round by round (paired, so that a
    /// machine drifting between rounds cancels out). 6 rounds or more (5 can never show
    /// a change at p < 0.05), 8 on a busy machine. Example: --variant before='rabbitmqctl trace_off' --variant
    /// after='rabbitmqctl trace_on' --repeat 6
    #[arg(
        long = "variant",
        value_name = "NAME=SETUP_COMMAND",
        conflicts_with = "name"
    )]
    pub variant: Vec<String>,

    /// A variant's own target, NAME=PID[,PID...] (repeatable): its runs profile these
    /// processes instead of -p (two builds side by side). Local processes only.
    #[arg(
        long = "variant-pid",
        value_name = "NAME=PID[,PID...]",
        requires = "variant"
    )]
    pub variant_pid: Vec<String>,

    /// The order of the variants within a round: abba (in order in odd rounds, reversed in
    /// even ones) or random (a permutation per round, from --seed).
    #[arg(
        long,
        value_enum,
        value_name = "ORDER",
        default_value = "abba",
        requires = "variant"
    )]
    pub order: OrderArg,

    /// The seed of --order random (default: from the clock, printed so the order can be
    /// repeated).
    #[arg(long, value_name = "N", requires = "variant")]
    pub seed: Option<u64>,

    /// A command run through sh -c after each run (each variant's and each repeat's), its
    /// output and exit status kept with the run; one that fails stops the runs after it.
    /// The run is saved before it starts.
    #[arg(long, value_name = "COMMAND")]
    pub after_each: Option<String>,

    /// The longest a --variant set-up or --after-each command may take: past it kiln ends
    /// the command (its whole process group) and it counts as failed. A stop (Ctrl-C,
    /// SIGTERM) ends it at once. Their output is kept with the run, the first and the last
    /// 8 MiB of each stream (the bytes between counted).
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub setup_timeout: f64,

    /// Off-CPU blocks shorter than this many microseconds add no time.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 0)]
    pub min_block: u64,

    /// Where user stacks are unwound (as kiln record --unwind).
    #[arg(long, value_enum, value_name = "WHERE", default_value = "auto")]
    pub unwind: super::record::UnwindArg,

    /// A Go target's net/http/pprof index (comma-separated or repeated): during the
    /// measurement kiln fetches profile?seconds=N (N: -d, rounded up), mutex, block and
    /// heap at the window's start and end, and goroutine at its end; the run keeps what happened in the window
    /// (end minus start for the cumulative ones, as go tool pprof -base) as profiles named
    /// 'pprof cpu', 'pprof mutex delay'… and as .pb.gz attachments (kiln runs attachment).
    /// The summary names where goroutines waited (Go's block and mutex profiles: the lock
    /// and the program's code that took it), which kiln's thread-level off-CPU view cannot
    /// show, and counts the goroutine serving kiln's own requests apart from the program's
    /// waits. A fetch that fails is a warning, not a failed run.
    /// Example: --pprof http://127.0.0.1:6060/debug/pprof/
    #[arg(long, value_name = "URL[,URL...]", value_delimiter = ',')]
    pub pprof: Vec<String>,

    /// How many thread dumps to take of a JVM target, spread over the measurement (through
    /// HotSpot's attach protocol, as jstack does; no JDK needed on kiln's side). Each stops
    /// the JVM's threads at a safepoint for a few milliseconds; the findings name the Java
    /// method a BLOCKED thread waits in, the monitor's class and its holder, even where
    /// the JIT inlined the method. 0 takes none. Example: --jvm-dumps 0
    #[arg(long, value_name = "N", default_value_t = kiln_run::jvm::DUMPS, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub jvm_dumps: u32,

    /// A note kept with the run (what changed).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,

    /// A label kept with the run, KEY=VALUE (repeatable; key and value as names: at most 128
    /// characters, no control characters). Example: --tag sbwt=none
    #[arg(long, value_name = "KEY=VALUE")]
    pub tag: Vec<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// Print the summary as JSON (the stored metadata and headline figures) instead of text.
    #[arg(long)]
    pub json: bool,

    /// Write the run's report (one offline HTML file: figures, series, flame graphs, pick
    /// a window) to FILE; with --repeat, each run's number goes before the extension.
    /// Default: <store's directory>/<name>-<id>.html (the working directory for a
    /// PostgreSQL store).
    #[arg(long, value_name = "FILE", conflicts_with = "no_report")]
    pub report: Option<std::path::PathBuf>,

    /// Write no report (kiln runs report writes one later).
    #[arg(long)]
    pub no_report: bool,

    /// Also send the run's profiles to an OpenTelemetry Collector's OTLP/HTTP receiver once
    /// the run is stored (the profiles signal of opentelemetry-proto v1.8.0, as kiln record
    /// and kiln collapse send it; the Collector takes it with
    /// --feature-gates=service.profilesSupport), so that they go on to a fleet's profile
    /// store. Their resource is this host and the run: the attributes host.name,
    /// kiln.run.id, kiln.run.name, kiln.run.group, kiln.run.repeat, kiln.run.store and
    /// kiln.run.tag.KEY for each --tag. A base URL such as http://127.0.0.1:4318, to which
    /// /v1development/profiles is added, or the profiles endpoint's full URL. If the
    /// collector does not take them, the run stays stored, the request is kept in
    /// ./kiln-unsent-*.otlp.pb and kiln exits 1.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// The load.
    #[command(subcommand)]
    pub load: RunLoad,
}

/// `--order` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum OrderArg {
    /// A B, B A, A B...
    Abba,
    /// A random permutation per round.
    Random,
}

/// What drives the load.
#[derive(Debug, clap::Subcommand)]
pub enum RunLoad {
    /// A kiln load protocol, with its own flags (see kiln load amqp --help).
    #[command(subcommand)]
    Load(Box<LoadCommand>),
    /// Any command, after `--`: wrk, pgbench, ab, PerfTest, a script. It runs in its own
    /// process group and is stopped (SIGINT, then SIGTERM, then SIGKILL) when the measurement
    /// ends. The throughput and latency of a wrk, pgbench (its summary, or with -P its
    /// progress lines), ab or PerfTest summary in its output are read.
    Exec {
        /// The command and its arguments.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<OsString>,
    },
}

/// `--warmup`: seconds, and whether to wait for a fleet to connect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Warmup {
    /// Seconds of load first.
    pub seconds: f64,
    /// Then until the fleet holds every connection asked for.
    pub fleet: bool,
}

fn parse_warmup(s: &str) -> std::result::Result<Warmup, String> {
    let mut w = Warmup {
        seconds: 0.0,
        fleet: false,
    };
    for part in s.split(',') {
        match part.trim() {
            "fleet" => w.fleet = true,
            n => {
                w.seconds = n.parse().map_err(|_| {
                    format!("'{n}': give SECONDS, `fleet`, or SECONDS,fleet (--warmup 5,fleet)")
                })?
            }
        }
    }
    Ok(w)
}

fn seconds(flag: &'static str, v: f64, zero_ok: bool) -> Result<Duration> {
    if !v.is_finite() || v < 0.0 || (!zero_ok && v == 0.0) {
        bail!(
            "{flag} must be a {} number of seconds",
            if zero_ok { "non-negative" } else { "positive" }
        );
    }
    Duration::try_from_secs_f64(v).with_context(|| format!("{flag}: {v} s is too long"))
}

/// The load's part of kiln's command line: the words after `load` or `exec`.
fn load_argv(which: &str) -> Vec<String> {
    let args: Vec<String> = std::env::args().collect();
    let start = args
        .iter()
        .position(|a| a == "run")
        .and_then(|r| {
            args[r + 1..]
                .iter()
                .position(|a| a == which)
                .map(|p| r + 1 + p + 1)
        })
        .unwrap_or(args.len());
    args[start..]
        .iter()
        .filter(|a| *a != "--")
        .cloned()
        .collect()
}

fn make_load(load: RunLoad) -> Result<Box<dyn Workload>> {
    match load {
        RunLoad::Exec { command } => Ok(Box::new(kiln_run::ExecLoad::new(command))),
        RunLoad::Load(cmd) => {
            let (load, output) = super::load::into_load(*cmd)?;
            super::load::preflight(load.as_ref(), "run")?;
            if output.is_some() {
                bail!("under kiln run the load's series are kept in the run store; -o/--output is for kiln load alone");
            }
            let mut argv = load_argv("load");
            if argv.first().map(String::as_str) == Some(load.protocol()) {
                argv.remove(0);
            }
            Ok(Box::new(kiln_run::EngineLoad::new(load, argv)))
        }
    }
}

/// The local pids and the other hosts of `-p`, `--agent` and `--host`.
fn hosts(args: &Args) -> Result<(Vec<u32>, RemoteOptions)> {
    let mut remote = RemoteOptions::default();
    let mut named: Vec<HostSpec> = Vec::new();
    for h in &args.hosts {
        if !h.contains('=') {
            bail!("--host '{h}': expected NAME=DESTINATION");
        }
        named.push(HostSpec::parse(h).map_err(|e| anyhow::anyhow!("--host {e}"))?);
    }
    for a in &args.agent {
        let spec = HostSpec::parse(a).map_err(|e| anyhow::anyhow!("--agent {e}"))?;
        if remote.agents.iter().any(|x| x.name == spec.name) {
            bail!(
                "--agent '{a}': a second agent named '{}' (name them NAME=DESTINATION)",
                spec.name
            );
        }
        remote.agents.push(spec);
    }
    let mut pids = Vec::new();
    for p in &args.pid {
        let p = p.trim();
        let (host, pid) = match p.rsplit_once(':') {
            Some((h, pid)) => (Some(h), pid),
            None => (None, p),
        };
        let pid: u32 = pid
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("-p '{p}': expected PID or HOST:PID"))?;
        match host {
            None => pids.push(pid),
            Some(h) => {
                let spec = match named.iter().chain(&remote.agents).find(|s| s.name == h) {
                    Some(s) => s.clone(),
                    None => HostSpec::parse(h).map_err(|e| anyhow::anyhow!("-p {e}"))?,
                };
                remote.targets.push((spec, pid));
            }
        }
    }
    if let Some(cmd) = args.ssh_command.clone().or_else(|| {
        std::env::var("KILN_SSH")
            .ok()
            .filter(|s| !s.trim().is_empty())
    }) {
        remote.ssh.command = cmd.split_whitespace().map(str::to_string).collect();
    }
    if args.agent_dir.contains(['\'', '\n']) || args.agent_dir.is_empty() {
        bail!(
            "--agent-dir '{}': not a usable directory name",
            args.agent_dir
        );
    }
    remote.ssh.agent_dir = args.agent_dir.clone();
    remote.ssh.connect_timeout = seconds("--connect-timeout", args.connect_timeout, false)?;
    if !remote.agents.is_empty() {
        let argv = load_argv("load");
        if let Some(s) = argv
            .iter()
            .find(|a| a.starts_with("--rate-sweep") || a.starts_with("--concurrency-sweep"))
        {
            bail!("{s} with --agent: a sweep from several hosts is not supported (each agent would step on its own); run the sweep from one host");
        }
        if matches!(args.load, RunLoad::Exec { .. }) {
            bail!("--agent runs kiln's own loads (load amqp|mqtt|http), not exec");
        }
    }
    Ok((pids, remote))
}

pub(super) fn parse_tags(tags: &[String]) -> Result<Vec<(String, String)>> {
    tags.iter()
        .map(|t| {
            let (k, v) = t
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .with_context(|| format!("--tag '{}': expected KEY=VALUE", text::clean(t)))?;
            kiln_store::check_text("tag key", k).map_err(|e| anyhow::anyhow!("--tag: {e}"))?;
            if !v.is_empty() {
                kiln_store::check_text("tag value", v)
                    .map_err(|e| anyhow::anyhow!("--tag: {e}"))?;
            }
            Ok((k.to_string(), v.to_string()))
        })
        .collect()
}

/// Prints progress to stderr: a line rewritten in place on a terminal, a plain line every
/// five seconds (and at each phase change) otherwise.
struct ProgressLine {
    live: bool,
    last_phase: Option<Phase>,
    last_plain: f64,
    width: usize,
}

impl ProgressLine {
    fn new() -> Self {
        ProgressLine {
            live: std::io::stderr().is_terminal(),
            last_phase: None,
            last_plain: -10.0,
            width: 0,
        }
    }

    fn show(&mut self, p: &Progress, label: &str) {
        let phase = match p.phase {
            Phase::Warmup => "warm-up",
            Phase::Measure => "measuring",
            Phase::Finishing => "finishing",
        };
        let mut line = format!("{label}{phase} {:.0} s", p.elapsed_s);
        if p.phase != Phase::Warmup {
            line.push_str(&format!(" (measured {:.0} s)", p.measured_s));
        }
        if let Some(r) = p.rate {
            line.push_str(&format!(", {}", kiln_compare::format_value(r, "/s")));
        }
        if let Some(q) = p.p99_us {
            line.push_str(&format!(", p99 {}", kiln_compare::format_value(q, "us")));
        }
        if let Some(c) = p.target_cpu_pct {
            line.push_str(&format!(", target CPU {c:.0}%"));
        }
        let mut err = std::io::stderr().lock();
        if self.live {
            let pad = self.width.saturating_sub(line.chars().count());
            let _ = write!(err, "\r{line}{}", " ".repeat(pad));
            self.width = line.chars().count();
            let _ = err.flush();
        } else if self.last_phase != Some(p.phase) || p.elapsed_s - self.last_plain >= 5.0 {
            let _ = writeln!(err, "{line}");
            self.last_plain = p.elapsed_s;
        }
        self.last_phase = Some(p.phase);
    }

    fn done(&mut self) {
        if self.live && self.width > 0 {
            let _ = writeln!(std::io::stderr());
            self.width = 0;
        }
    }
}

/// The pass's options from the flags.
fn run_options(args: &Args) -> Result<RunOptions> {
    let events = args
        .event
        .iter()
        .map(|e| EventSpec::parse(e.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let (pids, remote) = hosts(args)?;
    let mut opts = RunOptions::new(&args.name, pids);
    opts.remote = remote;
    opts.events = events;
    opts.frequency = args.frequency;
    opts.duration = seconds("-d/--duration", args.duration, false)?;
    opts.warmup = seconds("--warmup", args.warmup.seconds, true)?;
    opts.warmup_fleet = args.warmup.fleet;
    opts.min_block_us = args.min_block;
    opts.unwind = match args.unwind {
        super::record::UnwindArg::Auto => UnwindMode::Auto,
        super::record::UnwindArg::Kernel => UnwindMode::Kernel,
        super::record::UnwindArg::Copy => UnwindMode::Copy,
    };
    opts.pprof = args
        .pprof
        .iter()
        .map(|u| kiln_run::pprof::normalise_url(u.trim()))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("--pprof {e}"))?;
    opts.jvm_dumps = args.jvm_dumps;
    opts.note = args.note.clone();
    opts.tags = parse_tags(&args.tag)?;
    opts.command_line = std::env::args().collect();
    Ok(opts)
}

/// Adds to `pids` the workers each one forked that still run its program (a master
/// process does little of the work: nginx's, PostgreSQL's), and says so.
fn with_workers(pids: &mut Vec<u32>) {
    let mut added: Vec<(u32, Vec<u32>)> = Vec::new();
    for &p in pids.clone().iter() {
        let new: Vec<u32> = kiln_run::procfs::forked_workers(p)
            .into_iter()
            .filter(|w| !pids.contains(w))
            .collect();
        if !new.is_empty() {
            pids.extend(&new);
            added.push((p, new));
        }
    }
    for (p, w) in added {
        let list: Vec<String> = w.iter().map(u32::to_string).collect();
        eprintln!(
            "kiln: measuring pid {p} with the {} process{} it forked that run{} its program ({}): a master does little of the work",
            w.len(),
            if w.len() == 1 { "" } else { "es" },
            if w.len() == 1 { "s" } else { "" },
            list.join(", ")
        );
    }
}

/// Every target named is running, and every variant has one.
fn check_targets(
    opts: &RunOptions,
    experiment: Option<&kiln_run::variants::Experiment>,
) -> Result<()> {
    let variant_pids = experiment
        .iter()
        .flat_map(|x| &x.variants)
        .flat_map(|v| v.pids.iter().flatten());
    for &p in opts.pids.iter().chain(variant_pids) {
        if !std::path::Path::new(&format!("/proc/{p}")).exists() {
            bail!("no process {p} (the target must be running; give its pid with -p)");
        }
    }
    if let Some(v) = experiment
        .iter()
        .flat_map(|x| &x.variants)
        .find(|v| v.pids.is_none() && opts.pids.is_empty() && opts.remote.targets.is_empty())
    {
        bail!(
            "variant '{}' has no target: give -p, or --variant-pid {}=PID",
            v.name,
            v.name
        );
    }
    Ok(())
}

/// Saves `run`; when the store cannot take it (a shared store's server away through the
/// retries, a full disk, a file size limit, a read-only or damaged file) it is kept in a
/// local file rather than lost, and stderr says how to push it. Returns its id and the
/// file it was kept in instead.
fn save_run(
    store: &mut dyn kiln_store::Store,
    run: &RunData,
) -> Result<(kiln_store::RunId, Option<std::path::PathBuf>)> {
    let saved = kiln_store::save_or_keep(store, run, &kiln_store::fallback_files());
    let saved = match saved {
        Ok(s) => s,
        Err(lost) => {
            // Nowhere to keep it: its figures at least reach the terminal.
            let _ = write!(std::io::stdout(), "{}", summary(run, Path::new("nowhere")));
            return Err(anyhow::Error::new(lost).context(format!(
                "Cannot save the run in '{}'",
                store.location().display()
            )));
        }
    };
    let (id, kept_in) = match saved {
        Saved::Stored(id) => (id, None),
        Saved::Kept {
            id,
            file,
            error,
            left_out,
        } => {
            let retried = if error.is_unreachable() {
                format!(" (retried for {} s)", kiln_store::DEFAULT_RETRY.as_secs())
            } else {
                String::new()
            };
            eprintln!(
                "kiln run: could not save the run{retried}: {}\n\
                 kiln run: the run is kept in {} as #{id}{}; once the store can take it, push it with\n\
                 \x20   kiln runs import {} --store {}\n\
                 kiln run: {}then remove {}",
                text::clean_lines(&error.to_string()),
                file.display(),
                left_out.map(|l| format!(" ({l})")).unwrap_or_default(),
                text::shell_word(&file.to_string_lossy()),
                text::shell_quoted(&store.location().to_string_lossy()),
                if kiln_store::is_url(store.location()) {
                    "(with the URL's password if it has one), "
                } else {
                    ""
                },
                file.display()
            );
            (id, Some(file))
        }
    };
    Ok((id, kept_in))
}

/// Sends the run's profiles to the OTLP collector, when one is given; false when that
/// failed (said on stderr).
fn send_otlp(otlp: &super::common::OtlpArgs, run: &RunData, stored_in: &Path) -> bool {
    if otlp.otlp_endpoint.is_some() {
        if run.profiles.is_empty() {
            eprintln!("kiln run: warning: the run has no profile to send to the collector");
        } else if let Err(e) = otlp.send("run", &run.profiles, &otlp_options(run, stored_in)) {
            eprintln!("kiln run: {}", text::clean_lines(&format!("{e:#}")));
            return false;
        }
    }
    true
}

/// The passes to make: (round or repeat, the variant's index in an experiment).
fn steps(
    experiment: Option<&kiln_run::variants::Experiment>,
    repeat: u32,
) -> Vec<(u32, Option<usize>)> {
    match experiment {
        Some(x) => x
            .steps()
            .into_iter()
            .map(|s| (s.round, Some(s.variant)))
            .collect(),
        None => (1..=repeat).map(|i| (i, None)).collect(),
    }
}

/// The progress line's prefix for pass `i` of `repeat` (a round of an experiment when
/// `variant`).
fn step_label(name: &str, variant: bool, i: u32, repeat: u32) -> String {
    if variant {
        format!("{name} round {i}/{repeat}: ")
    } else if repeat > 1 {
        format!("{name} {i}/{repeat}: ")
    } else {
        String::new()
    }
}

/// Where the run went (the store, or the file it was kept in) and where its reports go:
/// beside a store file; the working directory for a database server.
fn places(
    store: &dyn kiln_store::Store,
    kept_in: Option<std::path::PathBuf>,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let stored_in = kept_in
        .as_deref()
        .unwrap_or_else(|| store.location())
        .to_path_buf();
    let report_base = kept_in
        .as_deref()
        .or(store.local_file())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    (stored_in, report_base)
}

/// The run's summary (or its meta as JSON) on stdout, and on stderr how long the results
/// took once the measurement ended (the last seconds of load, the profiles' symbols, the
/// save): "results seconds after the load stops".
fn print_run(run: &RunData, json: bool, stored_in: &Path) -> Result<()> {
    let stored_after =
        kiln_os::clock::monotonic_ns().saturating_sub(run.meta.measure.end_ns) as f64 / 1e9;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&run.meta)?)?;
    } else {
        write!(out, "{}", summary(run, stored_in))?;
    }
    out.flush()?;
    eprintln!("kiln run: stored {stored_after:.2} s after the measurement ended");
    Ok(())
}

/// How many of the experiment's runs were made, and how to compare them.
fn say_experiment_done(x: &kiln_run::variants::Experiment, stored: usize, total: u32) {
    // Names as shell words: a name with a space or `$(…)` is pasted as the name.
    let names: Vec<String> = x
        .variants
        .iter()
        .map(|v| text::shell_word(&v.name))
        .collect();
    eprintln!(
        "kiln run: experiment {}: {stored} run(s) of {total}; compare the variants round by round with: kiln compare {}",
        text::clean(&x.id),
        names.join(" ")
    );
}

/// A fleet of connections held open: before each repeat after the first, the target
/// must have let the previous fleet go. The target's sockets before the first.
fn fleet_baseline(repeat: u32, load: &dyn Workload, pids: &[u32]) -> Option<u64> {
    (repeat > 1 && load.info().unit == kiln_run::FLEET_UNIT)
        .then(|| kiln_run::procfs::socket_count(pids))
        .flatten()
}

/// The warnings of fetching the target's own profiles, on stderr.
fn say_pprof_warnings(run: &RunData) {
    for w in run.meta.warnings.iter().filter(|w| w.starts_with("pprof:")) {
        eprintln!("warning: {}", text::clean_cut(w, 2 * text::MAX_SHOWN));
    }
}

pub fn run(mut args: Args, max_input: u64, stop: &Stop) -> Result<ExitCode> {
    args.store.max_input = max_input;
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    kiln_store::check_name(&args.name).map_err(|e| anyhow::anyhow!("--name: {e}"))?;
    let experiment = experiment(&args)?;
    warn_few_repeats(args.repeat, experiment.is_some());
    let mut opts = run_options(&args)?;
    opts.max_input = max_input;
    check_targets(&opts, experiment.as_ref())?;
    with_workers(&mut opts.pids);
    let after_each = args.after_each.clone();
    let commands = Commands {
        stop: stop.clone(),
        timeout: seconds("--setup-timeout", args.setup_timeout, false)?,
    };
    let otlp = super::common::OtlpArgs {
        otlp_endpoint: args.otlp_endpoint.clone(),
    };
    otlp.check()?;
    let mut store = args.store.open()?;
    let json = args.json;
    let repeat = args.repeat;
    let report = (!args.no_report).then_some(args.report.clone());
    let mut load_cmd = args.load;
    if let RunLoad::Load(cmd) = &mut load_cmd {
        super::load_http::under_run(cmd, &opts.pids);
    }
    let mut load = make_load(load_cmd)?;
    let group = format!("{}@{}", opts.name, kiln_os::clock::unix_ms());
    let mut progress = ProgressLine::new();
    let mut all_complete = true;
    let mut kept_all = true;
    let mut sent_all = true;
    if let Some(w) = kiln_run::sweep_too_long(&opts, load.schedule()) {
        eprintln!("kiln run: warning: {w}");
    }
    let fleet = fleet_baseline(repeat, load.as_ref(), &opts.pids);
    let steps = steps(experiment.as_ref(), repeat);
    let total = steps.len() as u32;
    let default_pids = opts.pids.clone();
    let mut stored = 0usize;
    // Repeats whose load could not start, twice: (repeat, why).
    let mut failed: Vec<(u32, String)> = Vec::new();
    for (k, &(i, v)) in steps.iter().enumerate() {
        if stop.is_raised() {
            break;
        }
        if let (Some(baseline), true) = (fleet, k > 0) {
            await_fleet_released(&default_pids, baseline, load.info().concurrency, stop);
        }
        opts.repeat = (i, repeat);
        let setup = match (&experiment, v) {
            (Some(x), Some(v)) => Some(set_up(x, v, &mut opts, &default_pids, stored, &commands)?),
            _ => {
                opts.group = Some(group.clone());
                None
            }
        };
        let label = step_label(&opts.name, v.is_some(), i, repeat);
        // A variant's own target (--variant-pid) gone since the last round — exited, or
        // killed and not yet reaped by its parent (a zombie) — makes no run.
        let gone = v
            .and_then(|v| experiment.as_ref()?.variants[v].pids.as_ref())
            .and_then(|ps| ps.iter().copied().find(|&p| !kiln_os::proc::alive(p)));
        let made = match gone {
            Some(p) => Err(kiln_run::RunError::NoTarget(p)),
            None => make_run(&opts, load.as_mut(), stop, &mut progress, &label, fleet),
        };
        let mut run = match (made, &experiment) {
            (Ok(r), _) => r,
            // An experiment's run that could not be made (its variant's target gone):
            // the experiment stops, and says so and what it kept.
            (Err(e), Some(x)) => {
                let why = match (&e, v.and_then(|v| x.variants[v].pids.as_ref())) {
                    // Its own target, given with --variant-pid, not -p.
                    (kiln_run::RunError::NoTarget(p), Some(_)) => format!(
                        "variant '{}': its target, process {p} (--variant-pid), has exited",
                        opts.name
                    ),
                    _ => e.to_string(),
                };
                bail!(
                    "{why}\nkiln run: the experiment {} stops at round {i} (variant '{}'); the {stored} run(s) made before it are stored",
                    x.id,
                    opts.name
                )
            }
            // A repeat whose load failed twice: the group keeps the repeats it has.
            (Err(e @ kiln_run::RunError::LoadStart(_)), None) if repeat > 1 => {
                eprintln!(
                    "kiln run: repeat {i}/{repeat} failed again: {}; the group keeps the repeats it has and goes on",
                    text::clean_lines(&e.to_string())
                );
                failed.push((i, e.to_string()));
                continue;
            }
            (Err(e), None) => return Err(e.into()),
        };
        around(
            &mut run,
            experiment.as_ref().map(|x| (x.id.as_str(), i)),
            setup,
        );
        say_pprof_warnings(&run);
        let (id, kept_in) = save_run(store.as_mut(), &run)?;
        run.meta.id = Some(id);
        // Only once the run is saved: no command run after it can lose it.
        let after_failed = match after_each.as_deref() {
            Some(c) => after_run(c, &mut run, store.as_mut(), kept_in.as_deref(), &commands)?,
            None => None,
        }
        .map(|f| {
            format!(
                "{f} after run {}/{total}; the runs after it are not made",
                k + 1
            )
        });
        kept_all &= kept_in.is_none();
        let (stored_in, report_base) = places(store.as_ref(), kept_in);
        all_complete &= run.meta.status.complete;
        print_run(&run, json, &stored_in)?;
        stored += 1;
        if let Some(to) = &report {
            let nth = match experiment {
                Some(_) => (k as u32 + 1, total),
                None => (i, repeat),
            };
            write_report(&run, to.as_deref(), nth, &report_base, id);
        }
        sent_all &= send_otlp(&otlp, &run, &stored_in);
        if let Some(f) = after_failed {
            bail!(f);
        }
    }
    if let Some(x) = &experiment {
        say_experiment_done(x, stored, total);
    }
    if !failed.is_empty() {
        let which: Vec<String> = failed
            .iter()
            .map(|(i, why)| format!("repeat {i} ({})", text::clean_cut(why, 200)))
            .collect();
        eprintln!(
            "kiln run: group {}: {stored} of {repeat} repeats stored; failed: {}",
            text::clean(&group),
            which.join("; ")
        );
    }
    Ok(
        if all_complete && kept_all && sent_all && failed.is_empty() {
            ExitCode::SUCCESS
        } else {
            // Stored, but cut short, or kept locally instead of in the store: say so to
            // scripts too (a signal's own code wins in main).
            ExitCode::from(1)
        },
    )
}

/// How long a repeat whose load could not start waits before it is tried once more: for a
/// broker still letting the last repeat's connections go, or restarting.
const SETTLE: Duration = Duration::from_secs(10);

/// One run of the loop. A repeat whose load could not start (a broker still closing the
/// last fleet: "no CONNACK within 30 s") is tried once more, after the target has let the
/// last fleet go (`fleet`: its sockets before the first) and [`SETTLE`]; the second
/// failure is the caller's (the group keeps the repeats it has).
fn make_run(
    opts: &RunOptions,
    load: &mut dyn Workload,
    stop: &Stop,
    progress: &mut ProgressLine,
    label: &str,
    fleet: Option<u64>,
) -> std::result::Result<RunData, kiln_run::RunError> {
    let size = load.info().concurrency;
    let mut once = |progress: &mut ProgressLine| {
        let r = kiln_run::run(opts, load, stop, &mut |p| progress.show(p, label));
        progress.done();
        r
    };
    match once(progress) {
        Err(e @ kiln_run::RunError::LoadStart(_)) if opts.repeat.1 > 1 && !stop.is_raised() => {
            eprintln!(
                "kiln run: repeat {}/{} failed: {}; trying it once more once the broker settles",
                opts.repeat.0,
                opts.repeat.1,
                text::clean_lines(&e.to_string())
            );
            if let Some(baseline) = fleet {
                await_fleet_released(&opts.pids, baseline, size, stop);
            }
            if stop.sleep(SETTLE) {
                return Err(e);
            }
            once(progress)
        }
        r => r,
    }
}

/// The experiment of `--variant`s, when there are any; the seed of `--order random`
/// (from the clock when not given) is printed.
fn experiment(args: &Args) -> Result<Option<kiln_run::variants::Experiment>> {
    use kiln_run::variants::{Experiment, Order};
    if args.variant.is_empty() {
        return Ok(None);
    }
    let now = kiln_os::clock::unix_ms();
    let order = match args.order {
        OrderArg::Abba => Order::Abba,
        OrderArg::Random => {
            let seed = args.seed.unwrap_or(now as u64);
            eprintln!("kiln run: the variants in a random order per round, seed {seed} (--seed {seed} repeats it)");
            Order::Random(seed)
        }
    };
    if args.seed.is_some() && args.order != OrderArg::Random {
        bail!("--seed orders the rounds of --order random only");
    }
    Ok(Some(Experiment::new(
        &args.variant,
        &args.variant_pid,
        args.repeat,
        order,
        now,
    )?))
}

/// Warns when `repeat` runs (or rounds, for variants) can never show a change at 0.05.
fn warn_few_repeats(repeat: u32, variants: bool) {
    use kiln_compare::{smallest_group, smallest_p, stats};
    if variants {
        let need = stats::smallest_rounds(0.05) as u32;
        if repeat < need {
            eprintln!(
                "warning: {repeat} round(s) can never show a change at p < 0.05 in kiln compare (the smallest p of {repeat} rounds is {p:.3}): use --repeat {need} or more (8 on a busy machine)",
                p = stats::smallest_paired_p(repeat as usize)
            );
        }
        return;
    }
    let need = smallest_group(0.05);
    if (2..need as u32).contains(&repeat) {
        eprintln!(
            "warning: groups of {repeat} runs can never show a change at p < 0.05 in kiln compare (the smallest p of {repeat} runs against {repeat} is {p:.2}): use --repeat {need} or more",
            p = smallest_p(repeat as usize, repeat as usize)
        );
    }
}

/// How the commands run around runs (set-ups, `--after-each`) end: on the run's stop, or
/// after `--setup-timeout`.
struct Commands {
    stop: Stop,
    timeout: std::time::Duration,
}

/// What ran before a run, kept with it: its experiment and round (`experiment`) and its
/// variant's set-up.
fn around(
    run: &mut RunData,
    experiment: Option<(&str, u32)>,
    setup: Option<kiln_run::variants::Ran>,
) {
    if let Some((id, round)) = experiment {
        run.meta.experiment = Some(id.to_string());
        run.meta.round = Some(round);
    }
    if let Some(ran) = setup {
        ran.keep(run);
    }
}

/// The `--after-each` command, run once `run` is saved (in `store`, or in the file
/// `kept_in` when the store could not take it); its record and output are then added to
/// the stored run. Not started when kiln was asked to stop. How it failed, when it did.
fn after_run(
    command: &str,
    run: &mut RunData,
    store: &mut dyn kiln_store::Store,
    kept_in: Option<&Path>,
    how: &Commands,
) -> Result<Option<String>> {
    if how.stop.is_raised() {
        eprintln!(
            "kiln run: --after-each `{}` not run: kiln was asked to stop",
            text::clean_cut(command, 200)
        );
        return Ok(None);
    }
    let ran = kiln_run::variants::run_command("after-each", command, &how.stop, how.timeout)?;
    let failed = (!ran.ok()).then(|| {
        format!(
            "--after-each `{}` {}",
            text::clean_cut(&ran.record.command, 200),
            ran.status_text()
        )
    });
    let id = run.meta.id.unwrap_or(0);
    let (record, attachments) = ran.split();
    let added = match kept_in {
        Some(file) => kiln_store::SqliteStore::open(file).and_then(|mut s| {
            kiln_store::Store::add_commands(&mut s, id, std::slice::from_ref(&record), &attachments)
        }),
        None => store.add_commands(id, std::slice::from_ref(&record), &attachments),
    };
    if let Err(e) = added {
        eprintln!(
            "kiln run: warning: run #{id} is saved, but the --after-each command's record could not be added to it: {}",
            text::clean_lines(&e.to_string())
        );
    }
    run.meta.commands.push(record);
    run.attachments.extend(attachments);
    Ok(failed)
}

/// Puts the server into variant `v`'s state before its run: its set-up command, which
/// must succeed (else the experiment stops, `stored` runs kept), and the run's name,
/// group and target.
fn set_up(
    x: &kiln_run::variants::Experiment,
    v: usize,
    opts: &mut RunOptions,
    default_pids: &[u32],
    stored: usize,
    how: &Commands,
) -> Result<kiln_run::variants::Ran> {
    let var = &x.variants[v];
    opts.name = var.name.clone();
    opts.group = Some(x.group(v));
    opts.pids = var.pids.clone().unwrap_or_else(|| default_pids.to_vec());
    let ran = kiln_run::variants::run_command("setup", &var.setup, &how.stop, how.timeout)?;
    if !ran.ok() {
        bail!(
            "{}
kiln run: the experiment {} stops; the {stored} run(s) made before it are stored",
            ran.setup_failed(&var.name),
            x.id
        );
    }
    Ok(ran)
}

/// The OTLP request's options for a stored run's profiles: their resource is this host
/// and the run; the wall-clock time of the first sample (the samples' clock is
/// CLOCK_MONOTONIC).
fn otlp_options(run: &RunData, stored_in: &Path) -> kiln_formats::otlp::WriteOptions {
    use kiln_formats::otlp::proto::any_value::Value;
    let m = &run.meta;
    let first = run
        .profiles
        .iter()
        .filter_map(|p| p.samples.time_range().map(|r| r.0))
        .min()
        .unwrap_or(m.measure.start_ns);
    let now_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(0));
    let ago = kiln_os::clock::monotonic_ns().saturating_sub(first);
    let s = |v: &str| Value::StringValue(v.to_string());
    let mut resource = vec![
        ("host.name".to_string(), s(&m.host)),
        (
            "kiln.run.id".to_string(),
            Value::IntValue(m.id.unwrap_or(0)),
        ),
        ("kiln.run.name".to_string(), s(&m.name)),
        ("kiln.run.group".to_string(), s(&m.group)),
        (
            "kiln.run.repeat".to_string(),
            s(&format!("{}/{}", m.repeat.0, m.repeat.1)),
        ),
        (
            "kiln.run.store".to_string(),
            s(&stored_in.display().to_string()),
        ),
    ];
    for (k, v) in &m.tags {
        resource.push((format!("kiln.run.tag.{k}"), s(v)));
    }
    kiln_formats::otlp::WriteOptions {
        time_nanos: now_unix_ns.saturating_sub(i64::try_from(ago).unwrap_or(0)),
        comment: Some(m.name.clone()),
        resource,
    }
}

/// Writes a run's report (a failure is a warning: the run is stored).
fn write_report(
    run: &RunData,
    to: Option<&std::path::Path>,
    (i, n): (u32, u32),
    store: &std::path::Path,
    id: i64,
) {
    let path = match to {
        Some(p) if n > 1 => kiln_report::numbered_path(p, i),
        Some(p) => p.to_path_buf(),
        None => kiln_report::default_report_path(store, &run.meta.name, id),
    };
    let t = std::time::Instant::now();
    match kiln_report::write_run_report_file(run, &Default::default(), &path) {
        Ok(()) => eprintln!(
            "kiln run: report {} ({:.2} s)",
            path.display(),
            t.elapsed().as_secs_f64()
        ),
        Err(e) => eprintln!(
            "warning: the run is stored, but its report '{}' could not be written: {e}",
            path.display()
        ),
    }
}

/// The text summary of a stored run.
/// How long a repeat waits for the target to close the previous fleet's connections.
const FLEET_RELEASE: Duration = Duration::from_secs(60);

/// Waits until the target holds no more sockets than before the first repeat (`baseline`),
/// saying so when it has to wait.
fn await_fleet_released(pids: &[u32], baseline: u64, fleet: Option<f64>, stop: &Stop) {
    use kiln_run::procfs::{await_released, socket_count, Released};
    let now = socket_count(pids).unwrap_or(0);
    let size = fleet.unwrap_or(0.0).max(0.0) as u64;
    if now <= baseline + size / 100 {
        return;
    }
    eprintln!(
        "kiln run: waiting for the target to close the last fleet's connections ({now} sockets open, {baseline} before the first)"
    );
    if let Released::TimedOut(left) = await_released(pids, baseline, size, FLEET_RELEASE, stop) {
        eprintln!(
            "kiln run: warning: after {} s the target still holds {left} sockets ({baseline} before the first fleet); the next fleet starts anyway",
            FLEET_RELEASE.as_secs()
        );
    }
}

/// A field that came from outside (names, command lines, a shared or imported store):
/// shown escaped, cut to a line.
fn shown(x: &str) -> String {
    text::clean_cut(x, 2 * text::MAX_SHOWN).into_owned()
}

/// The summary's load line (connections, throughput, the set rate) and latency line.
fn load_lines(s: &mut String, m: &kiln_store::RunMeta, unit: &str) {
    use kiln_compare::format_value as fv;
    use std::fmt::Write as _;
    let c = shown;
    let h = &m.headline;
    let _ = write!(s, "  load: {}", c(&m.load.to_string()));
    if let Some(c) = h.connections {
        let _ = write!(s, ": {} connections held", kiln_model::thousands(c));
        // Beside the count asked for, when the fleet fell short of it.
        if let Some(asked) = m
            .load
            .concurrency
            .map(|a| a.round() as u64)
            .filter(|&a| a > c)
        {
            let _ = write!(s, " of {} asked for", kiln_model::thousands(asked));
        }
    }
    if let Some(t) = h.throughput {
        let _ = write!(s, ": {} {unit}", fv(t, "/s"));
        if let Some(sr) = h.send_rate.filter(|sr| (sr - t).abs() > 0.5) {
            let _ = write!(s, " completed, {} sent", fv(sr, "/s"));
        }
    }
    // A set rate is a setting: held or not, as kiln compare reports it.
    if let (Some(rate), Some(got)) = (m.load.rate, h.send_rate.or(h.throughput)) {
        let held = kiln_compare::Held::of(rate, got);
        let _ = write!(s, " (rate set {}: {})", fv(rate, "/s"), held.text());
    }
    let _ = writeln!(s);
    if let Some(l) = &h.latency {
        let p = |v: Option<f64>| v.map_or("-".to_string(), |v| fv(v, "us"));
        let _ = writeln!(
            s,
            "  latency ({l}): p50 {}  p99 {}  p99.9 {}  max {}",
            p(h.p50_us),
            p(h.p99_us),
            p(h.p999_us),
            p(h.max_us)
        );
    }
}

/// The summary's target lines: its CPU, by thread group, and the BEAM's states.
fn target_lines(s: &mut String, facts: &kiln_findings::Facts, unit: &str, secs: f64) {
    let m = &facts.meta;
    use kiln_compare::format_value as fv;
    use std::fmt::Write as _;
    let c = shown;
    let h = &m.headline;
    if let Some(cpu) = h.target_cpu_s {
        let _ = write!(
            s,
            "  target {} (pid {}): CPU {:.1}% (user {:.1}%, system {:.1}%)",
            c(&m.target.comm),
            m.target
                .pids
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(","),
            cpu / secs * 100.0,
            h.target_user_s.unwrap_or(0.0) / secs * 100.0,
            h.target_system_s.unwrap_or(0.0) / secs * 100.0,
        );
        if let Some(c) = h.cpu_per_op_us {
            let _ = write!(s, " = {} per {unit}", fv(c, "us"));
        }
        // kiln's own cost inside the target: its eBPF programs run on the target's
        // threads (their system time), at most this much of it.
        if let Some(b) = h.kiln_bpf_cpu_s.filter(|b| *b > 0.0) {
            let _ = write!(
                s,
                "; of it at most {:.1}% kiln's eBPF programs",
                b / secs * 100.0
            );
        }
        let _ = writeln!(s);
        s.push_str(&kiln_findings::text::thread_states(
            &facts.groups,
            h.connections,
        ));
    }
    if let Some(l) = kiln_findings::text::peers(facts) {
        s.push_str(&l);
    }
    if let Some(l) = kiln_findings::text::jvm_dumps(facts) {
        s.push_str(&l);
    }
}

/// The summary's line of the target's memory and switches, and of kiln's own CPU and the
/// machine's.
fn resource_lines(s: &mut String, m: &kiln_store::RunMeta, unit: &str, secs: f64) {
    use kiln_compare::format_value as fv;
    use std::fmt::Write as _;
    let h = &m.headline;
    let mut extra = Vec::new();
    if let Some(r) = h.rss_max_bytes {
        extra.push(format!("RSS max {}", fv(r as f64, "bytes")));
    }
    if let Some(c) = h.context_switches {
        let mut t = format!("{:.0} context switches/s", c as f64 / secs);
        if let Some(p) = h.switches_per_op {
            t.push_str(&format!(" ({p:.2} per {unit})"));
        }
        extra.push(t);
    }
    if !extra.is_empty() {
        let _ = writeln!(s, "  {}", extra.join("; "));
    }
    let mut own = Vec::new();
    if let Some(k) = h.kiln_cpu_s {
        own.push(match h.kiln_bpf_cpu_s {
            Some(b) => format!(
                "kiln CPU {:.1}% (+ {:.1}% in its eBPF programs, in the kernel)",
                k / secs * 100.0,
                b / secs * 100.0
            ),
            None => format!("kiln CPU {:.1}%", k / secs * 100.0),
        });
    }
    if let Some(l) = h.load_cpu_s {
        own.push(format!("load command CPU {:.1}%", l / secs * 100.0));
    }
    if let Some(b) = h.machine_busy_pct {
        own.push(format!("machine busy {b:.0}% of {} CPUs", m.cpus));
    }
    if !own.is_empty() {
        let _ = writeln!(s, "  {}", own.join("; "));
    }
}

pub fn summary(run: &RunData, store: &std::path::Path) -> String {
    use std::fmt::Write as _;
    let m = &run.meta;
    // Everything a run holds came from outside (names, command lines, a shared or
    // imported store): shown escaped, one field a line.
    let c = shown;
    let mut s = String::new();
    let status = match &m.status.reason {
        None => "complete".to_string(),
        Some(r) => format!("INCOMPLETE: {}", c(r)),
    };
    // A window of the run (`run@2-7`, a sweep's step) says which.
    let window = if m.measure.name == "measure" {
        String::new()
    } else {
        format!(" in window {}", c(&m.measure.name))
    };
    let _ = writeln!(
        s,
        "run '{}' #{} ({status}): {:.1} s measured{window}",
        text::clean_cut(&m.name, 80),
        m.id.unwrap_or(0),
        m.measure.seconds()
    );
    let unit = if m.load.unit.is_empty() {
        "op".to_string()
    } else {
        c(&m.load.unit)
    };
    load_lines(&mut s, m, &unit);
    let facts = kiln_findings::Facts::of(run, None);
    let found = kiln_findings::rules::run_all(&facts);
    s.push_str(&kiln_findings::text::findings(&found));
    let secs = m.measure.seconds().max(1e-9);
    target_lines(&mut s, &facts, &unit, secs);
    resource_lines(&mut s, m, &unit, secs);
    if let Some(sw) = kiln_compare::sweep::sweep(run, &Default::default(), 10) {
        let _ = writeln!(s, "  sweep ({}):", c(&sw.param));
        s.push_str(&text::clean_lines(&sw.text()));
    }
    if !m.windows.is_empty() {
        let names: Vec<String> = m.windows.iter().map(|w| c(&w.name)).collect();
        let _ = writeln!(
            s,
            "  windows: {} (kiln compare {n}@STEP …, kiln flamegraph run:{n}@STEP)",
            names.join(", "),
            n = text::shell_word(&text::clean_cut(&m.name, 80))
        );
    }
    s.push_str(&kiln_findings::text::details(&facts));
    for h in &m.hosts {
        let _ = writeln!(s, "  host {}", c(&host_line(h)));
    }
    for w in &m.warnings {
        let _ = writeln!(s, "  warning: {}", c(w));
    }
    let _ = writeln!(
        s,
        "  stored in {} as #{}",
        store.display(),
        m.id.unwrap_or(0)
    );
    s
}

/// One line about another host of a run: what it did, its clock, or why it failed.
fn host_line(h: &kiln_store::HostInfo) -> String {
    let mut roles = h.roles.join("+");
    if !h.pids.is_empty() {
        let pids: Vec<String> = h.pids.iter().map(|p| p.to_string()).collect();
        roles.push_str(&format!(" pid {}", pids.join(",")));
    }
    let mut line = format!("{} ({roles}, {})", h.name, h.destination);
    if let Some(c) = &h.clock {
        line.push_str(&format!(
            ": clock {:+.6} s ± {:.3} ms",
            c.offset_ns as f64 / 1e9,
            c.uncertainty_ns as f64 / 1e6
        ));
        if let Some(d) = c.drift_ppm {
            line.push_str(&format!(", drift {d:+.1} ppm"));
        }
    }
    if let Some(f) = &h.failure {
        line.push_str(&format!(": FAILED: {f}"));
    }
    line
}
