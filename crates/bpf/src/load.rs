//! Loading eBPF objects: libbpf's log kept for error messages, and errors that say
//! what is missing.

use std::sync::Mutex;

use libbpf_rs::{ErrorKind, MapCore, MapFlags, PrintLevel};

use crate::BpfError;

/// Last lines libbpf printed while loading, for [`BpfError::ProgramRejected`].
static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn capture_libbpf(_level: PrintLevel, msg: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        log.push_str(&msg);
        if log.len() > 64 * 1024 {
            let cut = log.len() - 32 * 1024;
            let cut = (cut..log.len())
                .find(|&i| log.is_char_boundary(i))
                .unwrap_or(0);
            log.drain(..cut);
        }
    }
}

pub(crate) fn log_tail(lines: usize) -> String {
    let log = LIBBPF_LOG.lock().map(|l| l.clone()).unwrap_or_default();
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The errno under a libbpf error, found by walking its sources.
fn errno(e: &libbpf_rs::Error) -> Option<i32> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return io.raw_os_error();
        }
        cur = err.source();
    }
    None
}

/// EPERM always means missing privileges; EACCES does only for an
/// unprivileged caller (the verifier also answers EACCES when it rejects a
/// program, and then the log says why).
pub(crate) fn is_permission(e: &libbpf_rs::Error) -> bool {
    match errno(e) {
        Some(libc::EPERM) => true,
        Some(libc::EACCES) => unsafe_free_euid() != 0,
        _ => e.kind() == ErrorKind::PermissionDenied && unsafe_free_euid() != 0,
    }
}

/// The effective uid, read from /proc to stay free of `unsafe`.
fn unsafe_free_euid() -> u32 {
    // Bytes: kiln's own name (its executable's, as copied) need not be UTF-8.
    std::fs::read("/proc/self/status")
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// Missing privileges when the error says so, else what `other` makes of the error's text.
pub(crate) fn permission_or(
    action: &'static str,
    e: &libbpf_rs::Error,
    other: impl FnOnce(String) -> BpfError,
) -> BpfError {
    if is_permission(e) {
        BpfError::PermissionDenied {
            action: action.into(),
            detail: e.to_string(),
        }
    } else {
        other(e.to_string())
    }
}

pub(crate) fn map_err(action: &'static str) -> impl Fn(libbpf_rs::Error) -> BpfError {
    move |e| permission_or(action, &e, |detail| BpfError::Map { action, detail })
}

pub(crate) fn possible_cpus() -> Result<u32, BpfError> {
    let n = libbpf_rs::num_possible_cpus().map_err(|e| BpfError::Map {
        action: "counting possible CPUs",
        detail: e.to_string(),
    })?;
    u32::try_from(n).map_err(|_| BpfError::InvalidConfig(format!("{n} CPUs")))
}

/// The error of opening the embedded object of `program`.
pub(crate) fn open_error(program: &'static str) -> impl Fn(libbpf_rs::Error) -> BpfError {
    move |e| BpfError::ProgramRejected {
        program,
        detail: format!("opening its embedded object: {e}"),
        log: log_tail(20),
    }
}

/// The error of loading `program` (for `events`): missing privileges, or the verifier's
/// refusal with the end of its log.
pub(crate) fn load_error(
    program: &'static str,
    events: &'static str,
) -> impl Fn(libbpf_rs::Error) -> BpfError {
    move |e| {
        if is_permission(&e) {
            BpfError::PermissionDenied {
                action: format!("loading the {program} eBPF program (for {events})"),
                detail: e.to_string(),
            }
        } else {
            BpfError::ProgramRejected {
                program,
                detail: format!("loading it for {events}: {e}"),
                log: log_tail(40),
            }
        }
    }
}

/// Runs `f` (opening and loading a skeleton) with libbpf's messages captured for
/// [`log_tail`].
pub(crate) fn capturing_log<T>(f: impl FnOnce() -> T) -> T {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        log.clear();
    }
    let previous = libbpf_rs::set_print(Some((PrintLevel::Info, capture_libbpf)));
    let result = f();
    libbpf_rs::set_print(previous);
    result
}

/// Sums slot `i` of a per-CPU array of u64 counters over all CPUs.
pub(crate) fn percpu_counter(map: &dyn MapCore, i: u32) -> u64 {
    match map.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY) {
        Ok(Some(per_cpu)) => per_cpu
            .iter()
            .filter_map(|v| Some(u64::from_ne_bytes(v.get(0..8)?.try_into().ok()?)))
            .sum(),
        _ => 0,
    }
}

/// CPU time the kernel spent running eBPF programs, and how many times they ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgramCost {
    /// Nanoseconds of CPU spent in the programs (their callbacks included).
    pub run_time_ns: u64,
    /// Runs of the programs.
    pub runs: u64,
    /// Times the kernel did not run a program because another eBPF program was running
    /// on that CPU (`recursion_misses`): for a program attached to a perf event or a
    /// tracepoint, a sample the kernel dropped.
    pub missed: u64,
}

impl std::ops::Add for ProgramCost {
    type Output = ProgramCost;
    fn add(self, o: ProgramCost) -> ProgramCost {
        ProgramCost {
            run_time_ns: self.run_time_ns + o.run_time_ns,
            runs: self.runs + o.runs,
            missed: self.missed + o.missed,
        }
    }
}

/// While it lives, the kernel measures the run time of every eBPF program
/// (`BPF_ENABLE_STATS`, as `sysctl kernel.bpf_stats_enabled=1` does, but scoped to this
/// descriptor): what kiln's own programs cost the machine. Measuring adds two clock reads
/// to each program run.
#[derive(Debug)]
pub struct RunTimeStats {
    /// Measuring stops when it is closed.
    _held: std::os::fd::OwnedFd,
}

impl RunTimeStats {
    /// Starts measuring. Fails without CAP_SYS_ADMIN, or on kernels before 5.8.
    pub fn enable() -> Result<RunTimeStats, BpfError> {
        // SAFETY: a plain syscall wrapper; it returns a new descriptor or a negative errno.
        let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
        if fd < 0 {
            return Err(BpfError::Map {
                action: "asking the kernel to measure eBPF programs' run time",
                detail: std::io::Error::from_raw_os_error(-fd).to_string(),
            });
        }
        // SAFETY: `fd` was just returned to us and is owned by nobody else.
        let held = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(RunTimeStats { _held: held })
    }
}

/// The run time and runs of the program behind `fd` so far (zero before
/// [`RunTimeStats::enable`], or when the kernel does not say), and its misses (counted
/// whether or not run times are).
pub(crate) fn cost_of(fd: std::os::fd::BorrowedFd<'_>) -> ProgramCost {
    use std::os::fd::AsRawFd;
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is a zeroed bpf_prog_info of `len` bytes with no pointers set, so
    // the kernel writes only into it.
    let r = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if r != 0 {
        return ProgramCost::default();
    }
    ProgramCost {
        run_time_ns: info.run_time_ns,
        runs: info.run_cnt,
        missed: info.recursion_misses,
    }
}
