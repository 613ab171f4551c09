//! `kiln run --pprof URL`: the target's own Go profiles (`net/http/pprof`) of the
//! measurement window, kept beside kiln's.
//!
//! When the measurement starts, for each base URL (`http://127.0.0.1:6060/debug/pprof/`):
//! `profile?seconds=N` is requested (N: the window's length, so Go's CPU profile covers
//! the seconds kiln records), and `mutex`, `block` and `heap` are fetched; when it ends,
//! they are fetched again with `goroutine`. Mutex and block profiles and the heap's
//! `alloc_*` values count from the process's start, so the run keeps the end minus the
//! start (`go tool pprof -base`); `inuse_*` and goroutines are the end's.
//!
//! Each profile is kept twice: decoded, one kiln profile per sample type (`pprof mutex
//! delay`, in its own unit), and as pprof bytes (an attachment, `pprof-mutex.pb.gz`) for
//! `go tool pprof`. Every fetch is bounded (a timeout, a maximum size, and what its answer
//! inflates to: the input limit) and runs on its own thread, concurrently with the
//! window: neither the window's start nor its end waits for a server, and a stopped run
//! (Ctrl-C) waits for no answer beyond a moment. One that fails (the server is down or
//! never answers, the endpoint is not enabled, the body is not a profile) is a warning of
//! the run naming the URL and why, never a failed run; a server's words in it are shown
//! through [`kiln_model::text`].
use kiln_formats::pprof::{self, proto};
use kiln_model::Profile;
use kiln_os::stop::Stop;
use kiln_store::{Attachment, PPROF_EVENT_PREFIX};
use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The largest profile body read (a Go heap profile of a big service is a few MB).
const MAX_BODY: u64 = 64 << 20;
/// Time allowed for one snapshot (mutex, block, heap, goroutine).
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time allowed beyond its N seconds for the CPU profile.
const CPU_GRACE: Duration = Duration::from_secs(15);

/// What the fetches of one run gave.
#[derive(Debug, Default)]
pub struct PprofResult {
    /// Decoded profiles, one per sample type kept.
    pub profiles: Vec<Profile>,
    /// The pprof bytes (deltas re-encoded).
    pub attachments: Vec<Attachment>,
    /// What failed or looked wrong, each naming its URL.
    pub warnings: Vec<String>,
}

/// Whether a sample type (`delay`, `alloc_space`) counts from the process's start.
type Cumulative = fn(&str) -> bool;

/// The snapshot profiles and which of their sample types count from the process's start.
const SNAPSHOTS: &[(&str, Cumulative)] = &[
    ("mutex", |_| true),
    ("block", |_| true),
    ("heap", |t| t.starts_with("alloc_")),
];

/// Checks a `--pprof` base URL and gives it a trailing `/`.
pub fn normalise_url(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("'{url}': give an http:// URL of a net/http/pprof index (http://127.0.0.1:6060/debug/pprof/)"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("'{url}': no host"));
    }
    if url.contains(['?', '#']) {
        return Err(format!(
            "'{url}': give the index's URL, without a query (kiln adds profile?seconds=N)"
        ));
    }
    let mut u = url.to_string();
    if !rest.contains('/') {
        u.push_str("/debug/pprof/");
    } else if !u.ends_with('/') {
        u.push('/');
    }
    Ok(u)
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent()
}

/// GETs `url`: the body of a 200 answer, at most [`MAX_BODY`] bytes, else why not.
fn get(url: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let resp = agent(timeout)
        .get(url)
        .call()
        .map_err(|e| kiln_model::text::clean_cut(&e.to_string(), 300).into_owned())?;
    let status = resp.status();
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BODY + 1)
        .read_to_end(&mut body)
        .map_err(|e| {
            format!(
                "reading the answer: {}",
                kiln_model::text::clean_cut(&e.to_string(), 300)
            )
        })?;
    if status != 200 {
        // The server's words, shown safely (no terminal escapes, cut short).
        let text = kiln_model::text::clean_bytes(body.trim_ascii(), 200);
        let hint = if status == 404 {
            " (is net/http/pprof imported and served at this address?)"
        } else {
            ""
        };
        return Err(format!("HTTP {status}{hint}: {text}"));
    }
    if body.len() as u64 > MAX_BODY {
        return Err(format!("the answer is larger than {} MiB", MAX_BODY >> 20));
    }
    Ok(body)
}

/// What one fetch gave: the answer's bytes and its message, or why not.
type Fetched = Result<(Vec<u8>, proto::Profile), String>;

/// Fetches and decodes a profile: its bytes and message. The answer is inflated once,
/// to at most `max_input` bytes (the input limit, [`kiln_model::input`]), recognised from
/// its first bytes and decoded from what was inflated.
fn fetch(url: &str, timeout: Duration, max_input: u64) -> Fetched {
    let body = get(url, timeout)?;
    parse_answer(url, body, max_input)
}

/// An answer's bytes as a profile, inflated to at most `max_input` bytes (for `fetch`,
/// and for fuzzing the path a server's answer takes).
pub fn parse_answer(url: &str, body: Vec<u8>, max_input: u64) -> Fetched {
    let raw = pprof::inflate(url, &body, max_input).map_err(|e| e.to_string())?;
    if !pprof::sniff(&raw[..raw.len().min(4096)]) {
        let text = kiln_model::text::clean_bytes(raw[..raw.len().min(200)].trim_ascii(), 80);
        return Err(format!("the answer is not a pprof profile: '{text}'"));
    }
    // Already inflated: decoded as it is.
    let msg = pprof::decode_message(url, &raw, max_input).map_err(|e| e.to_string())?;
    drop(raw);
    Ok((body, msg))
}

/// A fetch in flight on a thread of its own, under its own deadline. Nothing waits for it
/// beyond that deadline, and nothing at all once the run is stopped ([`Collect`]): a
/// server that accepts and never answers holds no run hostage.
struct Pending {
    rx: mpsc::Receiver<Fetched>,
    deadline: Instant,
}

impl Pending {
    fn spawn(url: String, timeout: Duration, max_input: u64) -> Pending {
        let (tx, rx) = mpsc::channel();
        let deadline = Instant::now() + timeout;
        // Detached: a thread still waiting for its server when the run ends is left to
        // its own timeout.
        let spawned = std::thread::Builder::new()
            .name("kiln-pprof".into())
            .spawn(move || {
                let _ = tx.send(fetch(&url, timeout, max_input));
            });
        if let Err(e) = spawned {
            let (tx, rx2) = mpsc::channel();
            let _ = tx.send(Err(format!("cannot start a thread for the fetch: {e}")));
            return Pending { rx: rx2, deadline };
        }
        Pending { rx, deadline }
    }
}

/// How long answers already on their way may still take once the run is stopped.
const AFTER_STOP: Duration = Duration::from_millis(300);

/// Waits for pending fetches: each until its deadline, all of them together no more than
/// [`AFTER_STOP`] once `stop` is raised.
struct Collect<'a> {
    stop: &'a Stop,
    cut: Option<Instant>,
}

/// Why a fetch gave nothing.
enum Missing {
    Late,
    Interrupted,
}

impl Collect<'_> {
    fn wait(&mut self, p: &Pending) -> Result<Fetched, Missing> {
        loop {
            let now = Instant::now();
            if self.cut.is_none() && self.stop.is_raised() {
                self.cut = Some(now + AFTER_STOP);
            }
            let until = match self.cut {
                Some(c) => c.min(p.deadline),
                None => p.deadline,
            };
            if now >= until {
                // One last look: the answer may have just come.
                return p.rx.try_recv().map_err(|_| match self.cut {
                    Some(c) if now >= c => Missing::Interrupted,
                    _ => Missing::Late,
                });
            }
            match p
                .rx
                .recv_timeout((until - now).min(Duration::from_millis(50)))
            {
                Ok(r) => return Ok(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Missing::Late),
            }
        }
    }
}

impl Collect<'_> {
    /// A snapshot's answer; when there is none, a warning says why (`url` `when`).
    fn answer(
        &mut self,
        p: &Pending,
        url: &str,
        when: &str,
        warnings: &mut Vec<String>,
    ) -> Option<(Vec<u8>, proto::Profile)> {
        match self.wait(p) {
            Ok(Ok(x)) => Some(x),
            Ok(Err(e)) => {
                warnings.push(format!("pprof: {url} {when}: {e}"));
                None
            }
            Err(m) => {
                warnings.push(format!("pprof: {url} {when}: {}", m.say(SNAPSHOT_TIMEOUT)));
                None
            }
        }
    }
}

impl Missing {
    fn say(&self, timeout: Duration) -> String {
        match self {
            Missing::Late => format!("no answer within {} s", timeout.as_secs()),
            Missing::Interrupted => "no answer before the run was interrupted".into(),
        }
    }
}

/// One base URL's fetches, in flight.
struct Target {
    base: String,
    /// Prefix of its attachments and suffix of its profiles' names (several URLs).
    tag: Option<String>,
    cpu: Pending,
    /// The snapshots at the window's start.
    start: Vec<(&'static str, Cumulative, Pending)>,
    /// At its end: the same kinds, then the goroutines.
    end: Vec<Pending>,
    goroutine: Option<Pending>,
}

/// The fetches of a measurement window: all started at once, each on its own thread,
/// concurrently with the window.
pub struct PprofSession {
    targets: Vec<Target>,
    window: Duration,
    /// The most bytes an answer may inflate to (the input limit).
    max_input: u64,
}

/// Starts the fetches for a window of `window` (call it as the window starts); returns
/// at once. An answer inflating past `max_input` bytes (the input limit) is refused.
pub fn begin(urls: &[String], window: Duration, max_input: u64) -> PprofSession {
    let seconds = window.as_secs_f64().ceil().max(1.0) as u64;
    let several = urls.len() > 1;
    let mut tags: Vec<String> = Vec::new();
    let targets = urls
        .iter()
        .map(|base| {
            // host:port names a URL's profiles; two paths on one server get -2, -3….
            let mut tag = host_tag(base);
            let mut n = 2;
            while tags.contains(&tag) {
                tag = format!("{}-{n}", host_tag(base));
                n += 1;
            }
            tags.push(tag.clone());
            let cpu = Pending::spawn(
                format!("{base}profile?seconds={seconds}"),
                Duration::from_secs(seconds) + CPU_GRACE,
                max_input,
            );
            let start = SNAPSHOTS
                .iter()
                .map(|&(kind, cumulative)| {
                    let url = format!("{base}{kind}");
                    (
                        kind,
                        cumulative,
                        Pending::spawn(url, SNAPSHOT_TIMEOUT, max_input),
                    )
                })
                .collect();
            Target {
                base: base.clone(),
                tag: several.then_some(tag),
                cpu,
                start,
                end: Vec::new(),
                goroutine: None,
            }
        })
        .collect();
    PprofSession {
        targets,
        window,
        max_input,
    }
}

fn host_tag(base: &str) -> String {
    base.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl PprofSession {
    /// Starts the fetches of the window's end (call it as the window ends); returns at
    /// once.
    pub fn end(mut self) -> Self {
        let max_input = self.max_input;
        for t in &mut self.targets {
            t.end = SNAPSHOTS
                .iter()
                .map(|&(kind, _)| {
                    Pending::spawn(format!("{}{kind}", t.base), SNAPSHOT_TIMEOUT, max_input)
                })
                .collect();
            t.goroutine = Some(Pending::spawn(
                format!("{}goroutine", t.base),
                SNAPSHOT_TIMEOUT,
                max_input,
            ));
        }
        self
    }

    /// Collects what the fetches gave: each is waited for until its own deadline (the CPU
    /// profile: its N seconds and a grace period), and once `stop` is raised no fetch is
    /// waited for more than a moment: the run is kept with what has arrived.
    pub fn finish(self, stop: &Stop) -> PprofResult {
        let mut out = PprofResult::default();
        let window_s = self.window.as_secs_f64().ceil().max(1.0);
        let mut collect = Collect { stop, cut: None };
        for t in self.targets {
            let name = |kind: &str, ty: Option<&str>| {
                let mut n = format!("{PPROF_EVENT_PREFIX}{kind}");
                if let Some(ty) = ty {
                    n.push(' ');
                    n.push_str(ty);
                }
                if let Some(tag) = &t.tag {
                    n.push_str(&format!(" ({tag})"));
                }
                n
            };
            let file = |kind: &str| match &t.tag {
                Some(tag) => format!("pprof-{tag}-{kind}.pb.gz"),
                None => format!("pprof-{kind}.pb.gz"),
            };
            let mut end = t.end.into_iter();
            // Snapshots at the end: the cumulative ones minus their start.
            for (kind, cumulative, start) in t.start {
                let url = format!("{}{kind}", t.base);
                let end = end.next();
                let w = &mut out.warnings;
                let Some((_, start)) = collect.answer(&start, &url, "at the window's start", w)
                else {
                    continue;
                };
                let Some((_, end)) =
                    end.and_then(|e| collect.answer(&e, &url, "at the window's end", w))
                else {
                    continue;
                };
                match pprof::subtract(&url, &end, &start, &cumulative) {
                    Ok((delta, stats)) => {
                        if stats.base_only > 0 || stats.negative > 0 {
                            out.warnings.push(format!(
                                "pprof: {url}: {} sample(s) of the window's start are missing at its end and {} went down (did the process restart?); they are left out",
                                stats.base_only, stats.negative
                            ));
                        }
                        // The heap's object counts stay in its attachment: the space
                        // tells the story with two flame graphs instead of four.
                        keep(&mut out, &url, kind, &delta, &name, &file, &|ty| {
                            kind != "heap" || ty.ends_with("_space")
                        });
                    }
                    Err(e) => out.warnings.push(format!("pprof: {url}: {e}")),
                }
            }
            let url = format!("{}goroutine", t.base);
            if let Some((_, m)) = t
                .goroutine
                .and_then(|g| collect.answer(&g, &url, "at the window's end", &mut out.warnings))
            {
                keep(&mut out, &url, "goroutine", &m, &name, &file, &|_| true)
            }
            // The CPU profile ends N seconds after the window's start.
            let url = format!("{}profile?seconds={window_s}", t.base);
            match collect.wait(&t.cpu) {
                Ok(Ok((bytes, m))) => {
                    out.attachments.push(Attachment {
                        name: file("cpu"),
                        data: bytes,
                    });
                    // Go writes samples/count and cpu/nanoseconds; the time is what counts.
                    keep(
                        &mut out,
                        &url,
                        "cpu",
                        &m,
                        &name,
                        &|_| String::new(),
                        &|ty| ty == "cpu",
                    );
                }
                Ok(Err(e)) => out.warnings.push(format!("pprof: {url}: {e}")),
                Err(m) => out.warnings.push(format!(
                    "pprof: {url}: {} (the CPU profile is left out)",
                    m.say(Duration::from_secs_f64(window_s) + CPU_GRACE)
                )),
            }
        }
        out.profiles.sort_by_key(|p| rank(&p.event.name));
        out
    }
}

/// In the report's column, the CPU profile faces kiln's CPU profile and the delays face
/// its off-CPU time; the rest follows.
fn rank(name: &str) -> usize {
    let kinds = [
        "cpu",
        "block delay",
        "mutex delay",
        "block contentions",
        "mutex contentions",
        "heap",
        "goroutine",
    ];
    let n = name.strip_prefix(PPROF_EVENT_PREFIX).unwrap_or(name);
    kinds
        .iter()
        .position(|k| n.starts_with(k))
        .unwrap_or(kinds.len())
}

/// Decodes `msg` into `out`'s profiles (the sample types `wanted` accepts, named `pprof
/// KIND TYPE`) and, unless `file` gives no name, keeps its bytes.
fn keep(
    out: &mut PprofResult,
    url: &str,
    kind: &str,
    msg: &proto::Profile,
    name: &dyn Fn(&str, Option<&str>) -> String,
    file: &dyn Fn(&str) -> String,
    wanted: &dyn Fn(&str) -> bool,
) {
    let attachment = file(kind);
    if !attachment.is_empty() {
        out.attachments.push(Attachment {
            name: attachment,
            data: pprof::encode_gz(msg),
        });
    }
    let decoded = match pprof::convert(url, msg) {
        Ok(d) => d,
        Err(e) => {
            out.warnings.push(format!("pprof: {e}"));
            return;
        }
    };
    let single = decoded.profiles.len() == 1;
    for (i, mut p) in decoded.profiles.into_iter().enumerate() {
        let ty = p.event.name.clone();
        if !wanted(&ty) {
            continue;
        }
        let skipped = decoded.stats[i].read.saturating_sub(decoded.stats[i].kept);
        if skipped > 0 {
            out.warnings.push(format!(
                "pprof: {url}: {skipped} sample(s) of '{ty}' could not be kept (negative values or empty stacks)"
            ));
        }
        if p.samples.is_empty() {
            let hint = match kind {
                "mutex" => " (runtime.SetMutexProfileFraction not set, or no contention)",
                "block" => " (runtime.SetBlockProfileRate not set, or no blocking)",
                _ => "",
            };
            out.warnings.push(format!(
                "pprof: {url}: '{ty}' has no samples in the window{hint}"
            ));
            continue;
        }
        p.event.name = if single || kind == "cpu" {
            name(kind, None)
        } else {
            name(kind, Some(&ty.replace('_', " ")))
        };
        out.profiles.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_completed() {
        assert_eq!(
            normalise_url("http://127.0.0.1:6060/debug/pprof/").unwrap(),
            "http://127.0.0.1:6060/debug/pprof/"
        );
        assert_eq!(
            normalise_url("http://127.0.0.1:6060/debug/pprof").unwrap(),
            "http://127.0.0.1:6060/debug/pprof/"
        );
        assert_eq!(
            normalise_url("http://127.0.0.1:6060").unwrap(),
            "http://127.0.0.1:6060/debug/pprof/"
        );
        assert!(normalise_url("https://x/debug/pprof/").is_err());
        assert!(normalise_url("127.0.0.1:6060").is_err());
        assert!(normalise_url("http://x/debug/pprof/profile?seconds=3").is_err());
        assert_eq!(
            host_tag("http://127.0.0.1:6060/debug/pprof/"),
            "127.0.0.1_6060"
        );
    }

    #[test]
    fn an_unreachable_endpoint_is_a_warning() {
        // A port nothing listens on: bind one, learn its number, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/debug/pprof/");
        let s = begin(
            std::slice::from_ref(&url),
            Duration::from_secs(1),
            kiln_model::input::DEFAULT_LIMIT,
        );
        let r = s.end().finish(&Stop::new());
        assert!(r.profiles.is_empty() && r.attachments.is_empty());
        // mutex, block, heap at the start (their ends are not looked at then); goroutine
        // at the end; the CPU profile.
        assert_eq!(r.warnings.len(), 5, "{:?}", r.warnings);
        assert!(
            r.warnings.iter().all(|w| w.contains(&url)),
            "{:?}",
            r.warnings
        );
    }
}
