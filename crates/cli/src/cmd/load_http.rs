//! `kiln load http`: wrk's and vegeta's flags in, [`kiln_loadgen::http::HttpOptions`] out.
use anyhow::{Context, Result};
use kiln_loadgen::engine::report as er;
use kiln_loadgen::http::{
    self, HttpLoad, HttpOptions, HttpSummary, Plateau, Sweep, SweepRow, Target,
};
use kiln_loadgen::Load;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `kiln load http` flags (wrk's names and defaults where wrk has them).
#[derive(Debug, clap::Args)]
pub struct HttpArgs {
    /// URLs to request, in turn (request i asks for URL i mod N). Variables: {i} (request
    /// number), {rand:A-B}, {csv:COLUMN} (with --csv). Example:
    /// 'http://127.0.0.1:8080/query?city={rand:0-1023}'
    #[arg(value_name = "URL")]
    urls: Vec<String>,

    /// Targets file in vegeta's format ('METHOD URL', header lines, '@body-file', blank line
    /// between targets), used with or instead of URLs.
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,

    /// Connections to keep open.
    #[arg(short = 'c', long, default_value_t = 10)]
    connections: u32,

    /// Threads (each drives its share of the connections).
    #[arg(short = 't', long, default_value_t = 2)]
    threads: u32,

    /// Duration of the load, e.g. 30s, 2m, 500ms (a bare number is seconds); of each step
    /// in a sweep. Default 10s; under `kiln run`, as long as the run measures (its
    /// warm-up and its -d), each sweep step 10s.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    duration: Option<Duration>,

    /// Constant total rate in requests per second (wrk2's -R). Latency is then measured
    /// from each request's intended send time, so a stalled server shows in it. Without
    /// -R the load is a closed loop: each connection sends when its last response arrived.
    /// Either way a response ends when its last bytes reached the socket (the kernel's
    /// receive time), not when kiln read them.
    #[arg(short = 'R', long, value_name = "REQ/S")]
    rate: Option<f64>,

    /// Header to add, repeatable. Example: -H 'Authorization: Bearer x'
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    headers: Vec<String>,

    /// Method for the URLs given on the command line.
    #[arg(short = 'm', long, default_value = "GET")]
    method: String,

    /// Body for the URLs given on the command line (variables allowed).
    #[arg(long, conflicts_with = "body_file")]
    body: Option<String>,

    /// File whose contents are the body for the URLs given on the command line.
    #[arg(long, value_name = "FILE")]
    body_file: Option<PathBuf>,

    /// A request without a complete response after this long fails as a timeout (its
    /// connection is replaced).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    timeout: Duration,

    /// CSV file (first line names the columns) for {csv:COLUMN}; request i uses row i mod rows.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,

    /// Requests in flight per connection (HTTP/1.1 pipelining); 1 = none.
    #[arg(long, default_value_t = 1)]
    pipeline: u32,

    /// Stop after this many requests (0 = no limit; the duration still applies).
    #[arg(short = 'n', long, default_value_t = 0)]
    requests: u64,

    /// Label shown on every line and stored with the results.
    #[arg(long, default_value = "http")]
    id: String,

    /// The server's process(es), whose CPU time (user, system), context switches and
    /// run-queue wait (runnable, waiting for a CPU) are counted beside the load every
    /// second; a concurrency sweep then judges the server's CPU where throughput stopped
    /// growing against what it can use (its threads, the machine's cores, its cgroup's
    /// quota) and the machine's other consumers. Example: --target-pid
    /// "$(pgrep -x myserver)"
    #[arg(long, value_name = "PID[,PID…]", value_delimiter = ',')]
    target_pid: Vec<u32>,

    /// The target pids are `kiln run -p`'s, not --target-pid's (for messages).
    #[arg(skip)]
    target_pid_from_run: bool,

    /// The load runs under `kiln run`, which stops it: without -d it lasts until then.
    #[arg(skip)]
    under_run: bool,

    /// Save the run as PREFIX.json (summary, every second, histograms) and PREFIX.csv (the
    /// series); a sweep also as PREFIX.sweep.csv (one row per step). `-o results` or `-o
    /// results.json`: results.json and results.csv.
    #[arg(short = 'o', long, value_name = "PREFIX")]
    output: Option<PathBuf>,

    /// One constant-rate run per total rate: FROM:TO:STEPS or a list 1000,2000,5000; each
    /// lasts -d. Prints a table of attempted and achieved rate and latency.
    #[arg(long, value_name = "SPEC", conflicts_with = "concurrency_sweep")]
    rate_sweep: Option<String>,

    /// One run per connection count, e.g. 8,16,32,48,64,128,256 (each lasts -d; closed loop
    /// unless -R). Prints per step the rate, latency, the target's CPU (with --target-pid)
    /// and kiln's, and finds the plateau: the step after which throughput grows less than
    /// --plateau-threshold, or does not follow the connections (the added ones queued:
    /// Little's law), while latency grows.
    #[arg(long, value_name = "LIST")]
    concurrency_sweep: Option<String>,

    /// Throughput growth below which the next steps of a concurrency sweep count as flat.
    #[arg(long, default_value_t = kiln_loadgen::engine::sweep::PLATEAU_GROWTH, value_name = "FRACTION")]
    plateau_threshold: f64,

    #[command(flatten)]
    fleet: super::load::FleetArgs,
}

/// Parses `10`, `10s`, `500ms`, `2m`, `1h`, `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("'{s}' is not a duration (e.g. 30s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit '{unit}' in '{s}' (use ms, s, m or h)"
            ))
        }
    };
    Ok(Duration::from_secs_f64(secs))
}

impl HttpArgs {
    /// The load this command line describes, and its output prefix.
    pub(crate) fn into_load(self) -> Result<(HttpLoad, Option<PathBuf>)> {
        let headers = self
            .headers
            .iter()
            .map(|h| http::parse_header(h).map_err(|e| anyhow::anyhow!("invalid -H '{h}': {e}")))
            .collect::<Result<Vec<_>>>()?;
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.as_bytes().to_vec(),
            (None, Some(f)) => std::fs::read(f)
                .with_context(|| format!("cannot read --body-file {}", f.display()))?,
            (None, None) => Vec::new(),
        };
        let mut targets: Vec<Target> = self
            .urls
            .iter()
            .map(|u| Target {
                method: self.method.clone(),
                url: u.clone(),
                headers: Vec::new(),
                body: body.clone(),
            })
            .collect();
        if let Some(f) = &self.targets {
            targets.extend(http::parse_targets_file(f)?);
        }
        if targets.is_empty() {
            anyhow::bail!("give a URL (e.g. http://127.0.0.1:8080/) or --targets FILE");
        }
        if !(self.plateau_threshold > 0.0 && self.plateau_threshold < 10.0) {
            anyhow::bail!(
                "invalid --plateau-threshold '{}': a fraction > 0, e.g. 0.1 for 10%",
                self.plateau_threshold
            );
        }
        let opts = HttpOptions {
            // Seconds from the load's start; `kiln agent` aligns them (`Load::align_ticks`).
            tick_grid_ns: 0,
            targets,
            headers,
            csv: self.csv,
            connections: self.connections,
            threads: self.threads,
            // A load without -d under kiln run lasts as long as the run's warm-up and
            // measurement (the run stops it); on its own, wrk's 10 s.
            duration: match self.duration {
                Some(d) => Some(d),
                None if self.under_run => None,
                None => Some(Duration::from_secs(10)),
            },
            rate: self.rate,
            timeout: self.timeout,
            pipeline: self.pipeline,
            max_requests: self.requests,
            target_pids: self.target_pid,
            target_pids_flag: self.target_pid_from_run.then_some("-p"),
            id: self.id,
            source_addresses: self.fleet.sources()?,
            no_preflight: self.fleet.no_preflight,
        };
        opts.validate()?;
        // Under kiln run, the run checks its own target (and stores a run whose target
        // exited early, saying so).
        if !self.target_pid_from_run {
            opts.check_target_pids()?;
        }
        // Compile the targets now: a bad template fails before anything is sent.
        opts.plan()?;
        let sweep = match (&self.rate_sweep, &self.concurrency_sweep) {
            (Some(s), _) => Some(Sweep::Rate(kiln_loadgen::engine::sweep::parse_steps(
                "--rate-sweep",
                s,
            )?)),
            (None, Some(s)) => Some(Sweep::Connections(http::parse_concurrency_sweep(s)?)),
            (None, None) => None,
        };
        Ok((
            HttpLoad {
                opts,
                sweep,
                plateau_threshold: self.plateau_threshold,
            },
            self.output,
        ))
    }
}

/// Under `kiln run`, an HTTP load without -d lasts until the run stops it (the run's
/// warm-up and -d, not wrk's 10 s: a run measuring 10 s after a warm-up would otherwise
/// lose its last seconds); under `kiln run -p PID`, one without `--target-pid` counts the
/// run's target, so a concurrency sweep can tell whether the target was short of CPU.
pub fn under_run(cmd: &mut super::load::LoadCommand, pids: &[u32]) {
    lasts_the_run(cmd);
    if let super::load::LoadCommand::Http(a) = cmd {
        if a.target_pid.is_empty() {
            a.target_pid = pids.to_vec();
            a.target_pid_from_run = true;
        }
    }
}

pub fn run(args: HttpArgs, stop: &kiln_os::stop::Stop) -> Result<ExitCode> {
    let (mut load, output) = args.into_load()?;
    super::common::ensure_stdout_open()?;
    super::load::preflight(&load, "load http")?;
    let schema = load.schema();
    let id = load.opts.id.clone();
    let steps: Vec<String> = match &load.sweep {
        Some(Sweep::Rate(r)) => r.iter().map(|v| format!("rate {v}")).collect(),
        Some(Sweep::Connections(c)) => c.iter().map(|v| format!("connections {v}")).collect(),
        None => Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    let report = load.run(stop, &mut |t| {
        let line = er::format_tick(schema, &id, t);
        let _ = match t.step.and_then(|s| steps.get(s as usize)) {
            Some(step) => writeln!(out, "{step}: {line}"),
            None => writeln!(out, "{line}"),
        };
        let _ = out.flush();
    })?;
    if load.sweep.is_some() {
        let rows: Vec<SweepRow> =
            serde_json::from_value(report.summary["rows"].clone()).unwrap_or_default();
        write!(out, "{}", http::format_sweep(&rows))?;
        if let Ok(p) = serde_json::from_value::<Plateau>(report.summary["plateau"].clone()) {
            writeln!(out, "id: {id}, {}", p.verdict)?;
        }
        out.flush()?;
        if let Some(p) = &output {
            super::load::save_to(p, &report, schema)?;
            let csv = super::load::with_ext(p, "sweep.csv");
            write_sweep_csv(&csv, &rows)?;
            eprintln!("wrote {}", csv.display());
        }
    } else {
        let summary: Option<HttpSummary> = serde_json::from_value(report.summary.clone()).ok();
        let lines = summary.map(|s| s.lines()).unwrap_or_default();
        write!(
            out,
            "{}",
            er::format_summary(schema, &report.headline, &lines)
        )?;
        out.flush()?;
        if let Some(p) = &output {
            super::load::save_to(p, &report, schema)?;
        }
    }
    if let Some(f) = &report.headline.failure {
        let kept = if output.is_some() {
            "results so far were written"
        } else {
            "results so far are above"
        };
        anyhow::bail!("{f} ({kept})");
    }
    Ok(if report.headline.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_sweep_csv(path: &std::path::Path, rows: &[SweepRow]) -> Result<()> {
    er::write_file(path, |f| {
        writeln!(
            f,
            "param,value,answered_rate,{},failed,target_cpu_pct,target_cpu_user_pct,target_cpu_sys_pct,target_ctx_switches_per_s,client_cpu_pct,machine_cpu_pct,start_mono_ns,end_mono_ns",
            er::pheader("latency")
        )?;
        let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
        for r in rows {
            let l = r.latency.as_ref();
            let lat = match l {
                Some(p) => format!(
                    "{},{},{},{},{},{},{}",
                    p.min_us, p.p50_us, p.p75_us, p.p95_us, p.p99_us, p.p999_us, p.max_us
                ),
                None => ",,,,,,".into(),
            };
            writeln!(
                f,
                "{},{},{:.1},{lat},{},{},{},{},{},{:.2},{:.2},{},{}",
                r.param,
                r.value,
                r.answered_rate,
                r.failed,
                o(r.target_cpu_pct),
                o(r.target_cpu_user_pct),
                o(r.target_cpu_sys_pct),
                o(r.target_ctx_switches_per_s),
                r.client_cpu_pct,
                r.machine_cpu_pct,
                r.start_mono_ns,
                r.end_mono_ns
            )?;
        }
        Ok(())
    })
    .with_context(|| format!("saving the sweep to {}", path.display()))
}

/// An HTTP load without -d lasts until the run that started it stops it (`kiln run`, or
/// a `kiln agent`'s controller).
pub fn lasts_the_run(cmd: &mut super::load::LoadCommand) {
    if let super::load::LoadCommand::Http(a) = cmd {
        a.under_run = true;
    }
}
