//! `kiln load amqp`: PerfTest's flags in, [`kiln_loadgen::AmqpOptions`] out.
use anyhow::{Context, Result};
use kiln_loadgen::amqp::{self, AmqpLoad};
use kiln_loadgen::engine::report as er;
use kiln_loadgen::mqtt::{self, MqttLoad, MqttOptions};
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
    /// MQTT 3.1/3.1.1/5 (mosquitto, RabbitMQ, EMQX…), emqtt-bench's flags.
    ///
    /// `kiln load mqtt conn -c 15000 -i 0 -k 15` holds an idle fleet;
    /// `kiln load mqtt pubsub -c 10 -I 10 -q 1 -z 30` publishes and subscribes in one process
    /// and accounts for every message per publisher (lost, duplicated, out of order).
    /// Per-second lines go to stdout; `--output run1` also saves run1.json and run1.csv.
    #[command(subcommand)]
    Mqtt(MqttCommand),
}

/// MQTT scenarios (emqtt-bench's subcommands, plus pubsub).
#[derive(Debug, clap::Subcommand)]
pub enum MqttCommand {
    /// Open -c connections at one per -i ms and hold them idle with keepalive pings.
    Conn(MqttArgs),
    /// -c subscribers on -t.
    Sub(MqttArgs),
    /// -c publishers on -t, one message per -I ms each.
    Pub(MqttArgs),
    /// --subscribers subscribers, then -c publishers, in one process: end-to-end latency and
    /// delivery accounting per publisher.
    Pubsub(MqttArgs),
}

/// `kiln load mqtt` flags (emqtt-bench's names and defaults where it has them).
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct MqttArgs {
    /// Print help (`-h` is --host, as in emqtt-bench).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Broker host.
    #[arg(short = 'h', long, default_value = "localhost")]
    host: String,
    /// Broker port.
    #[arg(short = 'p', long, default_value_t = 1883)]
    port: u16,
    /// Broker as a URI, mqtt://[user[:password]@]host[:port] (instead of -h/-p/-u/-P).
    #[arg(long)]
    uri: Option<String>,
    /// Protocol version: 3 (3.1), 4 (3.1.1) or 5.
    #[arg(short = 'V', long = "version", default_value_t = 5, value_parser = clap::value_parser!(u8).range(3..=5))]
    protocol_version: u8,
    /// Connections: publishers (pub, pubsub) or subscribers (sub).
    #[arg(short = 'c', long, default_value_t = 200)]
    count: u32,
    /// Subscribers (pubsub).
    #[arg(long, default_value_t = 1)]
    subscribers: u32,
    /// Milliseconds between connects; 0 = as fast as the broker accepts.
    #[arg(short = 'i', long, default_value_t = 10.0)]
    interval: f64,
    /// Topic; %i is the client index, %c the client id. Example: -t 'bench/%i'
    #[arg(short = 't', long, default_value = "bench/%i")]
    topic: String,
    /// Subscribers' filter in pubsub (default: -t with %i and %c as +); $share/GROUP/…
    /// for shared subscriptions (MQTT 5).
    #[arg(long)]
    sub_topic: Option<String>,
    /// QoS 0, 1 or 2.
    #[arg(short = 'q', long, default_value_t = 0)]
    qos: u8,
    /// Payload size in bytes. kiln's stamp takes 36 (sequence, send and intended times,
    /// publisher and load); a smaller payload is sent as asked with what fits of it: every
    /// message received then counts, lost and duplicated ones are not counted, and under
    /// 12 bytes neither is latency (the run says so).
    #[arg(short = 's', long, default_value_t = 256)]
    size: usize,
    /// Milliseconds between messages of each publisher; 0 = as fast as possible. Latency is
    /// also measured from each message's intended send time when > 0.
    #[arg(
        short = 'I',
        long = "interval_of_msg",
        visible_alias = "interval-of-msg",
        default_value_t = 1000.0
    )]
    interval_of_msg: f64,
    /// Keepalive in seconds.
    #[arg(short = 'k', long, default_value_t = 300)]
    keepalive: u16,
    /// User name.
    #[arg(short = 'u', long)]
    username: Option<String>,
    /// Password.
    #[arg(short = 'P', long)]
    password: Option<String>,
    /// Clean session (3.1.1) / clean start (5).
    #[arg(short = 'C', long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    clean: bool,
    /// Client id prefix.
    #[arg(long, default_value = "kiln")]
    prefix: String,
    /// Messages per publisher; 0 = no limit.
    #[arg(short = 'L', long, default_value_t = 0)]
    limit: u64,
    /// Unacknowledged QoS 1/2 messages per publisher.
    #[arg(short = 'F', long, default_value_t = 1)]
    inflight: u16,
    /// Publish retained messages.
    #[arg(short = 'r', long)]
    retain: bool,
    /// MQTT 5: publish through a topic alias after each publisher's first message.
    #[arg(long)]
    topic_alias: bool,
    /// MQTT 5: message expiry interval in seconds.
    #[arg(long, value_name = "SECONDS")]
    message_expiry: Option<u32>,
    /// MQTT 5: session expiry interval in seconds (with -C false: a persistent session).
    #[arg(long, value_name = "SECONDS")]
    session_expiry: Option<u32>,
    /// Reconnect lost connections after a second and keep running.
    #[arg(long)]
    reconnect: bool,
    /// Seconds allowed for TCP connect + CONNACK.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    connect_timeout: f64,
    /// Seconds subscribers keep receiving after publishers stop (until all is accounted).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    drain: f64,
    /// Run duration in seconds (default: until -L is reached, or Ctrl-C).
    #[arg(short = 'z', long, value_name = "SECONDS")]
    time: Option<u64>,
    /// Label shown on every line and stored with the results.
    #[arg(long)]
    id: Option<String>,
    /// Save the run as PREFIX.json and PREFIX.csv (`-o results` or `-o results.json`:
    /// results.json and results.csv).
    #[arg(short = 'o', long, value_name = "PREFIX")]
    output: Option<PathBuf>,
    /// One run per total publishing rate: FROM:TO:STEPS or a list; each lasts -z (10 s).
    #[arg(long, value_name = "SPEC")]
    rate_sweep: Option<String>,
    /// The load's id in its messages, up to 16 hex digits, not 0 (default: random per
    /// load). Messages of any other id are foreign; `kiln run --agent` gives its agents the
    /// run's nonce and each its --agent-index.
    #[arg(long, value_name = "HEX")]
    load_nonce: Option<String>,
    /// The load's index among the agents sharing --load-nonce.
    #[arg(long, value_name = "N", default_value_t = 0)]
    agent_index: u16,
    #[command(flatten)]
    fleet: FleetArgs,
}

/// Fleets past one machine's limits: source addresses and the pre-flight check.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Fleets")]
pub struct FleetArgs {
    /// Local addresses to connect from, round-robin (as emqtt-bench's --ifaddr): one
    /// address reaches one server (address and port) through at most as many connections
    /// as there are ephemeral ports (net.ipv4.ip_local_port_range, ~28,000 by default); the
    /// pre-flight check says how many addresses a fleet needs. Addresses and CIDR ranges,
    /// comma-separated. To a loopback server kiln spreads a fleet over 127.0.0.1, .2… by
    /// itself. Example: --source-address 10.0.0.2,10.0.0.3 or --source-address 10.0.1.0/28
    #[arg(long, value_name = "ADDR[,ADDR|CIDR...]")]
    pub source_address: Option<String>,

    /// Run even when the pre-flight check finds that the fleet does not fit this machine
    /// (ephemeral ports per source address, open files, memory, source addresses that are
    /// not local); its findings are printed as warnings instead of stopping the load.
    #[arg(long)]
    pub no_preflight: bool,
}

impl FleetArgs {
    /// The source addresses given.
    pub fn sources(&self) -> Result<Vec<std::net::IpAddr>> {
        Ok(match &self.source_address {
            Some(s) => kiln_loadgen::engine::fleet::parse_sources(s)?,
            None => Vec::new(),
        })
    }
}

/// Runs a load's pre-flight check, printing what it says to stderr; an error names every
/// shortfall.
pub fn preflight(load: &dyn Load, command: &str) -> Result<()> {
    for line in load.preflight()? {
        eprintln!("kiln {command}: {line}");
    }
    Ok(())
}

impl MqttArgs {
    fn into_options(
        self,
        scenario: mqtt::Scenario,
    ) -> Result<(MqttOptions, Option<PathBuf>, Option<String>)> {
        let secs = |flag: &str, v: f64| -> Result<Duration> {
            if v > 0.0 && v.is_finite() {
                Ok(Duration::from_secs_f64(v))
            } else {
                anyhow::bail!("invalid {flag} '{v}': must be > 0 seconds")
            }
        };
        let mut o = MqttOptions {
            // Seconds from the load's start; `kiln agent` aligns them (`Load::align_ticks`).
            tick_grid_ns: 0,
            scenario,
            host: self.host,
            port: self.port,
            count: self.count,
            subscribers: self.subscribers,
            interval_ms: self.interval,
            topic: self.topic,
            sub_topic: self.sub_topic,
            qos: self.qos,
            size: self.size,
            pub_interval_ms: self.interval_of_msg,
            keepalive: self.keepalive,
            version: mqtt::codec::Version::from_level(self.protocol_version)
                .unwrap_or(mqtt::codec::Version::V5),
            username: self.username,
            password: self.password,
            clean: self.clean,
            prefix: self.prefix,
            limit: self.limit,
            time: self.time.map(Duration::from_secs),
            inflight: self.inflight,
            retain: self.retain,
            topic_alias: self.topic_alias,
            message_expiry: self.message_expiry,
            session_expiry: self.session_expiry,
            reconnect: self.reconnect,
            connect_timeout: secs("--connect-timeout", self.connect_timeout)?,
            drain: secs("--drain", self.drain)?,
            id: self.id.unwrap_or_else(|| MqttOptions::default().id),
            source_addresses: self.fleet.sources()?,
            no_preflight: self.fleet.no_preflight,
            load_id: match &self.load_nonce {
                Some(n) => Some(kiln_loadgen::engine::body::LoadId {
                    nonce: u64::from_str_radix(n.trim_start_matches("0x"), 16)
                        .ok()
                        .filter(|&n| n != 0)
                        .with_context(|| {
                            format!("invalid --load-nonce '{n}': up to 16 hex digits, not 0")
                        })?,
                    agent: self.agent_index,
                }),
                None if self.agent_index != 0 => {
                    anyhow::bail!("--agent-index {} needs --load-nonce", self.agent_index)
                }
                None => None,
            },
        };
        if let Some(u) = &self.uri {
            o.set_uri(u)?;
        }
        o.validate()?;
        Ok((o, self.output, self.rate_sweep))
    }
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

    /// Message flag, repeatable: persistent, mandatory. `-f persistent` also declares the
    /// queues durable (as PerfTest does); without it a named queue (-u) is not durable
    /// (quorum queues and streams always are).
    #[arg(short = 'f', long = "flag", value_parser = ["persistent", "mandatory"])]
    flags: Vec<String>,

    /// Message size in bytes (minimum 12: sequence number + timestamp).
    #[arg(short = 's', long, default_value_t = 12)]
    size: usize,

    /// Queue name (default: one exclusive server-named queue per consumer); durable only
    /// with -f persistent.
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

    /// Save the run as PREFIX.json (summary, every second, events) and PREFIX.csv (series);
    /// `-o results` or `-o results.json`: results.json and results.csv.
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
            // Seconds from the load's start; `kiln agent` aligns them (`Load::align_ticks`).
            tick_grid_ns: 0,
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
        LoadCommand::Mqtt(m) => {
            let (scenario, a) = m.split();
            let (opts, output, sweep) = a.into_options(scenario)?;
            let sweep = sweep
                .map(|s| kiln_loadgen::engine::sweep::parse_steps("--rate-sweep", &s))
                .transpose()?;
            Ok((Box::new(MqttLoad { opts, sweep }), output))
        }
    }
}

impl MqttCommand {
    fn split(self) -> (mqtt::Scenario, MqttArgs) {
        match self {
            MqttCommand::Conn(a) => (mqtt::Scenario::Conn, a),
            MqttCommand::Sub(a) => (mqtt::Scenario::Sub, a),
            MqttCommand::Pub(a) => (mqtt::Scenario::Pub, a),
            MqttCommand::Pubsub(a) => (mqtt::Scenario::PubSub, a),
        }
    }
}

fn mqtt_cmd(cmd: MqttCommand, stop: &kiln_os::stop::Stop) -> Result<ExitCode> {
    let (scenario, a) = cmd.split();
    let (opts, output, sweep) = a.into_options(scenario)?;
    super::common::ensure_stdout_open()?;
    preflight(
        &MqttLoad {
            opts: opts.clone(),
            sweep: None,
        },
        "load mqtt",
    )?;
    let mut out = std::io::stdout().lock();
    let report = match sweep {
        Some(spec) => {
            let rates = kiln_loadgen::engine::sweep::parse_steps("--rate-sweep", &spec)?;
            let r = mqtt::sweep(&opts, &rates, stop, &mut |t| {
                let rate = t
                    .step
                    .and_then(|s| rates.get(s as usize))
                    .copied()
                    .unwrap_or(0.0);
                let _ = writeln!(out, "rate {rate:.0}: {}", mqtt::format_tick(&opts, t));
                let _ = out.flush();
            })?;
            write!(out, "{}", er::format_steps(&r))?;
            r
        }
        None => mqtt::run(&opts, stop, &mut |t| {
            let _ = writeln!(out, "{}", mqtt::format_tick(&opts, t));
            let _ = out.flush();
        })?,
    };
    if report.steps.is_empty() {
        write!(out, "{}", mqtt::format_summary(&opts, &report))?;
    }
    out.flush()?;
    save(&output, &report, mqtt::schema(&opts))?;
    finish(&output, &report)
}

pub fn run(cmd: LoadCommand, stop: &kiln_os::stop::Stop) -> Result<ExitCode> {
    match cmd {
        LoadCommand::Amqp(a) => amqp_cmd(a, stop),
        LoadCommand::Http(a) => super::load_http::run(a, stop),
        LoadCommand::Mqtt(m) => mqtt_cmd(m, stop),
    }
}

fn amqp_cmd(args: AmqpArgs, stop: &kiln_os::stop::Stop) -> Result<ExitCode> {
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

/// Writes PREFIX.json (the whole report) and PREFIX.csv (the series), when asked.
fn save(
    output: &Option<PathBuf>,
    report: &Report,
    schema: &kiln_loadgen::engine::stats::Schema,
) -> Result<()> {
    match output {
        Some(p) => save_to(p, report, schema),
        None => Ok(()),
    }
}

/// Writes PREFIX.json (the whole report) and PREFIX.csv (the series).
pub(super) fn save_to(
    p: &std::path::Path,
    report: &Report,
    schema: &kiln_loadgen::engine::stats::Schema,
) -> Result<()> {
    let json = with_ext(p, "json");
    let csv = with_ext(p, "csv");
    er::write_report_json(&json, report)
        .with_context(|| format!("saving the run to {}", json.display()))?;
    er::write_csv(&csv, schema, &report.series)
        .with_context(|| format!("saving the series to {}", csv.display()))?;
    eprintln!("wrote {} and {}", json.display(), csv.display());
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

/// `-o`'s name with `ext`: `-o results` (a prefix) and `-o results.json` or
/// `-o results.csv` (one of the files it names) all give `results.json`, `results.csv`.
pub(super) fn with_ext(output: &std::path::Path, ext: &str) -> PathBuf {
    let named = matches!(
        output.extension().and_then(|e| e.to_str()),
        Some("json" | "csv")
    ) && output.file_stem().is_some_and(|s| !s.is_empty());
    let prefix = if named {
        output.with_extension("")
    } else {
        output.to_path_buf()
    };
    let mut s = prefix.into_os_string();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::with_ext;
    use std::path::Path;

    #[test]
    fn output_names_with_or_without_an_extension() {
        for o in ["d/results", "d/results.json", "d/results.csv"] {
            assert_eq!(with_ext(Path::new(o), "json"), Path::new("d/results.json"));
            assert_eq!(with_ext(Path::new(o), "csv"), Path::new("d/results.csv"));
            assert_eq!(
                with_ext(Path::new(o), "sweep.csv"),
                Path::new("d/results.sweep.csv")
            );
        }
        assert_eq!(
            with_ext(Path::new("r.2026"), "json"),
            Path::new("r.2026.json")
        );
        assert_eq!(
            with_ext(Path::new(".json"), "json"),
            Path::new(".json.json")
        );
    }
}
