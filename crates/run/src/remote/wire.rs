//! The agent protocol: frames on the SSH channel's stdin and stdout.
//!
//! ```text
//! stream = MAGIC frame*                         (the agent's side; the controller's has no MAGIC)
//! frame  = len:u32le json_len:u32le json blob*  len counts everything after itself
//! blob   = blob_len:u32le bytes
//! ```
//!
//! The JSON is one [`ToAgent`] or [`FromAgent`] message; bulk data travels as blobs beside
//! it, in an order the message names: a second's latency histograms (HdrHistogram V2, the
//! serialisation the store keeps), a recording's profiles (kiln's native format). The agent
//! writes [`MAGIC`] before its first frame, and the controller skips whatever comes before
//! it (a login shell's greeting on the same stdout), so that nothing but kiln speaks on the
//! channel once it starts.
use kiln_store::{SeriesTable, TargetInfo};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// What an agent writes before its first frame.
pub const MAGIC: &[u8] = b"\nKILN-AGENT/1\n";

/// How much may come before [`MAGIC`] (a login shell's greeting): past it the stream is
/// not an agent's.
pub(crate) const MAX_BEFORE_MAGIC: usize = 1 << 20;

/// What the remote command prints, instead of starting, when this build is not there yet.
pub(crate) const MISSING: &str = "KILN-AGENT-MISSING";

/// A frame larger than this is refused (a damaged stream, not a profile).
pub(crate) const MAX_FRAME: usize = 1 << 31;

/// The largest greeting or control frame (everything but a second's histograms, a
/// recording and a load's report): a length past it is refused before anything is read.
pub const MAX_CONTROL: usize = 64 << 10;

/// The largest `load_done` frame (a load's report: about 2 KB).
pub const MAX_REPORT: usize = 1 << 20;

/// How large a frame of an agent's may be, by the kind its message names first
/// (`{"t":"tick",…}`, as [`write_frame`] writes it): data frames may be large, the rest
/// are control frames.
pub fn from_agent_limit(kind: &str) -> usize {
    match kind {
        "tick" | "recorded" => MAX_FRAME,
        "load_done" => MAX_REPORT,
        _ => MAX_CONTROL,
    }
}

/// The kind a message's JSON names first, when it does.
fn peek_kind(json: &[u8]) -> &str {
    let Some(rest) = json.strip_prefix(b"{\"t\":\"") else {
        return "";
    };
    let end = rest.iter().position(|&b| b == b'"').unwrap_or(0);
    std::str::from_utf8(&rest[..end])
        .ok()
        .filter(|k| k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .unwrap_or("")
}

/// From the controlling kiln to an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ToAgent {
    /// A clock exchange (`id` 0: a heartbeat whose answer is not awaited).
    Ping {
        /// Which exchange.
        id: u64,
    },
    /// Start the load `argv` (`amqp -x 1 …`, as after `kiln load`), its seconds ending on
    /// the grid of whole seconds from `grid_ns` (the agent's CLOCK_MONOTONIC).
    StartLoad {
        /// The load's command line.
        argv: Vec<String>,
        /// The grid's origin, ns on the agent's clock.
        grid_ns: u64,
    },
    /// Stop the load (the measurement ended, or a stop).
    StopLoad,
    /// Prepare to record processes of the agent's host; sampling waits for [`ToAgent::Go`].
    Record(RecordRequest),
    /// Start sampling.
    Go,
    /// Stop sampling and send the recording.
    StopRecord,
    /// The run is over: exit once what was asked for is sent.
    Bye,
}

/// What to record on the agent's host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordRequest {
    /// The processes.
    pub pids: Vec<u32>,
    /// Events, as `kiln record -e` names them.
    pub events: Vec<String>,
    /// cpu sampling frequency, Hz.
    pub frequency: u32,
    /// Shortest off-CPU block counted, µs.
    pub min_block_us: u64,
    /// `auto`, `kernel` or `copy`.
    pub unwind: String,
    /// A backstop: the recording ends by itself after this long (ms) if no stop comes.
    pub duration_ms: u64,
}

/// From an agent to the controlling kiln.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum FromAgent {
    /// The agent is running.
    Hello(Hello),
    /// The answer to a [`ToAgent::Ping`], with the agent's clock when the ping arrived and
    /// when the answer left (CLOCK_MONOTONIC ns).
    Pong {
        /// The exchange.
        id: u64,
        /// When the ping was read.
        recv_ns: u64,
        /// When the answer was written.
        send_ns: u64,
    },
    /// The load started (connected).
    LoadStarted,
    /// One second of the load; its histograms are the frame's blobs, in `latency` order.
    Tick(crate::LoadTick),
    /// The load ended.
    LoadDone(WireOutcome),
    /// The recorder is ready to sample.
    RecordReady,
    /// The recording (its profiles in the frame's one blob, when it has any).
    Recorded(Box<WireRecorded>),
    /// A request could not be served.
    Failed {
        /// `load` or `record`.
        what: String,
        /// Why.
        reason: String,
    },
}

/// How many characters of an agent's words (a reason, a warning, its host's name) are
/// kept: enough for any message kiln itself writes.
pub(crate) const MAX_TEXT: usize = 2 * kiln_model::text::MAX_SHOWN;

fn clean(s: &mut String) {
    if let std::borrow::Cow::Owned(c) = kiln_model::text::clean_cut(s, MAX_TEXT) {
        *s = c;
    }
}

impl FromAgent {
    /// The message with every text the agent wrote (reasons, failures, warnings, its
    /// greeting) made safe for a terminal ([`kiln_model::text::clean_cut`]): the other
    /// host is not this one, and what it says is printed and stored here.
    pub fn cleaned(mut self) -> Self {
        match &mut self {
            FromAgent::Hello(h) => h.clean(),
            FromAgent::Tick(t) => {
                for v in &mut t.values {
                    clean(&mut v.name);
                    clean(&mut v.unit);
                }
                t.latency.iter_mut().for_each(|l| clean(&mut l.name));
            }
            FromAgent::LoadDone(o) => o.failure.iter_mut().for_each(clean),
            FromAgent::Recorded(r) => {
                clean(&mut r.stopped);
                r.warnings.iter_mut().for_each(clean);
                r.error.iter_mut().for_each(clean);
            }
            FromAgent::Failed { what, reason } => {
                clean(what);
                clean(reason);
            }
            FromAgent::Pong { .. } | FromAgent::LoadStarted | FromAgent::RecordReady => {}
        }
        self
    }

    /// The message's kind, for a message about one that came out of turn.
    pub fn kind(&self) -> &'static str {
        match self {
            FromAgent::Hello(_) => "hello",
            FromAgent::Pong { .. } => "pong",
            FromAgent::LoadStarted => "load_started",
            FromAgent::Tick(_) => "tick",
            FromAgent::LoadDone(_) => "load_done",
            FromAgent::RecordReady => "record_ready",
            FromAgent::Recorded(_) => "recorded",
            FromAgent::Failed { .. } => "failed",
        }
    }
}

/// Who the agent is.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Hello {
    /// kiln's version.
    pub version: String,
    /// The agent binary's build (its GNU build id, hex).
    pub build: String,
    /// `uname -n`.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// CPUs online.
    pub cpus: u32,
    /// The agent's PID on its host.
    pub pid: u32,
    /// The agent's time namespace's CLOCK_MONOTONIC offset (ns; 0 outside one): the
    /// kernel's own timestamps (perf, eBPF) are that much behind the agent's clock.
    pub timens_monotonic_ns: i64,
}

impl Hello {
    /// Its texts made safe for a terminal, as [`FromAgent::cleaned`] does.
    pub fn clean(&mut self) {
        for s in [
            &mut self.version,
            &mut self.build,
            &mut self.hostname,
            &mut self.kernel,
        ] {
            clean(s);
        }
    }
}

/// How an agent's load ended ([`crate::LoadOutcome`]'s part that travels).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WireOutcome {
    /// It started.
    pub started: bool,
    /// It ended by itself.
    pub ended_by_itself: bool,
    /// What went wrong.
    pub failure: Option<String>,
    /// The load's report.
    pub report: serde_json::Value,
}

/// A recording on the agent's host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WireRecorded {
    /// When sampling began and ended, the agent's CLOCK_MONOTONIC ns.
    pub window: Option<(u64, u64)>,
    /// Why it stopped: `duration`, `interrupted`, `target exited`.
    pub stopped: String,
    /// The recorder's warnings.
    pub warnings: Vec<String>,
    /// Why there is no recording.
    pub error: Option<String>,
    /// CPU of kiln's eBPF programs, s.
    pub bpf_cpu_s: Option<f64>,
    /// The recorded processes.
    pub target: TargetInfo,
    /// The host's `/proc` series (`target`, `machine`, `kiln`), times on the agent's clock.
    pub series: Vec<SeriesTable>,
    /// The target's cumulative CPU (user, system, s) and context switches at the start and
    /// the end of sampling.
    pub cpu: Option<[(f64, f64, u64); 2]>,
    /// Largest RSS of the target, bytes.
    pub peak_rss: u64,
}

/// Writes one frame.
pub fn write_frame<T: Serialize>(
    w: &mut dyn Write,
    msg: &T,
    blobs: &[&[u8]],
) -> std::io::Result<()> {
    let json = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    let len = 4 + json.len() + blobs.iter().map(|b| 4 + b.len()).sum::<usize>();
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "a frame of {len} bytes is too large"
        )));
    }
    let mut buf = Vec::with_capacity(8 + json.len());
    buf.extend_from_slice(&(len as u32).to_le_bytes());
    buf.extend_from_slice(&(json.len() as u32).to_le_bytes());
    buf.extend_from_slice(&json);
    w.write_all(&buf)?;
    for b in blobs {
        w.write_all(&(b.len() as u32).to_le_bytes())?;
        w.write_all(b)?;
    }
    w.flush()
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended (cleanly, between frames).
    #[error("the stream ended")]
    Eof,
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not a frame.
    #[error("malformed frame: {0}")]
    Malformed(String),
}

/// Reads one frame: the message and its blobs, within the default input limit
/// ([`kiln_model::input::DEFAULT_LIMIT`]).
pub fn read_frame<T: serde::de::DeserializeOwned>(
    r: &mut dyn Read,
) -> Result<(T, Vec<Vec<u8>>), FrameError> {
    read_frame_limited(r, &|_| MAX_FRAME, kiln_model::input::DEFAULT_LIMIT)
}

/// Reads one frame no larger than `limit` of the kind its message names (see
/// [`from_agent_limit`]; "" when it names none first), nor than `max_input` (the input
/// limit, `--max-input`): a longer length is refused before its bytes are read.
pub fn read_frame_limited<T: serde::de::DeserializeOwned>(
    r: &mut dyn Read,
    limit: &dyn Fn(&str) -> usize,
    max_input: u64,
) -> Result<(T, Vec<Vec<u8>>), FrameError> {
    let mut head = [0u8; 4];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Eof),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_le_bytes(head) as usize;
    if !(4..=MAX_FRAME).contains(&len) {
        return Err(FrameError::Malformed(format!("length {len}")));
    }
    if len as u64 > max_input {
        return Err(FrameError::Malformed(format!(
            "a frame of {} is past the input limit of {} (--max-input raises it)",
            kiln_model::input::format_size(len as u64),
            kiln_model::input::format_size(max_input)
        )));
    }
    // The buffer grows with what arrives: a length is only a claim until its bytes come.
    // Its first bytes name its kind, and so its limit.
    let mut body = Vec::new();
    (&mut *r).take(len.min(64) as u64).read_to_end(&mut body)?;
    let kind = peek_kind(body.get(4..).unwrap_or_default());
    let max = limit(kind);
    if len > max {
        return Err(FrameError::Malformed(format!(
            "a {} frame of {len} bytes is past its limit of {} bytes",
            if kind.is_empty() { "control" } else { kind },
            max
        )));
    }
    let got = body.len() as u64;
    kiln_model::input::read_to_end(
        &mut (&mut *r).take(len as u64 - got),
        &mut body,
        "the agent's frame",
    )?;
    if body.len() < len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("a frame cut short: {} of {len} bytes", body.len()),
        )
        .into());
    }
    let json_len = u32::from_le_bytes(body[..4].try_into().unwrap_or_default()) as usize;
    if json_len > len - 4 {
        return Err(FrameError::Malformed(format!(
            "message of {json_len} bytes in a frame of {len}"
        )));
    }
    let msg = serde_json::from_slice(&body[4..4 + json_len])
        .map_err(|e| FrameError::Malformed(format!("message: {e}")))?;
    let mut blobs = Vec::new();
    let mut at = 4 + json_len;
    while at < len {
        if at + 4 > len {
            return Err(FrameError::Malformed("truncated blob length".into()));
        }
        let n = u32::from_le_bytes(body[at..at + 4].try_into().unwrap_or_default()) as usize;
        at += 4;
        if at + n > len {
            return Err(FrameError::Malformed(format!(
                "blob of {n} bytes past the frame"
            )));
        }
        blobs.push(body[at..at + n].to_vec());
        at += n;
    }
    Ok((msg, blobs))
}

/// Reads up to and including [`MAGIC`]; returns what came before it (a login shell's
/// greeting). `Ok(None)` when the remote command said [`MISSING`] instead, or the stream
/// ended first (with what it said).
pub fn await_magic(r: &mut dyn Read) -> std::io::Result<Result<Vec<u8>, Vec<u8>>> {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match r.read(&mut byte)? {
            0 => return Ok(Err(seen)),
            _ => seen.push(byte[0]),
        }
        if seen.ends_with(MAGIC) {
            seen.truncate(seen.len() - MAGIC.len());
            return Ok(Ok(seen));
        }
        if seen.ends_with(MISSING.as_bytes()) || seen.len() > MAX_BEFORE_MAGIC {
            return Ok(Err(seen));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::input::DEFAULT_LIMIT as LIMIT;

    /// The fuzz target's seed is in today's format: after the greeting, every frame
    /// decodes, the tick with its typed value.
    #[test]
    fn the_fuzz_seed_decodes() {
        let seed = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/seeds/agent-frames.bin"
        ))
        .unwrap();
        let mut r = &seed[..];
        assert!(await_magic(&mut r).unwrap().is_ok());
        let mut kinds = Vec::new();
        while !r.is_empty() {
            let (m, _) = read_frame::<FromAgent>(&mut r).unwrap();
            if let FromAgent::Tick(t) = &m {
                assert_eq!(t.values[0].name, "acked");
                assert_eq!(t.values[0].kind, crate::ValueKind::Rate);
            }
            kinds.push(
                format!("{m:?}")
                    .split(['(', ' ', '{'])
                    .next()
                    .unwrap()
                    .to_string(),
            );
        }
        assert!(kinds.iter().any(|k| k == "Tick"), "{kinds:?}");
    }

    #[test]
    fn frames_round_trip_and_damage_is_named() {
        let mut buf = Vec::new();
        let msg = ToAgent::StartLoad {
            argv: vec!["mqtt".into(), "conn".into()],
            grid_ns: 42,
        };
        write_frame(&mut buf, &msg, &[b"abc", b""]).unwrap();
        write_frame(&mut buf, &ToAgent::Bye, &[]).unwrap();
        let mut r = &buf[..];
        let (m, blobs): (ToAgent, _) = read_frame(&mut r).unwrap();
        assert!(matches!(m, ToAgent::StartLoad { grid_ns: 42, .. }));
        assert_eq!(blobs, vec![b"abc".to_vec(), Vec::new()]);
        let (m, blobs): (ToAgent, _) = read_frame(&mut r).unwrap();
        assert!(matches!(m, ToAgent::Bye) && blobs.is_empty());
        assert!(matches!(
            read_frame::<ToAgent>(&mut r),
            Err(FrameError::Eof)
        ));
        // Cut short inside a frame: an I/O error, not a message.
        let mut cut = &buf[..buf.len() - 3];
        read_frame::<ToAgent>(&mut cut).unwrap();
        assert!(matches!(
            read_frame::<ToAgent>(&mut cut),
            Err(FrameError::Io(_))
        ));
        // A blob length past the frame.
        let mut bad = buf.clone();
        let json_len = u32::from_le_bytes(bad[4..8].try_into().unwrap()) as usize;
        bad[8 + json_len] = 200;
        let e = read_frame::<ToAgent>(&mut &bad[..]).unwrap_err();
        assert!(e.to_string().contains("past the frame"), "{e}");
    }

    #[test]
    fn a_claimed_length_is_not_taken_on_trust() {
        // 1 GiB claimed, 10 bytes sent: an error once the stream ends, with no gigabyte
        // allocated for it first.
        let mut buf = ((1u32 << 30) - 1).to_le_bytes().to_vec();
        buf.extend_from_slice(&[0u8; 10]);
        let e = read_frame::<FromAgent>(&mut &buf[..]).unwrap_err();
        assert!(e.to_string().contains("cut short: 10 of"), "{e}");
        // Past the input limit: refused before reading.
        let buf = (MAX_FRAME as u32).to_le_bytes();
        let e = read_frame::<FromAgent>(&mut &buf[..]).unwrap_err();
        assert!(e.to_string().contains("input limit"), "{e}");
    }

    #[test]
    fn control_frames_are_capped_by_the_kind_they_name() {
        // A greeting claiming 2^30 − 2 bytes: refused at once, nothing read after it.
        let mut buf = ((1u32 << 30) - 2).to_le_bytes().to_vec();
        buf.extend_from_slice(&[7u8; 100]);
        let e =
            read_frame_limited::<FromAgent>(&mut &buf[..], &|_| MAX_CONTROL, LIMIT).unwrap_err();
        assert!(e.to_string().contains("past its limit of 65536"), "{e}");
        // A tick may be large, a pong may not.
        let big = vec![0u8; MAX_CONTROL];
        let mut t = Vec::new();
        write_frame(
            &mut t,
            &FromAgent::Tick(crate::LoadTick::default()),
            &[&big],
        )
        .unwrap();
        let (m, b) =
            read_frame_limited::<FromAgent>(&mut &t[..], &from_agent_limit, LIMIT).unwrap();
        assert!(matches!(m, FromAgent::Tick(_)) && b[0].len() == MAX_CONTROL);
        let mut p = Vec::new();
        let pong = FromAgent::Pong {
            id: 1,
            recv_ns: 2,
            send_ns: 3,
        };
        write_frame(&mut p, &pong, &[&big]).unwrap();
        let e = read_frame_limited::<FromAgent>(&mut &p[..], &from_agent_limit, LIMIT).unwrap_err();
        assert!(e.to_string().contains("a pong frame of"), "{e}");
        assert_eq!(peek_kind(br#"{"t":"load_done","x":1}"#), "load_done");
        assert_eq!(peek_kind(br#"{"x":1,"t":"tick"}"#), "");
    }

    #[test]
    fn an_agents_words_are_cleaned() {
        let m = FromAgent::Failed {
            what: "load".into(),
            reason: format!("boom\x1b]2;PWNED\x07\u{202e}{}", "x".repeat(5000)),
        };
        let FromAgent::Failed { reason, .. } = m.cleaned() else {
            panic!("the kind changed")
        };
        assert!(
            reason.starts_with("boom\\x1b]2;PWNED\\x07\\u{202e}x"),
            "{reason}"
        );
        assert!(reason.ends_with("[5015 chars]"), "{reason}");
        assert!(reason.chars().count() <= MAX_TEXT + 20);
        let mut h = Hello {
            hostname: "node\r\nFAKE".into(),
            ..Default::default()
        };
        h.clean();
        assert_eq!(h.hostname, "node\\r\\nFAKE");
    }

    #[test]
    fn a_greeting_before_the_magic_is_skipped() {
        let mut s = b"Welcome to node1\n".to_vec();
        s.extend_from_slice(MAGIC);
        s.extend_from_slice(b"rest");
        let mut r = &s[..];
        assert_eq!(await_magic(&mut r).unwrap().unwrap(), b"Welcome to node1\n");
        assert_eq!(r, b"rest");
        let mut r = &b"motd\nKILN-AGENT-MISSING\n"[..];
        assert!(await_magic(&mut r).unwrap().is_err());
    }
}
