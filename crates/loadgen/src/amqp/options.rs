//! What a run does: PerfTest's options as a plain struct.
use super::wire::FieldValue;
use crate::Error;
use std::time::Duration;

/// Queues named by a pattern, `perf-test-%d` with `%d` from `from` to `to` (inclusive).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueuePattern {
    /// The pattern; must contain `%d`.
    pub pattern: String,
    /// First number (inclusive).
    pub from: u32,
    /// Last number (inclusive).
    pub to: u32,
}

/// A load run. Defaults are PerfTest 2.22.1's (see [`AmqpOptions::default`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AmqpOptions {
    /// Broker URI. Default `amqp://guest:guest@localhost:5672`.
    pub uri: String,
    /// Producer count (`-x`). Default 1. Each producer has its own connection.
    pub producers: u32,
    /// Consumer count (`-y`). Default 1. Each consumer has its own connection.
    pub consumers: u32,
    /// Messages per second per producer (`-r`). Default `None`: as fast as possible.
    pub rate: Option<f64>,
    /// Messages per second per consumer (`-R`). Default `None`: no limit.
    pub consumer_rate: Option<f64>,
    /// Run duration (`-z`). Default `None`: until the message counts are reached or Ctrl-C.
    pub time: Option<Duration>,
    /// Messages per producer (`-C`); 0 = no limit (default).
    pub pmessages: u64,
    /// Messages per consumer (`-D`); 0 = no limit (default).
    pub cmessages: u64,
    /// Publisher confirms with at most this many unconfirmed messages per producer (`-c`).
    /// Default `None`: no confirms.
    pub confirm: Option<u32>,
    /// Acknowledge with `multiple` every this many messages (`-A`); 0 = each message (default).
    pub multi_ack_every: u32,
    /// Prefetch count per consumer (`-q`); 0 = unlimited (default).
    pub qos: u16,
    /// Consume with automatic acknowledgement (`-a`). Default false.
    pub autoack: bool,
    /// Persistent messages (`-f persistent`); also makes the declared queues durable.
    pub persistent: bool,
    /// Mandatory publishing (`-f mandatory`); unroutable messages come back and are counted.
    pub mandatory: bool,
    /// Message size in bytes (`-s`). Default and minimum 12.
    pub size: usize,
    /// Queue name (`-u`). Default `None`: each consumer gets its own exclusive server-named
    /// queue bound to the exchange, as in PerfTest.
    pub queue: Option<String>,
    /// Exchange (`-e`). Default `direct`.
    pub exchange: String,
    /// Exchange type (`-t`). Default `direct`.
    pub exchange_type: String,
    /// Routing key (`-k`). Default `None`: a random key (or the queue name on the default
    /// exchange).
    pub routing_key: Option<String>,
    /// Queue arguments (`--queue-args x-queue-type=stream`).
    pub queue_args: Vec<(String, FieldValue)>,
    /// Consumer arguments (`--consumer-args x-stream-offset=first`).
    pub consumer_args: Vec<(String, FieldValue)>,
    /// Declare queues auto-delete (`--auto-delete`). Default true, as in PerfTest; ignored
    /// for quorum queues and streams, which the broker refuses to make auto-delete.
    pub auto_delete: bool,
    /// Many queues by pattern; producers and consumers are spread over them round-robin.
    pub queue_pattern: Option<QueuePattern>,
    /// `(rate, seconds)` steps applied in turn and repeated (`--variable-rate`).
    pub variable_rate: Vec<(f64, u64)>,
    /// `(size, seconds)` steps applied in turn and repeated (`--variable-size`).
    pub variable_size: Vec<(usize, u64)>,
    /// Each producer sends one message per interval, starting at a random offset
    /// (`--publishing-interval`, many mostly idle producers). Default `None`.
    pub publishing_interval: Option<Duration>,
    /// Time a consumer spends per message (`-L`, microseconds on the command line).
    pub consumer_latency: Duration,
    /// Random JSON bodies of `size` bytes (`--json-body`); they carry no timestamp, so no
    /// consumer latency is measured.
    pub json_body: bool,
    /// Label of the run in every output line (`--id`). Default `test-HHMMSS-mmm`.
    pub id: String,
    /// Reconnect after a lost connection and keep running, marking the gap (default false:
    /// the run ends with the results so far).
    pub reconnect: bool,
    /// The `CLOCK_MONOTONIC` instant (ns) whole seconds of this load's ticks are counted
    /// from ([`crate::Load::align_ticks`]); 0 (default): every second from the load's start.
    #[serde(skip)]
    pub tick_grid_ns: u64,
}

impl Default for AmqpOptions {
    fn default() -> Self {
        AmqpOptions {
            tick_grid_ns: 0,
            uri: "amqp://guest:guest@localhost:5672".into(),
            producers: 1,
            consumers: 1,
            rate: None,
            consumer_rate: None,
            time: None,
            pmessages: 0,
            cmessages: 0,
            confirm: None,
            multi_ack_every: 0,
            qos: 0,
            autoack: false,
            persistent: false,
            mandatory: false,
            size: 12,
            queue: None,
            exchange: "direct".into(),
            exchange_type: "direct".into(),
            routing_key: None,
            queue_args: Vec::new(),
            consumer_args: Vec::new(),
            auto_delete: true,
            queue_pattern: None,
            variable_rate: Vec::new(),
            variable_size: Vec::new(),
            publishing_interval: None,
            consumer_latency: Duration::ZERO,
            json_body: false,
            id: default_id(),
            reconnect: false,
        }
    }
}

fn default_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let s = now.as_secs() % 86_400;
    format!(
        "test-{:02}{:02}{:02}-{:03}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        now.subsec_millis()
    )
}

/// Parses PerfTest's `key=value,key=value` arguments, typing values like PerfTest.
pub fn parse_key_values(flag: &'static str, s: &str) -> Result<Vec<(String, FieldValue)>, Error> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| Error::Option {
            flag,
            value: s.to_string(),
            reason: format!("'{part}' is not key=value"),
        })?;
        if k.is_empty() {
            return Err(Error::Option {
                flag,
                value: s.to_string(),
                reason: format!("'{part}' has an empty key"),
            });
        }
        out.push((k.trim().to_string(), FieldValue::infer(v.trim())));
    }
    Ok(out)
}

/// Parses `VALUE:SECONDS` (`--variable-rate 100:10`, `--variable-size 1000:30`).
pub fn parse_value_duration(flag: &'static str, s: &str) -> Result<(f64, u64), Error> {
    let bad = |reason: &str| Error::Option {
        flag,
        value: s.to_string(),
        reason: reason.to_string(),
    };
    let (v, d) = s
        .split_once(':')
        .ok_or_else(|| bad("expected VALUE:SECONDS, e.g. 100:10"))?;
    let v: f64 = v.parse().map_err(|_| bad("VALUE is not a number"))?;
    let d: u64 = d
        .parse()
        .map_err(|_| bad("SECONDS is not a whole number"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(bad("VALUE must be >= 0"));
    }
    if d == 0 {
        return Err(bad("SECONDS must be > 0"));
    }
    Ok((v, d))
}

/// An option's value that cannot work, and why.
fn bad(flag: &'static str, value: String, reason: &str) -> Result<(), Error> {
    Err(Error::Option {
        flag,
        value,
        reason: reason.into(),
    })
}

impl AmqpOptions {
    /// Checks combinations that cannot work, naming the flag.
    pub fn validate(&self) -> Result<(), Error> {
        if self.size < 12 {
            return bad(
                "--size",
                self.size.to_string(),
                "the minimum is 12 bytes (sequence + timestamp)",
            );
        }
        if self.size > 64 * 1024 * 1024 {
            return bad("--size", self.size.to_string(), "the maximum is 64 MiB");
        }
        if let Some(r) = self.rate {
            if !(r >= 0.0 && r.is_finite()) {
                return bad("--rate", r.to_string(), "must be a number >= 0");
            }
        }
        if let Some(r) = self.consumer_rate {
            if !(r >= 0.0 && r.is_finite()) {
                return bad("--consumer-rate", r.to_string(), "must be a number >= 0");
            }
        }
        if let Some(c) = self.confirm {
            if c == 0 {
                return bad(
                    "--confirm",
                    "0".into(),
                    "must be at least 1 (omit it for no confirms)",
                );
            }
        }
        if let Some(p) = &self.queue_pattern {
            self.validate_queue_pattern(p)?;
        }
        if let Some(i) = self.publishing_interval {
            if i.is_zero() {
                return bad("--publishing-interval", "0".into(), "must be > 0 seconds");
            }
            if self.rate.is_some() || !self.variable_rate.is_empty() {
                return bad(
                    "--publishing-interval",
                    format!("{}", i.as_secs_f64()),
                    "cannot be combined with --rate or --variable-rate",
                );
            }
        }
        if self.producers + self.consumers == 0 {
            return bad(
                "--producers",
                "0".into(),
                "with --consumers 0 there is nothing to run",
            );
        }
        if self.producers > 10_000 || self.consumers > 10_000 {
            return bad(
                "--producers",
                self.producers.max(self.consumers).to_string(),
                "at most 10000 producers and 10000 consumers",
            );
        }
        for n in [
            self.queue.as_deref(),
            Some(self.exchange.as_str()),
            self.routing_key.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            if n.len() > 255 {
                return bad("--queue", n.to_string(), "AMQP names are at most 255 bytes");
            }
        }
        Ok(())
    }

    /// `--queue-pattern` and its range.
    fn validate_queue_pattern(&self, p: &QueuePattern) -> Result<(), Error> {
        if !p.pattern.contains("%d") {
            return bad(
                "--queue-pattern",
                p.pattern.clone(),
                "must contain %d, e.g. perf-test-%d",
            );
        }
        if p.from > p.to {
            return bad(
                "--queue-pattern-from",
                p.from.to_string(),
                "must not exceed --queue-pattern-to",
            );
        }
        if p.to - p.from >= 10_000 {
            return bad(
                "--queue-pattern-to",
                p.to.to_string(),
                "at most 10000 queues",
            );
        }
        if self.queue.is_some() {
            return bad(
                "--queue",
                self.queue.clone().unwrap_or_default(),
                "cannot be combined with --queue-pattern",
            );
        }
        Ok(())
    }

    /// The `x-queue-type` argument, if any.
    pub(crate) fn queue_type(&self) -> Option<&str> {
        self.queue_args
            .iter()
            .find(|(k, _)| k == "x-queue-type")
            .and_then(|(_, v)| match v {
                FieldValue::Str(s) => Some(s.as_str()),
                _ => None,
            })
    }

    /// Whether messages carry their intended send time (rate-limited runs).
    pub fn rate_limited(&self) -> bool {
        self.rate.is_some() || !self.variable_rate.is_empty() || self.publishing_interval.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_and_steps() {
        let kv = parse_key_values("--queue-args", "x-queue-type=stream, x-max-length=10").unwrap();
        assert_eq!(
            kv[0],
            ("x-queue-type".into(), FieldValue::Str("stream".into()))
        );
        assert_eq!(kv[1], ("x-max-length".into(), FieldValue::Long(10)));
        let e = parse_key_values("--queue-args", "x-queue-type")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--queue-args") && e.contains("key=value"), "{e}");
        assert_eq!(
            parse_value_duration("--variable-rate", "100:10").unwrap(),
            (100.0, 10)
        );
        for bad in ["100", "x:1", "1:0", "-1:2", "1:y"] {
            let e = parse_value_duration("--variable-rate", bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("--variable-rate"), "{e}");
        }
    }

    #[test]
    fn validation_names_the_flag() {
        let o = AmqpOptions {
            size: 4,
            ..Default::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("--size"));
        let o = AmqpOptions {
            queue_pattern: Some(QueuePattern {
                pattern: "q".into(),
                from: 1,
                to: 2,
            }),
            ..Default::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("%d"));
        assert!(AmqpOptions::default().validate().is_ok());
    }
}
