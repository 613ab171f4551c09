//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

/// Why a program (the off-CPU collector, the sampler) could not start or read its
/// results.
///
/// Every variant names the program and says what is missing and, where there is
/// one, how to fix it: these messages reach the user of `kiln record` unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BpfError {
    /// The kernel refused a BPF operation for lack of privileges.
    #[error(
        "{action} was refused ({detail}): eBPF needs root, or CAP_BPF with CAP_PERFMON \
         (e.g. `sudo setcap cap_bpf,cap_perfmon+ep $(which kiln)`)"
    )]
    PermissionDenied {
        /// What was being done (names the program).
        action: String,
        /// The kernel's answer.
        detail: String,
    },
    /// The kernel publishes no BTF, which `tp_btf` programs and CO-RE need.
    #[error(
        "the kernel has no BTF type information ({} is missing): kiln's eBPF programs (off-CPU \
         time, stacks unwound in the kernel) need a kernel built with CONFIG_DEBUG_INFO_BTF=y \
         (Debian, Ubuntu, Fedora and RHEL kernels are)",
        path.display()
    )]
    NoKernelBtf {
        /// The file that should exist.
        path: PathBuf,
    },
    /// The verifier (or libbpf while preparing the program) rejected it.
    #[error(
        "the kernel rejected the {program} eBPF program ({detail}); it needs Linux >= 5.18 with \
         tp_btf, task storage and bpf_loop support. Verifier/libbpf log (last lines):\n{log}"
    )]
    ProgramRejected {
        /// The program (`off-CPU`, `sampling`).
        program: &'static str,
        /// The error returned by the load.
        detail: String,
        /// The tail of what libbpf and the verifier printed.
        log: String,
    },
    /// Attaching a program to its event failed.
    #[error("attaching the {program} eBPF program to {event} failed: {detail}")]
    Attach {
        /// The program (`off-CPU`, `sampling`).
        program: &'static str,
        /// The event it was being attached to (`sched:sched_switch`, a perf event).
        event: &'static str,
        /// The error returned by the attach.
        detail: String,
    },
    /// A requested process does not exist.
    #[error("no process with pid {pid} (nothing at /proc/{pid}); check the pid, or that the process is still running")]
    NoSuchProcess {
        /// The pid that was asked for.
        pid: u32,
    },
    /// The configuration cannot be honoured.
    #[error("invalid eBPF program configuration: {0}")]
    InvalidConfig(String),
    /// A BPF map operation failed while reading or configuring the collector.
    #[error("{action} failed: {detail}")]
    Map {
        /// What was being done.
        action: &'static str,
        /// The error returned.
        detail: String,
    },
    /// Reading a file under /proc or /sys failed.
    #[error("reading {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}
