//! Recording a live target with `perf_event_open`: one ring buffer per CPU, read as the
//! kernel fills it, every sample unwound on arrival.
use crate::collect::{Collector, Summary};
use crate::error::RecordError;
use crate::events::EventSpec;
use crate::records::{self, Scratch};
use crate::sys::{self, PerfEventAttr, RingBuffer};
use crate::{RecordOptions, Target};
use kiln_model::{EventInfo, Profile};
use linux_perf_data::linux_perf_event_reader::{
    Endianness, RawData, RawEventRecord, RecordParseInfo, RecordType,
};
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// The result of a recording.
#[derive(Debug)]
#[non_exhaustive]
pub struct Recording {
    /// One profile per event, in the order the events were given.
    pub profiles: Vec<Profile>,
    /// How complete the recording is.
    pub summary: Summary,
    /// Why the recording stopped.
    pub stopped: StopReason,
    /// Exit status of the spawned command, if it exited.
    pub exit_status: Option<ExitStatus>,
    /// Time from the end of sampling to the finished profiles (reading what was left in
    /// the buffers, unwinding it, naming every frame), excluding the wait for a started
    /// command to stop. The "results seconds after the load stops" promise is measured
    /// on this.
    pub processing: Duration,
    /// When sampling began and ended, CLOCK_MONOTONIC ns (the clock of the samples).
    pub sampling: (u64, u64),
}

impl Recording {
    /// When sampling began and ended, CLOCK_MONOTONIC ns: the window the profiles cover.
    pub fn sampling_window(&self) -> Option<(u64, u64)> {
        (self.sampling.1 > self.sampling.0).then_some(self.sampling)
    }
}

/// Why a recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The duration passed.
    Duration,
    /// The stop flag was raised (Ctrl-C).
    Interrupted,
    /// Every target process exited.
    TargetExited,
}

/// An event to open: its index among the recording's events, what it is, its
/// attributes, and its in-kernel sampler slot when its stacks are unwound in the kernel.
type EventAttr = (usize, EventSpec, PerfEventAttr, Option<u32>);

#[cfg(feature = "bpf")]
type KernelUnwinder = Option<crate::inkernel::InKernel>;
#[cfg(not(feature = "bpf"))]
type KernelUnwinder = Option<std::convert::Infallible>;

/// Attaches the in-kernel unwinder to an event that has a sampler slot; returns whether
/// it did.
#[cfg(feature = "bpf")]
fn attach_sampler(
    k: &mut KernelUnwinder,
    fd: &OwnedFd,
    slot: Option<u32>,
) -> Result<bool, RecordError> {
    match (k, slot) {
        (Some(k), Some(slot)) => k.attach(fd, slot).map(|()| true),
        _ => Ok(false),
    }
}

#[cfg(not(feature = "bpf"))]
fn attach_sampler(
    _: &mut KernelUnwinder,
    _: &OwnedFd,
    _: Option<u32>,
) -> Result<bool, RecordError> {
    Ok(false)
}

/// Loads the in-kernel unwinder if the mode and the events call for it. In `Auto` mode a
/// failure is a warning (stacks are then unwound from copies); in `Kernel` mode, an error.
#[cfg(feature = "bpf")]
fn load_unwinder(
    mode: crate::UnwindMode,
    wanted: bool,
    warnings: &mut Vec<String>,
) -> Result<KernelUnwinder, RecordError> {
    use crate::UnwindMode;
    if mode == UnwindMode::Copy || !wanted {
        return Ok(None);
    }
    match crate::inkernel::InKernel::load() {
        Ok(k) => Ok(Some(k)),
        Err(e) if mode == UnwindMode::Auto => {
            warnings.push(format!("{e}; stacks are unwound from copies of the stack"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(not(feature = "bpf"))]
fn load_unwinder(
    mode: crate::UnwindMode,
    _: bool,
    _: &mut Vec<String>,
) -> Result<KernelUnwinder, RecordError> {
    if mode == crate::UnwindMode::Kernel {
        return Err(RecordError::InKernelUnwind(
            "this kiln was built without the `bpf` feature (eBPF)".into(),
        ));
    }
    Ok(None)
}

/// Gives the kernel new mappings, then moves its samples into the collector.
#[cfg(feature = "bpf")]
fn drain_unwinder(k: &mut KernelUnwinder, c: &mut Collector) {
    if let Some(k) = k {
        k.sync(c);
        k.drain(c);
    }
}

#[cfg(not(feature = "bpf"))]
fn drain_unwinder(_: &mut KernelUnwinder, _: &mut Collector) {}

/// Takes the kernel side's final counters into the summary and detaches the program.
#[cfg(feature = "bpf")]
fn finish_unwinder(k: KernelUnwinder, c: &mut Collector) {
    if let Some(mut k) = k {
        k.finish(c);
        c.summary.in_kernel = Some(k.summary);
    }
}

#[cfg(not(feature = "bpf"))]
fn finish_unwinder(_: KernelUnwinder, _: &mut Collector) {}

struct Opened {
    fds: Vec<OwnedFd>,
    buffers: Vec<RingBuffer>,
    /// Buffer index per CPU (position in `cpus`).
    leader: HashMap<i32, usize>,
    ids: HashMap<u64, usize>,
    /// (tid, cpu) pairs already opened.
    done: HashSet<(i32, i32)>,
}

fn open_error(e: io::Error, event: &EventSpec, tid: i32) -> RecordError {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => RecordError::Permission {
            event: event.name(),
            paranoid: sys::paranoid(),
            source: e,
        },
        Some(libc::ESRCH) => RecordError::NoSuchProcess(tid as u32),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => RecordError::UnknownEvent {
            name: event.name(),
            why: format!("the kernel does not support it ({e})"),
        },
        _ => RecordError::sys(format!("perf_event_open for '{}'", event.name()), e),
    }
}

impl Opened {
    /// Opens every event for `tid` (-1: all tasks) on every CPU; events with a sampler
    /// slot get the in-kernel unwinder attached before they are enabled.
    fn open_task(
        &mut self,
        attrs: &[EventAttr],
        tid: i32,
        cpus: &[i32],
        pages: usize,
        enable_now: bool,
        kernel: &mut KernelUnwinder,
    ) -> Result<(), RecordError> {
        for &cpu in cpus {
            if !self.done.insert((tid, cpu)) {
                continue;
            }
            for (k, (index, spec, attr, slot)) in attrs.iter().enumerate() {
                let mut a = *attr;
                if k == 0 {
                    // One event per (task, CPU) reports mappings, names and forks.
                    a.flags |= sys::FLAG_MMAP
                        | sys::FLAG_MMAP2
                        | sys::FLAG_COMM
                        | sys::FLAG_COMM_EXEC
                        | sys::FLAG_TASK;
                }
                let fd =
                    sys::perf_event_open(&a, tid, cpu).map_err(|e| open_error(e, spec, tid))?;
                if attach_sampler(kernel, &fd, *slot)? && !enable_now {
                    // Attaching enables the event (libbpf does); keep it off until the
                    // kernel has the processes' tables (or until exec, for a command).
                    sys::disable(&fd);
                }
                let id =
                    sys::event_id(&fd).map_err(|e| RecordError::sys("PERF_EVENT_IOC_ID", e))?;
                self.ids.insert(id, *index);
                match self.leader.get(&cpu) {
                    Some(&b) => {
                        sys::set_output(&fd, self.buffers[b].fd())
                            .map_err(|e| RecordError::sys("PERF_EVENT_IOC_SET_OUTPUT", e))?;
                        if enable_now {
                            sys::enable(&fd)
                                .map_err(|e| RecordError::sys("PERF_EVENT_IOC_ENABLE", e))?;
                        }
                        self.fds.push(fd);
                    }
                    None => {
                        let dup = fd.try_clone().map_err(|e| RecordError::sys("dup", e))?;
                        let rb = RingBuffer::new(dup, pages)
                            .map_err(|e| RecordError::sys("mmap of the perf ring buffer", e))?;
                        if enable_now {
                            sys::enable(&fd)
                                .map_err(|e| RecordError::sys("PERF_EVENT_IOC_ENABLE", e))?;
                        }
                        self.leader.insert(cpu, self.buffers.len());
                        self.buffers.push(rb);
                        self.fds.push(fd);
                    }
                }
            }
        }
        Ok(())
    }
}

fn tasks_of(pid: u32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Byte `i` of a sample's raw data, which may wrap around the ring buffer's end.
fn raw_byte(raw: &RawData<'_>, i: usize) -> Option<u8> {
    match raw {
        RawData::Single(a) => a.get(i).copied(),
        RawData::Split(a, b) => a.get(i).or_else(|| b.get(i - a.len())).copied(),
    }
}

/// Every process now running.
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            // The state follows the parenthesised command name.
            let state = s.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// A program we started, held before `exec` until the events are attached.
struct HeldChild {
    pid: i32,
    release: Option<OwnedFd>,
    exec_errors: OwnedFd,
    status: Option<ExitStatus>,
}

impl HeldChild {
    /// Forks; the child waits for one byte on a pipe, then execs `argv`, so the events
    /// can be attached (with `enable_on_exec`) before the program runs. (`Command::spawn`
    /// cannot do this: it waits for the `exec` itself.)
    fn spawn(argv: &[std::ffi::OsString]) -> Result<HeldChild, RecordError> {
        use std::os::unix::ffi::OsStrExt;
        let spawn_err = |source: io::Error| RecordError::Spawn {
            command: argv[0].to_string_lossy().into_owned(),
            source,
        };
        let cargs: Vec<std::ffi::CString> = argv
            .iter()
            .map(|a| std::ffi::CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                spawn_err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "argument contains a NUL byte",
                ))
            })?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let pipe = || -> Result<(OwnedFd, OwnedFd), RecordError> {
            let mut fds = [0i32; 2];
            // SAFETY: pipe2 fills two descriptors.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(RecordError::sys("pipe", io::Error::last_os_error()));
            }
            // SAFETY: both descriptors are fresh and ours.
            unsafe {
                Ok((
                    <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[0]),
                    <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1]),
                ))
            }
        };
        let (go_rd, go_wr) = pipe()?;
        let (err_rd, err_wr) = pipe()?;
        use std::os::fd::AsRawFd;
        let (go_rd_fd, err_wr_fd) = (go_rd.as_raw_fd(), err_wr.as_raw_fd());
        // SAFETY: after fork the child only calls async-signal-safe functions (read,
        // execvp, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; the child never returns from this block.
            unsafe {
                let mut b = 0u8;
                if libc::read(go_rd_fd, &mut b as *mut u8 as *mut libc::c_void, 1) == 1 {
                    libc::execvp(ptrs[0], ptrs.as_ptr());
                }
                let e = *libc::__errno_location();
                libc::write(err_wr_fd, &e as *const i32 as *const libc::c_void, 4);
                libc::_exit(127);
            }
        }
        drop(go_rd);
        drop(err_wr);
        Ok(HeldChild {
            pid,
            release: Some(go_wr),
            exec_errors: err_rd,
            status: None,
        })
    }

    /// Lets the child exec; fails if the exec failed.
    fn release(&mut self, argv0: &std::ffi::OsStr) -> Result<(), RecordError> {
        use std::os::fd::AsRawFd;
        if let Some(w) = self.release.take() {
            // SAFETY: writing one byte to our pipe end.
            unsafe { libc::write(w.as_raw_fd(), b"g".as_ptr() as *const libc::c_void, 1) };
        }
        let mut e = 0i32;
        // SAFETY: reading at most 4 bytes into an i32; EOF (0) means the exec succeeded.
        let n = unsafe {
            libc::read(
                self.exec_errors.as_raw_fd(),
                &mut e as *mut i32 as *mut libc::c_void,
                4,
            )
        };
        if n == 4 {
            self.wait_blocking();
            return Err(RecordError::Spawn {
                command: argv0.to_string_lossy().into_owned(),
                source: io::Error::from_raw_os_error(e),
            });
        }
        Ok(())
    }

    fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child without blocking.
            if unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) } == self.pid {
                self.status = Some(std::os::unix::process::ExitStatusExt::from_raw(st));
            }
        }
        self.status
    }

    fn wait_blocking(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            if unsafe { libc::waitpid(self.pid, &mut st, 0) } == self.pid {
                self.status = Some(std::os::unix::process::ExitStatusExt::from_raw(st));
            }
        }
        self.status
    }

    /// Stops the child we started: SIGTERM, then SIGKILL after two seconds.
    fn stop(&mut self) -> Option<ExitStatus> {
        if let Some(s) = self.try_wait() {
            return Some(s);
        }
        self.release.take();
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(self.pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        self.wait_blocking()
    }
}

/// Records `opts.target` until the duration passes, the stop flag is raised or the
/// target exits, and returns one profile per event. What was recorded is always returned,
/// however the recording ends.
pub fn record(opts: &RecordOptions) -> Result<Recording, RecordError> {
    if opts.events.is_empty() {
        return Err(RecordError::InvalidOption("no event to record".into()));
    }
    record_events(opts, &opts.events)
}

fn record_events(opts: &RecordOptions, events: &[EventSpec]) -> Result<Recording, RecordError> {
    if opts.frequency == 0 {
        return Err(RecordError::InvalidOption(
            "the frequency (-F) must be at least 1 Hz".into(),
        ));
    }
    if !opts.stack_bytes.is_multiple_of(8) || opts.stack_bytes > 65528 {
        return Err(RecordError::InvalidOption(
            "the user stack copy must be a multiple of 8 bytes, at most 65528".into(),
        ));
    }
    raise_fd_limit();
    // Events weighed by a tracepoint argument need the raw data of their samples.
    let weigh: Vec<Option<(usize, usize)>> = events
        .iter()
        .map(EventSpec::weight_field)
        .collect::<Result<_, _>>()?;
    let raw = if weigh.iter().any(Option::is_some) {
        sys::SAMPLE_RAW
    } else {
        0
    };
    let sample_type = raw
        | sys::SAMPLE_IDENTIFIER
        | sys::SAMPLE_IP
        | sys::SAMPLE_TID
        | sys::SAMPLE_TIME
        | sys::SAMPLE_CPU
        | sys::SAMPLE_PERIOD
        | sys::SAMPLE_CALLCHAIN
        | if opts.stack_bytes > 0 {
            sys::SAMPLE_REGS_USER | sys::SAMPLE_STACK_USER
        } else {
            0
        };
    let pages = opts.buffer_pages.next_power_of_two().max(8);
    let page_size = 4096u32;
    let spawned = matches!(opts.target, Target::Command(_));
    let mut warnings = Vec::new();
    // Software events (cpu-clock, page-faults) can have their stacks unwound in the
    // kernel; tracepoints cannot take the sampling program.
    let sampled_in_kernel = |ev: &EventSpec| -> bool {
        matches!(ev.perf_config(opts.frequency), Ok((t, ..)) if t == sys::PERF_TYPE_SOFTWARE)
    };
    let mut kernel = load_unwinder(
        opts.unwind,
        events.iter().any(sampled_in_kernel),
        &mut warnings,
    )?;
    let mut attrs: Vec<EventAttr> = Vec::new();
    for (index, ev) in events.iter().enumerate() {
        if *ev == EventSpec::OffCpu {
            continue;
        }
        let (type_, config, period, freq) = ev.perf_config(opts.frequency)?;
        let slot = match kernel.as_mut() {
            #[cfg(feature = "bpf")]
            Some(k) if sampled_in_kernel(ev) => k.slot_for(index),
            _ => None,
        };
        let mut flags = sys::FLAG_DISABLED
            | sys::FLAG_SAMPLE_ID_ALL
            | sys::FLAG_USE_CLOCKID
            | sys::FLAG_WATERMARK;
        if freq {
            flags |= sys::FLAG_FREQ;
        }
        if slot.is_some() {
            // Unwound in the kernel: perf's own samples (for processes without tables
            // yet) need no frame-pointer walk of the user stack; they carry a copy.
            flags |= sys::FLAG_EXCLUDE_CALLCHAIN_USER;
        }
        if !matches!(opts.target, Target::System) {
            flags |= sys::FLAG_INHERIT;
        }
        if spawned {
            flags |= sys::FLAG_ENABLE_ON_EXEC;
        }
        attrs.push((
            index,
            ev.clone(),
            PerfEventAttr {
                type_,
                config,
                sample_period_or_freq: period,
                sample_type,
                flags,
                wakeup: (pages as u32 * page_size) / 4,
                sample_regs_user: if opts.stack_bytes > 0 {
                    sys::REGS_MASK_X86_64
                } else {
                    0
                },
                sample_stack_user: opts.stack_bytes,
                clockid: libc::CLOCK_MONOTONIC,
                sample_max_stack: 127,
                ..Default::default()
            },
            slot,
        ));
    }
    if attrs.is_empty() {
        // Off-CPU alone: a dummy event that never samples still reports mappings, names
        // and forks, which unwinding and naming the off-CPU stacks need after the
        // processes are gone.
        let flags = sys::FLAG_DISABLED
            | sys::FLAG_SAMPLE_ID_ALL
            | sys::FLAG_USE_CLOCKID
            | if matches!(opts.target, Target::System) {
                0
            } else {
                sys::FLAG_INHERIT
            }
            | if spawned { sys::FLAG_ENABLE_ON_EXEC } else { 0 };
        attrs.push((
            usize::MAX,
            EventSpec::OffCpu,
            PerfEventAttr {
                type_: sys::PERF_TYPE_SOFTWARE,
                config: sys::PERF_COUNT_SW_DUMMY,
                sample_period_or_freq: 1,
                sample_type,
                flags,
                sample_regs_user: if opts.stack_bytes > 0 {
                    sys::REGS_MASK_X86_64
                } else {
                    0
                },
                sample_stack_user: opts.stack_bytes,
                clockid: libc::CLOCK_MONOTONIC,
                ..Default::default()
            },
            None,
        ));
    }
    // Resolve tracepoints etc. before spawning anything.
    let parse_attr_bytes = attrs
        .first()
        .map(|a| a.2)
        .unwrap_or(PerfEventAttr {
            sample_type,
            flags: sys::FLAG_SAMPLE_ID_ALL,
            ..Default::default()
        })
        .to_bytes();
    let (reader_attr, _) = linux_perf_data::linux_perf_event_reader::PerfEventAttr::parse::<
        _,
        byteorder::NativeEndian,
    >(&parse_attr_bytes[..])
    .map_err(|e| RecordError::sys("perf_event_attr", e))?;
    let parse_info = RecordParseInfo::new(&reader_attr, Endianness::NATIVE);

    let cpus = sys::online_cpus();
    let mut opened = Opened {
        fds: Vec::new(),
        buffers: Vec::new(),
        leader: HashMap::new(),
        ids: HashMap::new(),
        done: HashSet::new(),
    };
    let mut child: Option<HeldChild> = None;
    let pids: Vec<u32> = match &opts.target {
        Target::Pids(pids) => {
            if pids.is_empty() {
                return Err(RecordError::InvalidOption("no PID given".into()));
            }
            for &p in pids {
                if !alive(p) {
                    return Err(RecordError::NoSuchProcess(p));
                }
            }
            pids.clone()
        }
        Target::Command(argv) => {
            if argv.is_empty() {
                return Err(RecordError::InvalidOption("no command given".into()));
            }
            let c = HeldChild::spawn(argv)?;
            let pid = c.pid as u32;
            child = Some(c);
            vec![pid]
        }
        Target::System => Vec::new(),
    };
    let opened_result = (|| -> Result<(), RecordError> {
        match &opts.target {
            Target::System => opened.open_task(&attrs, -1, &cpus, pages, false, &mut kernel)?,
            _ => {
                for &p in &pids {
                    for tid in tasks_of(p) {
                        match opened.open_task(&attrs, tid, &cpus, pages, false, &mut kernel) {
                            Err(RecordError::NoSuchProcess(_)) if tid != p as i32 => {}
                            r => r?,
                        }
                    }
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = opened_result {
        if let Some(mut c) = child.take() {
            c.stop();
        }
        return Err(e);
    }
    let mut collector = Collector::new(
        events
            .iter()
            .map(|e| EventInfo {
                name: e.name(),
                unit: e.unit(),
                ..Default::default()
            })
            .collect(),
        opts.naming,
        true,
    );
    collector.summary.warnings = warnings;
    collector.preload_kallsyms();
    if kernel.is_some() {
        // The kernel needs the mappings of what it will sample before it samples.
        // (A started command's mappings come with its exec; before it, the held child
        // is a copy of this process, whose tables would be wrong after the exec.)
        match &opts.target {
            Target::System => all_pids().into_iter().for_each(|p| collector.track(p)),
            Target::Pids(p) => p.iter().for_each(|&p| collector.track(p)),
            Target::Command(_) => {}
        }
        drain_unwinder(&mut kernel, &mut collector);
    }
    if !spawned {
        for fd in &opened.fds {
            sys::enable(fd).map_err(|e| RecordError::sys("PERF_EVENT_IOC_ENABLE", e))?;
        }
        // Threads started while we were opening: attach to them too (new threads of
        // threads we already follow are inherited by the kernel).
        for _ in 0..3 {
            let before = opened.done.len();
            for &p in &pids {
                for tid in tasks_of(p) {
                    match opened.open_task(&attrs, tid, &cpus, pages, true, &mut kernel) {
                        Ok(()) | Err(RecordError::NoSuchProcess(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if opened.done.len() == before {
                break;
            }
        }
    }
    let mut offcpu = match events.iter().position(|e| *e == EventSpec::OffCpu) {
        Some(index) => {
            let pids = (!matches!(opts.target, Target::System)).then(|| pids.clone());
            match crate::offcpu::OffCpu::start(
                pids,
                opts.stack_bytes,
                opts.offcpu_min_block_us,
                index,
            ) {
                Ok(o) => Some(o),
                Err(e) => {
                    if let Some(mut c) = child.take() {
                        c.stop();
                    }
                    return Err(e);
                }
            }
        }
        None => None,
    };
    if let (Some(c), Target::Command(argv)) = (&mut child, &opts.target) {
        // Let the held child exec; the events enable themselves at exec.
        c.release(&argv[0])?;
    }

    let ids = opened.ids.clone();
    let is_cpu: Vec<bool> = events.iter().map(|e| *e == EventSpec::Cpu).collect();
    let event_of =
        move |s: &linux_perf_data::linux_perf_event_reader::SampleRecord<'_>| -> Option<usize> {
            s.id.and_then(|id| ids.get(&id).copied())
        };
    let weight_of = move |ev: usize,
                          s: &linux_perf_data::linux_perf_event_reader::SampleRecord<'_>|
          -> Option<u64> {
        if let Some((off, _)) = weigh[ev] {
            let raw = s.raw.as_ref()?;
            let mut b = [0u8; 8];
            for (i, byte) in b.iter_mut().enumerate() {
                *byte = raw_byte(raw, off + i)?;
            }
            Some(u64::from_ne_bytes(b))
        } else if is_cpu[ev] {
            Some(1)
        } else {
            Some(s.period.unwrap_or(1).max(1))
        }
    };
    let mut scratch = Scratch::default();
    let drain_all = |opened: &mut Opened, collector: &mut Collector, scratch: &mut Scratch| {
        for rb in opened.buffers.iter_mut() {
            rb.drain(|rtype, misc, a, b| {
                let data = if b.is_empty() {
                    RawData::Single(a)
                } else {
                    RawData::Split(a, b)
                };
                let rt = RecordType(rtype);
                if !rt.is_builtin_type() {
                    return;
                }
                let raw = RawEventRecord::new(rt, misc, data, parse_info);
                match raw.parse() {
                    Ok(r) => records::handle(collector, scratch, r, &event_of, &weight_of),
                    Err(_) => collector.summary.bad_records += 1,
                }
            });
        }
    };

    let start = Instant::now();
    let sampling_start_ns = kiln_model::clock::monotonic_ns();
    let mut last_offcpu = Instant::now();
    // With in-kernel unwinding, mappings reach the kernel when the rings are read: read
    // them often, so that a new process (a started command right after its exec) is
    // walked with its tables within milliseconds.
    let poll_ms = if kernel.is_some() { 10 } else { 100 };
    let stopped = loop {
        if opened.buffers.is_empty() {
            std::thread::sleep(Duration::from_millis(poll_ms as u64));
        } else {
            let fds: Vec<&OwnedFd> = opened.buffers.iter().map(|b| b.fd()).collect();
            sys::poll(&fds, poll_ms);
        }
        drain_all(&mut opened, &mut collector, &mut scratch);
        drain_unwinder(&mut kernel, &mut collector);
        if let Some(o) = offcpu.as_mut() {
            if last_offcpu.elapsed() >= Duration::from_secs(1) {
                if let Err(e) = o.drain(&mut collector) {
                    collector.summary.warnings.push(e.to_string());
                    offcpu = None;
                }
                last_offcpu = Instant::now();
            }
        }
        if opts.stop.as_ref().is_some_and(|s| s.is_raised()) {
            break StopReason::Interrupted;
        }
        if opts.duration.is_some_and(|d| start.elapsed() >= d) {
            break StopReason::Duration;
        }
        let exited = match (&mut child, &opts.target) {
            (Some(c), _) => c.try_wait().is_some(),
            (None, Target::Pids(p)) => p.iter().all(|&p| !alive(p)),
            _ => false,
        };
        if exited {
            break StopReason::TargetExited;
        }
    };
    let stopped_at = Instant::now();
    let sampling_end_ns = kiln_model::clock::monotonic_ns();
    for fd in &opened.fds {
        sys::disable(fd);
    }
    drain_all(&mut opened, &mut collector, &mut scratch);
    drain_unwinder(&mut kernel, &mut collector);
    finish_unwinder(kernel, &mut collector);
    if let Some(o) = offcpu.as_mut() {
        if let Err(e) = o.drain(&mut collector) {
            collector.summary.warnings.push(e.to_string());
        }
        o.summarise(&mut collector);
    }
    drop(offcpu);
    // The recording may end first (duration, Ctrl-C): stop the program we started.
    let drained = stopped_at.elapsed();
    let exit_status = child.as_mut().and_then(|c| c.stop());
    drop(opened);
    let finish_start = Instant::now();
    let (profiles, summary) = collector.finish();
    let processing = drained + finish_start.elapsed();
    Ok(Recording {
        profiles,
        summary,
        stopped,
        exit_status,
        processing,
        sampling: (sampling_start_ns, sampling_end_ns),
    })
}
