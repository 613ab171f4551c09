//! Errors of the recorder.
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can stop a recording or a perf.data read.
///
/// Each variant says what is missing and, where the fix is known, how to get it: a
/// profiler is usually run by someone in the middle of an incident, not by someone who
/// has time to read kernel documentation.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// `perf_event_open` was refused for lack of privilege.
    #[error(
        "no permission to open perf event '{event}' ({source}); kernel.perf_event_paranoid is {paranoid}. \
         Run as root, give the binary CAP_PERFMON (setcap cap_perfmon,cap_sys_ptrace+ep kiln), \
         or lower the setting: sysctl kernel.perf_event_paranoid=1"
    )]
    Permission {
        /// The event being opened.
        event: String,
        /// The current `/proc/sys/kernel/perf_event_paranoid` value ("unknown" if unreadable).
        paranoid: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// The process to attach to does not exist.
    #[error("no process with PID {0}: check the PID with `ps -p {0}` (it may have exited)")]
    NoSuchProcess(u32),
    /// The event name is not one kiln knows and no tracepoint has that name.
    #[error("unknown event '{name}': {why}")]
    UnknownEvent {
        /// The name as given.
        name: String,
        /// Why it was not found, and the fix.
        why: String,
    },
    /// The kernel's tracing file system is not available.
    #[error(
        "tracepoint '{event}' needs tracefs, which is not mounted and could not be mounted: {why}. \
         Mount it with: mount -t tracefs nodev /sys/kernel/tracing"
    )]
    NoTracefs {
        /// The tracepoint asked for.
        event: String,
        /// The mount error.
        why: String,
    },
    /// The off-CPU collector (eBPF) is not available.
    #[error("off-CPU profiling is not available: {0}")]
    OffCpu(String),
    /// In-kernel unwinding (eBPF) was asked for and is not available.
    #[error("in-kernel unwinding is not available: {0}. Use --unwind copy to unwind copies of the stack instead")]
    InKernelUnwind(String),
    /// A command line option has a value that cannot work.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// The command to profile could not be started.
    #[error("failed to start '{command}': {source}")]
    Spawn {
        /// The program name.
        command: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A system call failed.
    #[error("{what} failed: {source}")]
    Sys {
        /// The operation.
        what: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A perf.data file could not be read.
    #[error("{path}: {why}")]
    PerfData {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// Building the profile failed (a table outgrew the model).
    #[error(transparent)]
    Model(#[from] kiln_model::ModelError),
}

impl RecordError {
    pub(crate) fn sys(what: impl Into<String>, source: std::io::Error) -> Self {
        RecordError::Sys {
            what: what.into(),
            source,
        }
    }
}
