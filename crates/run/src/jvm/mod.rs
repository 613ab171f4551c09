//! Thread dumps of a JVM target, taken over the measurement window: which Java method
//! each BLOCKED thread waits in to enter which monitor, and who holds it. A profile
//! names the compiled method on the stack; where the JIT inlined a synchronized method
//! into its caller only a dump names the method (and the monitor's class).
//!
//! [`DUMPS`] dumps, spread evenly over the window (at its 1/8, 3/8, 5/8 and 7/8), each
//! through HotSpot's attach protocol ([`attach`]) on a thread of its own: the window
//! waits for none. Each stops the JVM's threads at a safepoint while it is written (a few
//! ms for a few dozen threads; the run keeps each one's time). A dump the JVM does not
//! answer within [`DUMP_TIMEOUT`] is counted and said, never waited for longer; the run
//! keeps what the dumps showed (a [`JvmDumps`], the attachment
//! [`JVM_DUMPS_ATTACHMENT`]), not their text.
pub mod attach;
pub mod dump;
pub mod perfdata;

use kiln_os::stop::Stop;
use kiln_store::{Attachment, JvmDumps, JVM_DUMPS_ATTACHMENT};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many thread dumps a run takes of a JVM target.
pub const DUMPS: u32 = 4;
/// The longest one dump is waited for (starting the JVM's attach listener included).
pub const DUMP_TIMEOUT: Duration = Duration::from_secs(5);

/// The dumps of a window, being taken.
pub struct DumpSession {
    stop: Stop,
    thread: JoinHandle<JvmDumps>,
}

/// What the dumps gave the run.
#[derive(Debug, Default)]
pub struct DumpResult {
    /// The summary, as an attachment (none when no dump was asked for).
    pub attachments: Vec<Attachment>,
    /// What went wrong, counted.
    pub warnings: Vec<String>,
}

/// Starts taking `count` dumps of the JVM `pid` over a window of `window` starting now;
/// `None` when the process is not a JVM or `count` is 0. Returns at once.
pub fn begin(pid: u32, window: Duration, count: u32, stop: &Stop) -> Option<DumpSession> {
    if count == 0 || !kiln_record::is_jvm(pid) {
        return None;
    }
    let stop = stop.child();
    let own = stop.clone();
    let t0 = Instant::now();
    let thread = std::thread::Builder::new()
        .name("kiln-jvm-dumps".into())
        .spawn(move || take(pid, t0, window, count, &own))
        .ok()?;
    Some(DumpSession { stop, thread })
}

/// The dumps, at their times, until `stop`.
fn take(pid: u32, t0: Instant, window: Duration, count: u32, stop: &Stop) -> JvmDumps {
    let mut out = JvmDumps {
        pid,
        asked: count,
        ..JvmDumps::default()
    };
    for i in 0..count {
        let due = t0 + window.mul_f64((2 * i + 1) as f64 / (2 * count) as f64);
        if stop.sleep_until(due) {
            out.failures
                .push(format!("{} not taken: the window ended first", count - i));
            break;
        }
        let asked = Instant::now();
        match attach::thread_dump(pid, DUMP_TIMEOUT) {
            Ok(text) => {
                let took_ms = asked.elapsed().as_secs_f64() * 1e3;
                let parsed = dump::parse(&text);
                out.dumps.push(dump::summarise(
                    &parsed,
                    kiln_os::clock::monotonic_ns(),
                    took_ms,
                ));
            }
            Err(e) => out.failures.push(e.to_string()),
        }
    }
    out
}

impl DumpSession {
    /// Ends the session (call it as the window ends): dumps not yet due are not taken; one
    /// under way is waited for (at most [`DUMP_TIMEOUT`]).
    pub fn finish(self) -> DumpResult {
        self.stop.raise();
        let dumps = match self.thread.join() {
            Ok(d) => d,
            Err(_) => {
                return DumpResult {
                    attachments: Vec::new(),
                    warnings: vec!["JVM thread dumps: the thread taking them failed".into()],
                }
            }
        };
        let mut warnings = Vec::new();
        if !dumps.failures.is_empty() {
            let mut seen: Vec<(&str, usize)> = Vec::new();
            for f in &dumps.failures {
                match seen.iter_mut().find(|(s, _)| *s == f.as_str()) {
                    Some((_, n)) => *n += 1,
                    None => seen.push((f.as_str(), 1)),
                }
            }
            let said: Vec<String> = seen
                .iter()
                .map(|(f, n)| {
                    if *n > 1 {
                        format!("{f} ({n} times)")
                    } else {
                        f.to_string()
                    }
                })
                .collect();
            warnings.push(format!(
                "JVM thread dumps of {}: {} of {} taken; {}",
                dumps.pid,
                dumps.dumps.len(),
                dumps.asked,
                said.join("; ")
            ));
        }
        let attachments = serde_json::to_vec(&dumps)
            .map(|data| {
                vec![Attachment {
                    name: JVM_DUMPS_ATTACHMENT.into(),
                    data,
                }]
            })
            .unwrap_or_default();
        DumpResult {
            attachments,
            warnings,
        }
    }
}
