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
