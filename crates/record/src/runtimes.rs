//! Runtimes whose code is compiled at run time: how their JIT frames get names.
//!
//! A JIT writes what it compiled where to `/tmp/perf-<pid>.map` only when asked: the
//! BEAM with `+JPperf map`, Node with `--perf-basic-prof`, a JVM (JDK 17 and later) on
//! demand through `jcmd <pid> Compiler.perfmap`, which kiln asks for itself at the end of a
//! recording when the map is missing. What cannot be asked for afterwards is said, with
//! the runtime's own flags: its frame pointers (`-XX:+PreserveFramePointer`), the map
//! written from the start.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `jcmd` may take to write a JVM's perf map.
const JCMD_TIMEOUT: Duration = Duration::from_secs(15);

/// A runtime kiln knows how to name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// The Erlang VM.
    Beam,
    /// A Java virtual machine (HotSpot).
    Jvm,
    /// Node.js (V8).
    Node,
}

impl Runtime {
    /// The runtime of process `pid`, from its executable's name and, for JVMs started by a
    /// launcher of another name, the `libjvm.so` it mapped.
    pub(crate) fn of(pid: u32) -> Option<Runtime> {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let name = exe.file_name()?.to_string_lossy().into_owned();
        match name.as_str() {
            "beam.smp" | "beam" => Some(Runtime::Beam),
            "java" => Some(Runtime::Jvm),
            "node" | "nodejs" => Some(Runtime::Node),
            // Bytes: a mapped file's path need not be UTF-8.
            _ => kiln_os::proc::read(format!("/proc/{pid}/maps"))
                .ok()
                .filter(|m| m.windows(10).any(|w| w == b"/libjvm.so"))
                .map(|_| Runtime::Jvm),
        }
    }

    /// What to do for its JIT frames to be named, and its stacks walked through them.
    pub(crate) fn advice(self) -> &'static str {
        match self {
            Runtime::Beam => "start the VM with +JPperf map (and +JPfp true for stacks through JIT code; both are on with +JPperf true)",
            Runtime::Jvm => "start java with -XX:+PreserveFramePointer (stacks through JIT code); kiln asks a JVM of JDK 17 or later for its perf map itself (jcmd PID Compiler.perfmap)",
            Runtime::Node => "start node with --perf-basic-prof (or --perf-prof) and --interpreted-frames-native-stack",
        }
    }

    /// Whether `argv` (a process's command line) already asks the runtime for its perf map:
    /// then advising it to would be wrong.
    pub(crate) fn started_with_perf_map(self, argv: &[&[u8]]) -> bool {
        let has = |w: &[u8]| argv.contains(&w);
        match self {
            // `+JPperf map`, `+JPperf true` (map and frame pointers), or `+JPperf dump`'s
            // sibling values: any +JPperf but `false`/`none`.
            Runtime::Beam => argv
                .windows(2)
                // erlexec passes erl's +JPperf on to beam.smp as -JPperf.
                .any(|w| {
                    matches!(w[0], b"+JPperf" | b"-JPperf")
                        && !matches!(w[1], b"false" | b"none" | b"no")
                }),
            // kiln asks a JVM for its map itself (jcmd); the flag it advises is the
            // frame pointers'.
            Runtime::Jvm => has(b"-XX:+PreserveFramePointer"),
            Runtime::Node => {
                has(b"--perf-basic-prof")
                    || has(b"--perf-prof")
                    || has(b"--perf-basic-prof-only-functions")
            }
        }
    }

    /// [`Runtime::advice`] for process `pid`, checked against its command line: a runtime
    /// already started with its perf map is not told to start with it, but told where
    /// kiln looked for the map.
    pub(crate) fn advice_for(self, pid: u32) -> String {
        let cmdline = kiln_os::proc::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv: Vec<&[u8]> = cmdline
            .split(|&c| c == 0)
            .filter(|a| !a.is_empty())
            .collect();
        match (self, self.started_with_perf_map(&argv)) {
            (_, false) => self.advice().to_string(),
            (Runtime::Jvm, true) => format!(
                "it was started with -XX:+PreserveFramePointer (its command line says so); kiln asks a JVM of JDK 17 or later for its perf map itself (jcmd {pid} Compiler.perfmap): an older JVM needs a perf-map agent writing /tmp/perf-{pid}.map"
            ),
            (_, true) => format!(
                "it was started with its perf map on (its command line says so), yet kiln found no name in /tmp/perf-{pid}.map: a runtime in a container writes it to its own /tmp, and code made after the map was last written has no entry"
            ),
        }
    }
}

/// Whether process `pid` is a Java virtual machine (its executable is `java`, or it
/// mapped `libjvm.so`).
pub fn is_jvm(pid: u32) -> bool {
    Runtime::of(pid) == Some(Runtime::Jvm)
}

/// Makes sure process `pid` has a perf map when it can be asked for one: a JVM without
/// `/tmp/perf-<pid>.map` is asked with `jcmd <pid> Compiler.perfmap`. Returns a line for
/// the recording's warnings when it asked (what came of it), `None` when there was nothing
/// to ask.
pub(crate) fn ask_for_perf_map(pid: u32) -> Option<String> {
    let path = format!("/tmp/perf-{pid}.map");
    if Path::new(&path).exists() || Runtime::of(pid) != Some(Runtime::Jvm) {
        return None;
    }
    let child = Command::new("jcmd")
        .args([&pid.to_string(), "Compiler.perfmap"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Some(format!(
                "the JVM {pid} has no perf map and jcmd could not be run to ask for one ({e}): its JIT frames are [unknown]; install the JDK's jcmd or run jcmd {pid} Compiler.perfmap while it runs"
            ))
        }
    };
    let t = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t.elapsed() < JCMD_TIMEOUT => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    Some(match status {
        Some(s) if s.success() && Path::new(&path).exists() => {
            format!("the JVM {pid} wrote its perf map when kiln asked (jcmd {pid} Compiler.perfmap): its JIT frames are named")
        }
        Some(s) => format!(
            "jcmd {pid} Compiler.perfmap failed ({s}; JDK 17 or later writes perf maps): the JVM's JIT frames are [unknown]"
        ),
        None => format!(
            "jcmd {pid} Compiler.perfmap did not answer within {} s: the JVM's JIT frames are [unknown]",
            JCMD_TIMEOUT.as_secs()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advice to start a runtime with its perf map is given only to one whose command
    /// line does not already ask for it.
    #[test]
    fn advice_is_checked_against_the_command_line() {
        let beam: Vec<&[u8]> = vec![b"beam.smp", b"+JPperf", b"map", b"--", b"-root"];
        assert!(Runtime::Beam.started_with_perf_map(&beam));
        let passed: Vec<&[u8]> = vec![b"beam.smp", b"-W", b"w", b"-JPperf", b"map", b"--"];
        assert!(Runtime::Beam.started_with_perf_map(&passed));
        let off: Vec<&[u8]> = vec![b"beam.smp", b"+JPperf", b"false"];
        assert!(!Runtime::Beam.started_with_perf_map(&off));
        assert!(!Runtime::Beam.started_with_perf_map(&[b"beam.smp", b"+JPperf"]));
        let node: Vec<&[u8]> = vec![b"node", b"--perf-basic-prof", b"app.js"];
        assert!(Runtime::Node.started_with_perf_map(&node));
        assert!(!Runtime::Node.started_with_perf_map(&[b"node", b"app.js"]));
        let java: Vec<&[u8]> = vec![b"java", b"-XX:+PreserveFramePointer", b"Main"];
        assert!(Runtime::Jvm.started_with_perf_map(&java));
        // This test process is none of them: the plain advice.
        let me = std::process::id();
        assert_eq!(Runtime::Beam.advice_for(me), Runtime::Beam.advice());
    }
}
