//! Many hosts in one run: load agents and recorded nodes reached over SSH, on one clock.
//!
//! ```text
//! kiln run --name fleet --agent ssh://c1 --agent ssh://c2 -p node1:4242 -p node2:4243 -d 30 \
//!     load mqtt conn -h broker -c 20000 -k 15
//! ```
//!
//! An agent is this kiln binary started on the other host as `kiln agent` by `ssh` (no
//! daemon, no port: the SSH channel's stdin and stdout carry the protocol, [`wire`]). It is
//! copied there first, into `~/.cache/kiln/kiln-BUILD_ID` by default, when that build is
//! not there yet: the build id in the file's name is the version check, and the agent's
//! greeting says its build again. One agent per host serves whatever the run asks of the
//! host: a load of kiln's engine ([`RemoteLoad`]), a recording of its processes with their
//! `/proc` series, clock exchanges ([`clock`]).
//!
//! ## Design constraints
//!
//! * **A module of `kiln-run`, not a crate.** The remote side is one more source of what a
//!   run gathers — load seconds, recordings, `/proc` series — on the run's one clock, and
//!   the orchestration drives it beside the local recorder; a crate of its own would need
//!   `kiln-run`'s `Load` and `LoadTick` while `kiln-run` needs it.
//! * **Exact merges.** Every agent ends its seconds on one grid of the controlling host's
//!   clock, so seconds of all agents cover the same instants and merge by addition
//!   (`merge`); percentiles come from merged histograms.
//! * **One clock.** Every host's CLOCK_MONOTONIC is measured against the controlling
//!   host's at the start and the end ([`clock`]); every second and sample of a host is
//!   placed on the controlling host's clock, and the run keeps the offsets and their
//!   uncertainty.
//! * **Nothing outlives the run.** An agent dies with its sshd session, exits when its stdin
//!   ends (kiln or the connection gone) and when its controller falls silent ([`agent`]).
//! * **No wait without an end, no word taken on trust.** Connecting has the connect
//!   timeout, every later wait its own deadline, and the run's stop ends them all within
//!   `link::STOP_BUDGET`; every ssh is killed with its process group and reaped on every
//!   path, and dies with kiln. Control frames are capped before they are read, and an
//!   agent's seconds and report are checked before they go into the run.
//! * **A host that fails is one host.** It is marked in the run with its reason; the
//!   others go on.
pub mod agent;
pub mod clock;
pub(crate) mod fleet;
mod link;
mod merge;
pub mod wire;

pub use fleet::{RemoteHosts, RemoteLoad, RemoteRecordings};
pub(crate) use merge::latency_values;

/// Where an agent runs: `ssh://[user@]host[:port]`, or `[user@]host`; an IPv6 address in
/// brackets (`ssh://[::1]:22`), as ssh and URLs write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The user to log in as (ssh's default when absent).
    pub user: Option<String>,
    /// The host (a name ssh resolves, its `~/.ssh/config` included, or an address).
    pub host: String,
    /// The SSH port (ssh's default when absent).
    pub port: Option<u16>,
}

impl Destination {
    /// Parses `ssh://[user@]host[:port]` or `[user@]host` (no port: ssh's own config says).
    pub fn parse(s: &str) -> Result<Destination, String> {
        let (rest, url) = match s.strip_prefix("ssh://") {
            Some(r) => (r.trim_end_matches('/'), true),
            None => (s, false),
        };
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
            Some(_) => return Err(format!("'{s}': empty user before '@'")),
            None => (None, rest),
        };
        let (host, port) = split_host_port(s, hostport, url)?;
        if host.is_empty()
            || host.starts_with('-')
            || !host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
        {
            return Err(format!("'{s}': '{host}' is not a host name or address"));
        }
        if user
            .as_deref()
            .is_some_and(|u| u.starts_with('-') || u.bytes().any(|b| b.is_ascii_whitespace()))
        {
            return Err(format!("'{s}': not a user name"));
        }
        Ok(Destination {
            user,
            host: host.to_string(),
            port,
        })
    }
}

/// The host and port of `hostport`: `host`, `host:port` (URLs only), `[v6]`, `[v6]:port`;
/// an IPv6 address without brackets in a URL is refused (its last group would read as a
/// port).
fn split_host_port<'a>(
    s: &str,
    hostport: &'a str,
    url: bool,
) -> Result<(&'a str, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("'{s}': '{p}' is not a port"))
    };
    if let Some(inner) = hostport.strip_prefix('[') {
        let Some((host, rest)) = inner.split_once(']') else {
            return Err(format!("'{s}': '[' without its ']'"));
        };
        if !host.contains(':') {
            return Err(format!(
                "'{s}': '[{host}]': brackets are for IPv6 addresses"
            ));
        }
        return match rest {
            "" => Ok((host, None)),
            r => match r.strip_prefix(':').filter(|_| url) {
                Some(p) => Ok((host, Some(port(p)?))),
                None => Err(format!("'{s}': '{r}' after the address")),
            },
        };
    }
    if hostport.contains([']', '[']) {
        return Err(format!("'{s}': unmatched ']'"));
    }
    if !url {
        return Ok((hostport, None));
    }
    match hostport.split_once(':') {
        Some((h, p)) if !p.contains(':') => Ok((h, Some(port(p)?))),
        Some(_) => Err(format!(
            "'{s}': an IPv6 address in a URL goes in brackets: ssh://[{hostport}] or ssh://[{hostport}]:PORT"
        )),
        None => Ok((hostport, None)),
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// A host of the run: its name (the `host` label of its samples, the suffix of its series)
/// and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The name.
    pub name: String,
    /// Where.
    pub destination: Destination,
}

impl HostSpec {
    /// `NAME=DESTINATION` or `DESTINATION` (named by its host).
    pub fn parse(s: &str) -> Result<HostSpec, String> {
        let (name, dest) = match s.split_once('=') {
            Some((n, d)) if !n.contains('/') && !n.contains('@') => (Some(n), d),
            _ => (None, s),
        };
        let destination = Destination::parse(dest)?;
        let name = name.map_or_else(|| destination.host.clone(), str::to_string);
        if name.is_empty() || name.contains([':', ';', ' ', '\t', '\n']) {
            return Err(format!(
                "'{s}': '{name}' cannot name a host (no ':', ';' or spaces){}",
                if dest == s {
                    ": name it, NAME=DESTINATION"
                } else {
                    ""
                }
            ));
        }
        Ok(HostSpec { name, destination })
    }
}

/// How hosts are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshConfig {
    /// The ssh command and its options, split on whitespace (`--ssh-command`, `KILN_SSH`).
    /// Default: `ssh -o BatchMode=yes` (never a password prompt: kiln reads its output).
    pub command: Vec<String>,
    /// Where the agent binary goes on other hosts; `~/` is the remote home. Default:
    /// `~/.cache/kiln`.
    pub agent_dir: String,
    /// How long a host may take to start its agent and greet (`--connect-timeout`), and a
    /// copy of kiln to it may go without progress. Default: 30 s.
    pub connect_timeout: std::time::Duration,
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig {
            command: vec!["ssh".into(), "-o".into(), "BatchMode=yes".into()],
            agent_dir: "~/.cache/kiln".into(),
            connect_timeout: std::time::Duration::from_secs(30),
        }
    }
}

/// The hosts of a run other than this one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteOptions {
    /// How to reach them.
    pub ssh: SshConfig,
    /// Load agents (`--agent`): each runs the load as given.
    pub agents: Vec<HostSpec>,
    /// Processes to record on other hosts (`-p HOST:PID`).
    pub targets: Vec<(HostSpec, u32)>,
}

impl RemoteOptions {
    /// Whether the run uses no other host.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.targets.is_empty()
    }
}

/// The name `kiln record -e` gives an event (what an agent is asked to record).
pub(crate) fn event_name(e: &kiln_record::EventSpec) -> Option<String> {
    use kiln_record::EventSpec as E;
    Some(match e {
        E::Cpu => "cpu".into(),
        E::PageFaults => "page-faults".into(),
        E::OffCpu => "offcpu".into(),
        E::Runnable => "runnable".into(),
        E::Brk => "brk".into(),
        E::SyscallBytes { syscall } => syscall.clone(),
        E::Tracepoint { category, name } => format!("{category}:{name}"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_and_names() {
        let d = Destination::parse("ssh://root@10.200.1.2:2222").unwrap();
        assert_eq!(d.user.as_deref(), Some("root"));
        assert_eq!(d.host, "10.200.1.2");
        assert_eq!(d.port, Some(2222));
        assert_eq!(d.to_string(), "ssh://root@10.200.1.2:2222");
        let d = Destination::parse("node1").unwrap();
        assert_eq!((d.user, d.port), (None, None));
        assert!(Destination::parse("ssh://h:0").is_err());
        assert!(Destination::parse("ssh://h:x").is_err());
        assert!(Destination::parse("-oProxyCommand=x").is_err());
        assert!(Destination::parse("ssh://a b").is_err());
        let h = HostSpec::parse("c1=ssh://u@h:22").unwrap();
        assert_eq!(h.name, "c1");
        assert_eq!(HostSpec::parse("ssh://u@h:22").unwrap().name, "h");
    }

    #[test]
    fn ipv6_literals_go_in_brackets() {
        let d = Destination::parse("ssh://[::1]:22").unwrap();
        assert_eq!((d.host.as_str(), d.port), ("::1", Some(22)));
        assert_eq!(d.to_string(), "ssh://[::1]:22");
        let d = Destination::parse("ssh://root@[fe80::1:2]").unwrap();
        assert_eq!(d.user.as_deref(), Some("root"));
        assert_eq!((d.host.as_str(), d.port), ("fe80::1:2", None));
        let d = Destination::parse("[::1]").unwrap();
        assert_eq!((d.host.as_str(), d.port), ("::1", None));
        // Without brackets the last group is not taken for a port.
        let e = Destination::parse("ssh://::1").unwrap_err();
        assert!(e.contains("in brackets: ssh://[::1]"), "{e}");
        assert!(Destination::parse("ssh://u@2001:db8::1:22").is_err());
        for bad in [
            "ssh://[::1",
            "ssh://[::1]x",
            "ssh://[::1]:0",
            "ssh://[::1]:port",
            "ssh://[host]:22",
            "ssh://h]:22",
            "ssh://[]",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad}");
        }
        let h = HostSpec::parse("x=ssh://[::1]:22").unwrap();
        assert_eq!((h.name.as_str(), h.destination.host.as_str()), ("x", "::1"));
        let e = HostSpec::parse("ssh://[::1]").unwrap_err();
        assert!(e.contains("NAME=DESTINATION"), "{e}");
    }
}
