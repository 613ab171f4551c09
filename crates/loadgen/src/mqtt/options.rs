//! What an MQTT run does: emqtt-bench's options as a plain struct.
use super::codec::Version;
use crate::Error;
use std::time::Duration;

/// The scenario (emqtt-bench's subcommands, plus both sides in one process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Open connections and hold them idle with keepalive pings.
    Conn,
    /// Subscribers.
    Sub,
    /// Publishers.
    Pub,
    /// Subscribers, then publishers, in one process: end-to-end latency without clock sync.
    PubSub,
}

/// An MQTT load. Defaults follow emqtt-bench where it has the option.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MqttOptions {
    /// The scenario.
    pub scenario: Scenario,
    /// Broker host (`-h`). Default `localhost`.
    pub host: String,
    /// Broker port (`-p`). Default 1883.
    pub port: u16,
    /// Connections (`-c`): publishers in `pub`/`pubsub`, subscribers in `sub`. Default 200.
    pub count: u32,
    /// Subscribers in `pubsub` (`--subscribers`). Default 1.
    pub subscribers: u32,
    /// Milliseconds between connects (`-i`); 0 = as fast as the broker accepts. Default 10.
    pub interval_ms: f64,
    /// Topic (`-t`) with `%i` (client index) and `%c` (client id). Default `bench/%i`.
    pub topic: String,
    /// Subscribers' filter in `pubsub` (default: `-t` with `%i`/`%c` as `+`).
    pub sub_topic: Option<String>,
    /// QoS (`-q`) 0, 1 or 2. Default 0.
    pub qos: u8,
    /// Payload bytes (`-s`). Default 256. kiln's stamp takes 36 (sequence, send and
    /// intended times, publisher and load); a smaller payload is sent as asked, carrying
    /// what fits of it ([`MqttOptions::unmarked`]).
    pub size: usize,
    /// Milliseconds between messages of a publisher (`-I`); 0 = as fast as possible.
    /// Default 1000.
    pub pub_interval_ms: f64,
    /// Keepalive seconds (`-k`). Default 300.
    pub keepalive: u16,
    /// Protocol version (`-V` 3, 4 or 5). Default 5.
    pub version: Version,
    /// User name (`-u`).
    pub username: Option<String>,
    /// Password (`-P`); never written to reports.
    #[serde(skip_serializing, default)]
    pub password: Option<String>,
    /// Clean session / clean start (`-C`). Default true.
    pub clean: bool,
    /// Client id prefix (`--prefix`). Default `kiln`.
    pub prefix: String,
    /// Messages per publisher (`-L`); 0 = no limit.
    pub limit: u64,
    /// Run duration (`-z`/`--time`). Default none: until the limit, or Ctrl-C.
    pub time: Option<Duration>,
    /// Unacknowledged QoS 1/2 messages per publisher (`-F`/`--inflight`). Default 1.
    pub inflight: u16,
    /// Publish retained messages (`-r`/`--retain`).
    pub retain: bool,
    /// MQTT 5: publish through a topic alias after the first message (`--topic-alias`).
    pub topic_alias: bool,
    /// MQTT 5: message expiry interval in seconds (`--message-expiry`).
    pub message_expiry: Option<u32>,
    /// MQTT 5: session expiry in seconds (`--session-expiry`); with `-C false` the broker
    /// keeps the session (and QoS 1/2 messages) across a reconnect.
    pub session_expiry: Option<u32>,
    /// Reconnect lost connections after a second and keep running (`--reconnect`).
    pub reconnect: bool,
    /// Time allowed for TCP connect + CONNACK (`--connect-timeout`). Default 5 s.
    pub connect_timeout: Duration,
    /// How long subscribers keep receiving after publishers stop, until every message is
    /// accounted for (`--drain`). Default 2 s.
    pub drain: Duration,
    /// Label of the run in every output line (`--id`).
    pub id: String,
    /// Local addresses the connections are bound to, round-robin (`--source-address`);
    /// empty (default): the kernel's choice, or to a loopback broker as many 127.x
    /// addresses as the fleet needs (see [`crate::engine::fleet`]).
    #[serde(default)]
    pub source_addresses: Vec<std::net::IpAddr>,
    /// Run even when the pre-flight check finds the fleet does not fit this machine
    /// (`--no-preflight`); its findings become warnings. Default false.
    #[serde(default)]
    pub no_preflight: bool,
    /// The load's identity in its messages (`--load-nonce`, `--agent-index`: a run's agents
    /// share the run's nonce); `None` (default): a random nonce per load.
    #[serde(default)]
    pub load_id: Option<crate::engine::body::LoadId>,
    /// The `CLOCK_MONOTONIC` instant (ns) whole seconds of this load's ticks are counted
    /// from ([`crate::Load::align_ticks`]); 0 (default): every second from the load's start.
    #[serde(skip)]
    pub tick_grid_ns: u64,
}

impl Default for MqttOptions {
    fn default() -> Self {
        MqttOptions {
            tick_grid_ns: 0,
            scenario: Scenario::Conn,
            host: "localhost".into(),
            port: 1883,
            count: 200,
            subscribers: 1,
            interval_ms: 10.0,
            topic: "bench/%i".into(),
            sub_topic: None,
            qos: 0,
            size: 256,
            pub_interval_ms: 1000.0,
            keepalive: 300,
            version: Version::V5,
            username: None,
            password: None,
            clean: true,
            prefix: "kiln".into(),
            limit: 0,
            time: None,
            inflight: 1,
            retain: false,
            topic_alias: false,
            message_expiry: None,
            session_expiry: None,
            reconnect: false,
            connect_timeout: Duration::from_secs(5),
            drain: Duration::from_secs(2),
            id: crate::amqp::AmqpOptions::default().id,
            source_addresses: Vec::new(),
            no_preflight: false,
            load_id: None,
        }
    }
}

impl MqttOptions {
    /// Takes host, port, user and password from `mqtt://[user[:password]@]host[:port]`.
    pub fn set_uri(&mut self, uri: &str) -> Result<(), Error> {
        let bad = |reason: &str| Error::Uri {
            uri: redact(uri),
            reason: reason.into(),
        };
        let rest = uri
            .strip_prefix("mqtt://")
            .or_else(|| uri.strip_prefix("tcp://"))
            .ok_or_else(|| {
                if uri.starts_with("mqtts://") || uri.starts_with("ssl://") {
                    bad("TLS is not supported; use mqtt://")
                } else {
                    bad("expected mqtt://[user[:password]@]host[:port]")
                }
            })?;
        let rest = rest.trim_end_matches('/');
        let (auth, hostport) = match rest.rfind('@') {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        if let Some(a) = auth {
            let (u, p) = a.split_once(':').unwrap_or((a, ""));
            self.username = Some(u.to_string());
            if !p.is_empty() {
                self.password = Some(p.to_string());
            }
        }
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => (
                h,
                p.parse::<u16>()
                    .map_err(|_| bad("port is not a number 1-65535"))?,
            ),
            _ => (hostport, 1883),
        };
        if host.is_empty() || host.contains('/') {
            return Err(bad("no host"));
        }
        self.host = host.trim_start_matches('[').trim_end_matches(']').into();
        self.port = port;
        Ok(())
    }

    /// The broker's address for messages (no password).
    pub fn display(&self) -> String {
        match &self.username {
            Some(u) => format!("mqtt://{u}@{}:{}", self.host, self.port),
            None => format!("mqtt://{}:{}", self.host, self.port),
        }
    }

    /// Whether the payload is too small for kiln's whole stamp (`-s` under 36 bytes, as
    /// emqtt-bench allows): messages then carry no origin, so every message received
    /// counts, lost, duplicated and out-of-order ones are not counted, and latency is
    /// measured from the send time only when 12 bytes carry it.
    pub fn unmarked(&self) -> bool {
        self.size < crate::engine::body::FULL
    }

    /// What a payload of `-s` cannot measure, in words; `None` for a whole stamp.
    pub fn unmarked_note(&self) -> Option<String> {
        self.unmarked().then(|| {
            let latency = if self.size < crate::engine::body::MIN {
                "; nor is a message's latency (its send time needs 12 bytes)"
            } else {
                ""
            };
            format!(
                "-s {} is smaller than kiln's 36-byte stamp: messages carry no origin, so each one received counts (whoever published it) and lost, duplicated and out-of-order messages are not counted{latency}",
                self.size
            )
        })
    }

    /// Checks combinations that cannot work, naming the flag.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |flag, value: String, reason: &str| {
            Err(Error::Option {
                flag,
                value,
                reason: reason.into(),
            })
        };
        if self.qos > 2 {
            return bad("-q", self.qos.to_string(), "QoS is 0, 1 or 2");
        }
        if self.size > 256 * 1024 * 1024 - 1024 {
            return bad(
                "-s",
                self.size.to_string(),
                "MQTT packets are at most 256 MB",
            );
        }
        if self.count == 0 {
            return bad("-c", "0".into(), "at least one connection");
        }
        if self.scenario == Scenario::PubSub && self.subscribers == 0 {
            return bad("--subscribers", "0".into(), "pubsub needs a subscriber");
        }
        if !(self.interval_ms >= 0.0 && self.interval_ms.is_finite()) {
            return bad("-i", self.interval_ms.to_string(), "milliseconds >= 0");
        }
        if !(self.pub_interval_ms >= 0.0 && self.pub_interval_ms.is_finite()) {
            return bad("-I", self.pub_interval_ms.to_string(), "milliseconds >= 0");
        }
        if self.inflight == 0 {
            return bad("--inflight", "0".into(), "at least 1");
        }
        if self.version != Version::V5
            && (self.topic_alias || self.message_expiry.is_some() || self.session_expiry.is_some())
        {
            return bad(
                "-V",
                format!("{:?}", self.version),
                "--topic-alias, --message-expiry and --session-expiry need MQTT 5 (-V 5)",
            );
        }
        if self.topic.is_empty() {
            return bad("-t", String::new(), "a topic is needed");
        }
        if matches!(self.scenario, Scenario::Pub | Scenario::PubSub)
            && (self.topic.contains('+') || self.topic.contains('#'))
        {
            return bad(
                "-t",
                self.topic.clone(),
                "publishers need a topic without wildcards (+, #)",
            );
        }
        Ok(())
    }

    /// Connections the run opens.
    pub fn connections(&self) -> u64 {
        match self.scenario {
            Scenario::PubSub => self.count as u64 + self.subscribers as u64,
            _ => self.count as u64,
        }
    }
}

fn redact(s: &str) -> String {
    match (s.find("://"), s.rfind('@')) {
        (Some(a), Some(b)) if b > a => {
            let auth = &s[a + 3..b];
            let user = auth.split(':').next().unwrap_or("");
            format!("{}{}@{}", &s[..a + 3], user, &s[b + 1..])
        }
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_validation() {
        let mut o = MqttOptions::default();
        o.set_uri("mqtt://bob:s3cret@127.0.0.1:1884").unwrap();
        assert_eq!(
            (
                o.host.as_str(),
                o.port,
                o.username.as_deref(),
                o.password.as_deref()
            ),
            ("127.0.0.1", 1884, Some("bob"), Some("s3cret"))
        );
        assert!(!o.display().contains("s3cret"));
        for bad in ["http://x", "mqtt://h:99999", "mqtts://h", "mqtt://"] {
            let e = o.set_uri(bad).unwrap_err().to_string();
            assert!(e.contains("--uri") || e.contains("uri"), "{bad}: {e}");
        }
        let e = o.set_uri("mqtt://u:pw@h:99999").unwrap_err().to_string();
        assert!(!e.contains("pw"), "{e}");
        // Smaller than the stamp: sent as asked, what it cannot measure said.
        let o = MqttOptions {
            size: 10,
            ..Default::default()
        };
        assert!(o.validate().is_ok() && o.unmarked());
        assert!(o
            .unmarked_note()
            .unwrap()
            .contains("nor is a message's latency"));
        let o = MqttOptions {
            size: 32,
            ..Default::default()
        };
        assert!(!o.unmarked_note().unwrap().contains("latency"));
        assert!(!MqttOptions::default().unmarked());
        let o = MqttOptions {
            size: 300 << 20,
            ..Default::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("-s"));
        let o = MqttOptions {
            version: Version::V4,
            topic_alias: true,
            ..Default::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("MQTT 5"));
        assert!(MqttOptions::default().validate().is_ok());
    }
}
