//! A Go target's goroutine waits over a measurement ([`kiln_bpf::goparks`]) as a profile:
//! the time goroutines stayed parked (on a `sync.Mutex`, a channel, a select, a timer, the
//! network poller) by the stack where they parked, named from the binary's symbols.
//! Goroutines park without blocking a thread, so this is the off-CPU view of a Go
//! program that the threads' off-CPU profile cannot give; Go's own block profile gives it
//! too, when the program serves `net/http/pprof` and sets a block profile rate.
use std::path::Path;
#[cfg(feature = "bpf")]
use std::path::PathBuf;

use kiln_model::Profile;
#[cfg(feature = "bpf")]
use kiln_model::{EventInfo, FrameKind, ThreadId, WeightUnit, NO_TIME};

#[cfg(feature = "bpf")]
use crate::unwind::{Images, Process, UserLoc};

/// The runtime functions whose probes time the waits: where a goroutine parks, and where
/// one runs again.
const RUNTIME_FUNCTIONS: [&str; 2] = ["runtime.gopark", "runtime.ready"];

/// The profile's event name.
pub const EVENT: &str = "goroutine waits";

/// Whether `exe` is a Go program whose waits can be traced: an ELF file with Go's
/// line table and the runtime functions the probes attach to in its symbol table.
pub fn is_go(exe: &Path) -> bool {
    use object::{Object, ObjectSection, ObjectSymbol};
    let Ok(data) = std::fs::read(exe) else {
        return false;
    };
    let Ok(obj) = object::File::parse(&*data) else {
        return false;
    };
    if obj.section_by_name(".gopclntab").is_none() {
        return false;
    }
    let found = obj
        .symbols()
        .filter(|s| s.name().is_ok_and(|n| RUNTIME_FUNCTIONS.contains(&n)))
        .count();
    // A stripped binary has Go's line table but no symbols to attach to.
    found == RUNTIME_FUNCTIONS.len() && obj.section_by_name(".text").is_some_and(|t| t.size() > 0)
}

/// How long the probes stay attached, then detached, in turn: each probe hit is a trap
/// into the kernel, two or three a request on a Go HTTP service (attached all the time:
/// +100 µs of the target's CPU a request at 3,000 req/s on a 2-core VM; one second in
/// three: +30; one in five: +15; BENCHMARKS.md), so the waits are traced a fifth of the
/// time and scaled to the whole. A wait longer than the second attached is not timed
/// (its goroutine is woken after the probes are gone).
#[cfg(feature = "bpf")]
const TRACED: std::time::Duration = std::time::Duration::from_secs(1);
#[cfg(feature = "bpf")]
const UNTRACED: std::time::Duration = std::time::Duration::from_secs(4);

/// Goroutine waits being collected for one process.
#[derive(Debug)]
pub struct GoParkSession {
    #[cfg(feature = "bpf")]
    turns: std::thread::JoinHandle<Turns>,
    #[cfg(feature = "bpf")]
    stop: std::sync::mpsc::Sender<()>,
    #[cfg(feature = "bpf")]
    started: std::time::Instant,
    #[cfg(feature = "bpf")]
    pid: u32,
    #[cfg(feature = "bpf")]
    exe: PathBuf,
}

/// What the thread that attaches and detaches the probes hands back.
#[cfg(feature = "bpf")]
struct Turns {
    parks: kiln_bpf::goparks::GoParks,
    /// Time the probes were attached.
    traced: std::time::Duration,
    warnings: Vec<String>,
}

/// Attaches and detaches the probes in turn ([`TRACED`], [`UNTRACED`]) until `stop`.
#[cfg(feature = "bpf")]
fn take_turns(mut parks: kiln_bpf::goparks::GoParks, stop: std::sync::mpsc::Receiver<()>) -> Turns {
    use std::sync::mpsc::RecvTimeoutError::Timeout;
    let mut traced = std::time::Duration::ZERO;
    let mut warnings = Vec::new();
    let mut since = std::time::Instant::now();
    loop {
        let ended = !matches!(stop.recv_timeout(TRACED), Err(Timeout));
        traced += since.elapsed();
        if ended {
            break;
        }
        parks.pause();
        if !matches!(stop.recv_timeout(UNTRACED), Err(Timeout)) {
            break;
        }
        if let Err(e) = parks.resume() {
            warnings.push(format!("goroutine waits: tracing stopped early: {e}"));
            break;
        }
        since = std::time::Instant::now();
    }
    Turns {
        parks,
        traced,
        warnings,
    }
}

/// Without eBPF: no goroutine waits.
#[cfg(not(feature = "bpf"))]
pub fn begin(_pid: u32) -> Option<Result<GoParkSession, String>> {
    None
}

#[cfg(not(feature = "bpf"))]
impl GoParkSession {
    /// Nothing collected.
    pub fn finish(self) -> (Option<Profile>, Vec<String>) {
        (None, Vec::new())
    }
}

/// Starts collecting process `pid`'s goroutine waits when it runs a Go program (`None`
/// when it does not, or is gone); the error says why a Go program's could not be.
#[cfg(feature = "bpf")]
pub fn begin(pid: u32) -> Option<Result<GoParkSession, String>> {
    let exe = PathBuf::from(format!("/proc/{pid}/exe"));
    if !is_go(&exe) {
        return None;
    }
    Some(
        kiln_bpf::goparks::GoParks::start(pid, &exe)
            .map(|parks| {
                let (stop, rx) = std::sync::mpsc::channel();
                let started = std::time::Instant::now();
                let turns = std::thread::Builder::new()
                    .name("kiln-goparks".into())
                    .spawn(move || take_turns(parks, rx));
                (turns, stop, started)
            })
            .map_err(|e| format!("goroutine waits not traced: {e}"))
            .and_then(|(turns, stop, started)| {
                let turns =
                    turns.map_err(|e| format!("goroutine waits not traced: no thread: {e}"))?;
                Ok(GoParkSession {
                    turns,
                    stop,
                    started,
                    pid,
                    exe,
                })
            }),
    )
}

#[cfg(feature = "bpf")]
impl GoParkSession {
    /// Stops collecting: the profile of the waits (the still parked counted until now),
    /// or what went wrong; and what was lost, if anything, in words.
    pub fn finish(self) -> (Option<Profile>, Vec<String>) {
        let _ = self.stop.send(());
        let whole = self.started.elapsed();
        let Ok(turns) = self.turns.join() else {
            return (None, vec!["goroutine waits: their thread failed".into()]);
        };
        let mut warnings = turns.warnings;
        // Waits seen while traced stand for the whole measurement's.
        let scale = whole.as_secs_f64() / turns.traced.as_secs_f64().max(1e-3);
        let (sites, stats) = match turns.parks.finish(kiln_os::clock::monotonic_ns()) {
            Ok(x) => x,
            Err(e) => return (None, vec![format!("goroutine waits not read: {e}")]),
        };
        if stats.notes_full + stats.sums_full > 0 {
            warnings.push(format!(
                "goroutine waits: {} parks of {} not counted (the probes' maps were full)",
                stats.notes_full + stats.sums_full,
                stats.parks + stats.notes_full
            ));
        }
        let mut images = Images::new(false);
        let process = Process::from_proc(self.pid, &mut images);
        let mut p = Profile::new(EventInfo::new(EVENT, WeightUnit::Nanoseconds));
        let root = p.frame(
            self.exe
                .canonicalize()
                .ok()
                .and_then(|x| x.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "go".into())
                .as_bytes(),
            FrameKind::Root,
        );
        let mut unnamed = 0u64;
        for s in &sites {
            let mut frames = vec![root];
            let mut names: Vec<Vec<u8>> = Vec::with_capacity(s.stack.len());
            for (i, &ip) in s.stack.iter().enumerate().rev() {
                // Return addresses point after the call: look up the call itself.
                let at = if i == 0 { ip } else { ip.saturating_sub(1) };
                let name = match process.locate(at, self.pid, &images) {
                    UserLoc::Elf { image, svma } => images
                        .list
                        .get(image as usize)
                        .and_then(|im| im.symbols().lookup(svma).map(<[u8]>::to_vec)),
                    _ => None,
                };
                let name = name.unwrap_or_else(|| {
                    unnamed += 1;
                    format!("[unknown {ip:#x}]").into_bytes()
                });
                frames.push(p.frame(&name, FrameKind::User));
                names.push(name);
            }
            // A note still open at the end is a goroutine still parked only where the
            // probes see the wake-up: a lock, a channel, a select, a timer, a condition.
            // Any other (the network poller's, the collector's workers') may have been
            // woken long ago.
            let caller = names.len().checked_sub(2).map(|i| names[i].as_slice());
            if s.open && !caller.is_some_and(woken_by_ready) {
                continue;
            }
            if s.by_timer {
                frames.push(p.frame(
                    kiln_model::waits::GO_WOKEN_BY_TIMER.as_bytes(),
                    FrameKind::User,
                ));
            }
            if let Some(st) = p.stacks.intern_path(&frames) {
                let ns = (s.ns as f64 * scale).round() as u64;
                p.samples.push(st, ns, NO_TIME, ThreadId::NONE);
            }
        }
        if unnamed > 0 {
            warnings.push(format!(
                "goroutine waits: {unnamed} addresses without a symbol (named by address)"
            ));
        }
        (Some(p), warnings)
    }
}

/// Whether a goroutine parked by `caller` (the function that called `runtime.gopark`) is
/// woken through `runtime.ready`: the locks' and semaphores', channels', selects',
/// timers' and conditions' parks.
#[cfg(feature = "bpf")]
fn woken_by_ready(caller: &[u8]) -> bool {
    [
        &b"runtime.semacquire"[..],
        b"runtime.chanrecv",
        b"runtime.chansend",
        b"runtime.selectgo",
        b"runtime.timeSleep",
        b"time.Sleep",
        b"sync.runtime_notifyListWait",
        b"runtime.notifyListWait",
    ]
    .iter()
    .any(|p| caller.starts_with(p))
}
