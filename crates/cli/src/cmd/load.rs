//! `kiln load amqp`: PerfTest's flags in, [`kiln_loadgen::AmqpOptions`] out.
use anyhow::{Context, Result};
use kiln_loadgen::amqp::{self, AmqpLoad};
use kiln_loadgen::engine::report as er;
use kiln_loadgen::{AmqpOptions, Load, QueuePattern, Report};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Load generators.
#[derive(Debug, clap::Subcommand)]
pub enum LoadCommand {
    /// AMQP 0.9.1 (RabbitMQ), PerfTest-compatible flags.
    ///
    /// A PerfTest command line works with `kiln load amqp` in place of `perf-test`, e.g.
    /// `kiln load amqp -x 1 -y 1 -c 2000 -f persistent -u s1 --queue-args x-queue-type=stream
    /// --consumer-args x-stream-offset=first -q 2000 -z 60`. Per-second lines go to stdout,
    /// like PerfTest's; `--output run1` also saves the whole series as run1.json and run1.csv.
    /// PerfTest's multi-letter short options (`-qa`, `-vr`…) are spelled with two dashes
    /// (`--qa`, `--vr`) or by their long names.
    Amqp(AmqpArgs),
    /// HTTP/1.1, wrk/wrk2 and vegeta habits: -c connections, -t threads, -d duration, -R rate.
    ///
    /// `kiln load http -c 64 -t 1 -d 30s http://127.0.0.1:8080/` runs a closed loop (as wrk);
    /// with `-R 10000` a constant rate whose latency is measured from each request's intended
    /// send time (as wrk2), the service time beside it. Several URLs or a vegeta targets
    /// file, per-request variables ({i}, {rand:A-B}, {csv:COLUMN}), keep-alive, optional
    /// pipelining; `--concurrency-sweep 8,16,32,64` finds where throughput stops growing.
    Http(super::load_http::HttpArgs),
}

/// `kiln load amqp` flags (PerfTest 2.22 names and defaults).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct AmqpArgs {
    /// Print help (`-h` is --uri, as in PerfTest).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,

    /// Broker URI.
    #[arg(short = 'h', long, default_value = "amqp://guest:guest@localhost:5672")]
    uri: String,

    /// Number of producers (one connection each).
    #[arg(short = 'x', long, default_value_t = 1)]
    producers: u32,

    /// Number of consumers (one connection each).
    #[arg(short = 'y', long, default_value_t = 1)]
    consumers: u32,

    /// Messages per second per producer (default: as fast as possible). With a rate, latency
    /// is also reported from each message's intended send time (coordinated omission).
    #[arg(short = 'r', long)]
    rate: Option<f64>,

    /// Messages per second per consumer (default: no limit).
    #[arg(short = 'R', long)]
    consumer_rate: Option<f64>,

    /// Run duration in seconds (default: until the message counts are reached, or Ctrl-C).
    #[arg(short = 'z', long, value_name = "SECONDS")]
    time: Option<u64>,

    /// Messages per producer; 0 = no limit.
    #[arg(short = 'C', long, default_value_t = 0)]
    pmessages: u64,

    /// Messages per consumer; 0 = no limit.
    #[arg(short = 'D', long, default_value_t = 0)]
    cmessages: u64,

    /// Publisher confirms with at most N unconfirmed messages per producer; -1 = no confirms.
    /// Example: -c 2000
    #[arg(short = 'c', long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    confirm: i64,

    /// Acknowledge with `multiple` every N messages; 0 = each message.
    #[arg(short = 'A', long, default_value_t = 0, value_name = "N")]
    multi_ack_every: u32,

    /// Consumer prefetch count; 0 = unlimited. Streams need one, e.g. -q 1000.
    #[arg(short = 'q', long, default_value_t = 0)]
    qos: u16,

    /// Consume with automatic acknowledgement.
    #[arg(short = 'a', long)]
    autoack: bool,

    /// Message flag, repeatable: persistent, mandatory.
    #[arg(short = 'f', long = "flag", value_parser = ["persistent", "mandatory"])]
    flags: Vec<String>,

    /// Message size in bytes (minimum 12: sequence number + timestamp).
    #[arg(short = 's', long, default_value_t = 12)]
    size: usize,

    /// Queue name (default: one exclusive server-named queue per consumer).
    #[arg(short = 'u', long)]
    queue: Option<String>,

    /// Exchange name ("" is the default exchange).
    #[arg(short = 'e', long, default_value = "direct")]
    exchange: String,

    /// Exchange type.
    #[arg(short = 't', long = "type", default_value = "direct")]
    exchange_type: String,

    /// Routing key (default: random, or the queue name on the default exchange).
    #[arg(short = 'k', long)]
    routing_key: Option<String>,

    /// Queue arguments `key=value,…`. Example: --queue-args x-queue-type=quorum
    #[arg(long, visible_alias = "qa", value_name = "K=V,...")]
    queue_args: Option<String>,

    /// Consumer arguments `key=value,…`. Example: --consumer-args x-stream-offset=first
    #[arg(long, visible_alias = "ca", value_name = "K=V,...")]
    consumer_args: Option<String>,

    /// Whether declared queues are auto-delete (ignored for quorum queues and streams).
    #[arg(long, visible_alias = "ad", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    auto_delete: bool,

    /// Queue name pattern with %d, e.g. 'perf-test-%d'; producers and consumers are spread
    /// over the queues round-robin.
    #[arg(long, visible_alias = "qp", requires_all = ["queue_pattern_from", "queue_pattern_to"])]
    queue_pattern: Option<String>,

    /// First number of --queue-pattern (inclusive).
    #[arg(long, visible_alias = "qpf")]
    queue_pattern_from: Option<u32>,

    /// Last number of --queue-pattern (inclusive).
    #[arg(long, visible_alias = "qpt")]
    queue_pattern_to: Option<u32>,

    /// Publishing rate steps RATE:SECONDS, repeatable, cycled. Example: --variable-rate 100:10
    /// --variable-rate 1000:5
    #[arg(long, visible_alias = "vr", value_name = "RATE:SECONDS")]
    variable_rate: Vec<String>,

    /// Message size steps SIZE:SECONDS, repeatable, cycled.
    #[arg(long, visible_alias = "vs", value_name = "SIZE:SECONDS")]
    variable_size: Vec<String>,

    /// Each producer sends one message every SECONDS (many mostly idle producers), e.g.
    /// -x 1000 -P 5.
    #[arg(short = 'P', long, value_name = "SECONDS")]
    publishing_interval: Option<f64>,

    /// Time a consumer spends on each message, in microseconds.
    #[arg(short = 'L', long, default_value_t = 0, value_name = "MICROSECONDS")]
    consumer_latency: u64,

    /// Random JSON bodies of --size bytes (no latency is measured: they carry no timestamp).
    #[arg(long, visible_alias = "jb")]
    json_body: bool,

    /// Label shown on every line and stored with the results.
    #[arg(long)]
    id: Option<String>,

    /// After a lost connection, reconnect and continue; the gap is marked in the series.
    #[arg(long)]
    reconnect: bool,

    /// Save the run as PREFIX.json (summary, every second, events) and PREFIX.csv (series).
    #[arg(short = 'o', long, value_name = "PREFIX")]
    output: Option<PathBuf>,

    /// One run per total rate: FROM:TO:STEPS or a list 1000,2000,5000; each lasts --time
    /// seconds (default 10). Prints a table of attempted and achieved rate and latency.
    #[arg(long, value_name = "SPEC")]
    rate_sweep: Option<String>,
}

impl AmqpArgs {
    pub(crate) fn into_options(self) -> Result<(AmqpOptions, Option<PathBuf>, Option<String>)> {
        let d = AmqpOptions::default();
        let queue_pattern = match (
            self.queue_pattern,
            self.queue_pattern_from,
            self.queue_pattern_to,
        ) {
            (Some(pattern), Some(from), Some(to)) => Some(QueuePattern { pattern, from, to }),
            (None, None, None) => None,
            _ => anyhow::bail!("--queue-pattern-from and --queue-pattern-to need --queue-pattern"),
        };
        let confirm = match self.confirm {
            -1 => None,
            n if n >= 1 && n <= u32::MAX as i64 => Some(n as u32),
            n => anyhow::bail!("invalid --confirm '{n}': use -1 (no confirms) or a maximum of unconfirmed messages >= 1"),
        };
        let interval = match self.publishing_interval {
            None => None,
            Some(s) if s > 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
            Some(s) => anyhow::bail!("invalid --publishing-interval '{s}': must be > 0 seconds"),
        };
        let variable_rate = self
            .variable_rate
            .iter()
            .map(|s| kiln_loadgen::parse_value_duration("--variable-rate", s))
            .collect::<Result<Vec<_>, _>>()?;
        let variable_size = self
            .variable_size
            .iter()
            .map(|s| {
                let (v, d) = kiln_loadgen::parse_value_duration("--variable-size", s)?;
                if v < 12.0 || v.fract() != 0.0 {
                    return Err(kiln_loadgen::Error::Option {
                        flag: "--variable-size",
                        value: s.clone(),
                        reason: "SIZE must be a whole number of bytes >= 12".into(),
                    });
                }
                Ok((v as usize, d))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let o = AmqpOptions {
            uri: self.uri,
            producers: self.producers,
            consumers: self.consumers,
            rate: self.rate,
            consumer_rate: self.consumer_rate,
            time: self.time.map(Duration::from_secs),
            pmessages: self.pmessages,
            cmessages: self.cmessages,
            confirm,
            multi_ack_every: self.multi_ack_every,
            qos: self.qos,
            autoack: self.autoack,
            persistent: self.flags.iter().any(|f| f == "persistent"),
            mandatory: self.flags.iter().any(|f| f == "mandatory"),
            size: self.size,
            queue: self.queue,
            exchange: self.exchange,
            exchange_type: self.exchange_type,
            routing_key: self.routing_key,
            queue_args: match &self.queue_args {
                Some(s) => kiln_loadgen::parse_key_values("--queue-args", s)?,
                None => Vec::new(),
            },
            consumer_args: match &self.consumer_args {
                Some(s) => kiln_loadgen::parse_key_values("--consumer-args", s)?,
                None => Vec::new(),
            },
            auto_delete: self.auto_delete,
            queue_pattern,
            variable_rate,
            variable_size,
            publishing_interval: interval,
            consumer_latency: Duration::from_micros(self.consumer_latency),
            json_body: self.json_body,
            id: self.id.unwrap_or(d.id),
            reconnect: self.reconnect,
        };
        o.validate()?;
        Ok((o, self.output, self.rate_sweep))
    }
}

/// The load a `kiln load …` command line describes, ready to run (`kiln run` starts loads
/// this way), with its output prefix.
pub fn into_load(cmd: LoadCommand) -> Result<(Box<dyn Load>, Option<PathBuf>)> {
    match cmd {
        LoadCommand::Amqp(a) => {
            let (opts, output, sweep) = a.into_options()?;
            let sweep = sweep.map(|s| amqp::parse_sweep(&s)).transpose()?;
            Ok((Box::new(AmqpLoad { opts, sweep }), output))
        }
        LoadCommand::Http(a) => {
            let (load, output) = a.into_load()?;
            Ok((Box::new(load), output))
        }
    }
}

pub fn run(cmd: LoadCommand, stop: &kiln_model::stop::Stop) -> Result<ExitCode> {
    match cmd {
        LoadCommand::Amqp(a) => amqp_cmd(a, stop),
        LoadCommand::Http(a) => super::load_http::run(a, stop),
    }
}

fn amqp_cmd(args: AmqpArgs, stop: &kiln_model::stop::Stop) -> Result<ExitCode> {
    let (opts, output, sweep) = args.into_options()?;
    if opts.rate_limited() && opts.size < 20 && !opts.json_body {
        eprintln!("note: rate-limited messages carry their intended send time too, so they are 20 bytes, not {}", opts.size);
    }
    super::common::ensure_stdout_open()?;
    let mut out = std::io::stdout().lock();
    if let Some(spec) = sweep {
        let rates = amqp::parse_sweep(&spec)?;
        let report = amqp::sweep(&opts, &rates, stop, &mut |t| {
            let rate = t
                .step
                .and_then(|s| rates.get(s as usize))
                .copied()
                .unwrap_or(0.0);
            let _ = writeln!(out, "rate {rate:.0}: {}", amqp::format_tick(&opts.id, t));
            let _ = out.flush();
        })?;
        let rows = amqp::sweep_rows(&report);
        let table = amqp::format_sweep(&rows);
        write!(out, "{table}")?;
        out.flush()?;
        if let Some(p) = &output {
            let csv = with_ext(p, "sweep.csv");
            let json = with_ext(p, "sweep.json");
            amqp::report::write_sweep_csv(&csv, &rows)?;
            amqp::report::write_sweep_json(&json, &rows)?;
            eprintln!("wrote {} and {}", csv.display(), json.display());
        }
        if let Some(f) = rows.iter().find_map(|r| r.failure.clone()) {
            anyhow::bail!("the sweep ended early: {f}");
        }
        return Ok(interrupted_code(&report));
    }
    let report = amqp::run(&opts, stop, &mut |t| {
        let _ = writeln!(out, "{}", amqp::format_tick(&opts.id, t));
        let _ = out.flush();
    })?;
    write!(out, "{}", amqp::format_summary(&report.headline))?;
    out.flush()?;
    save(&output, &report, &amqp::SCHEMA)?;
    finish(&output, &report)
}

/// Writes PREFIX.json (the whole report) and PREFIX.csv (the series).
fn save(
    output: &Option<PathBuf>,
    report: &Report,
    schema: &kiln_loadgen::engine::stats::Schema,
) -> Result<()> {
    if let Some(p) = output {
        let json = with_ext(p, "json");
        let csv = with_ext(p, "csv");
        er::write_json(&json, report)
            .with_context(|| format!("saving the run to {}", json.display()))?;
        er::write_csv(&csv, schema, &report.series)
            .with_context(|| format!("saving the series to {}", csv.display()))?;
        eprintln!("wrote {} and {}", json.display(), csv.display());
    }
    Ok(())
}

/// The exit of a finished run: an error naming the fault (results are kept), 130 when
/// interrupted.
fn finish(output: &Option<PathBuf>, report: &Report) -> Result<ExitCode> {
    if let Some(f) = &report.headline.failure {
        let kept = if output.is_some() {
            "results so far were written"
        } else {
            "results so far are above"
        };
        if f.contains(" lost: ") {
            anyhow::bail!("{f} ({kept}; use --reconnect to ride through broker restarts)");
        }
        anyhow::bail!("{f} ({kept})");
    }
    Ok(interrupted_code(report))
}

fn interrupted_code(report: &Report) -> ExitCode {
    if report.headline.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    }
}

fn with_ext(prefix: &std::path::Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}
