//! Recording a live target with `perf_event_open`: one ring buffer per CPU, read as the
//! kernel fills it, every sample unwound on arrival.
//!
//! [`record`] goes through stages a reader can follow one function at a time:
//!
//! 1. [`Plan::new`]: check the options, turn the events into `perf_event_attr`s.
//! 2. [`Started::new`]: start the target (a held command, or check the pids) and, on a
//!    thread of their own, load the eBPF programs (the verifier takes a good part of a
//!    second, more on a loaded machine) while this thread opens the perf events.
//! 3. [`Started::attach`]: attach the in-kernel unwinder to the events, enable them,
//!    read each target's `/proc/PID/maps` once (for the unwinders, the names and the
//!    off-CPU caller hash), let the command `exec`. Sampling starts here
//!    ([`Recording::startup`]).
//! 4. [`Running::drain_until_stop`]: read the rings until the duration passes, the stop
//!    is raised or the target exits.
//! 5. [`Running::finish`]: read what is left, stop a started command, and build the
//!    profiles (naming every frame). Symbol tables and unwind tables are built on a
//!    second thread as images appear (see `Images::with_tables_thread`), not on the
//!    thread that drains the rings, so they are ready, or nearly, when sampling stops.
//!
//! Writing the profiles is the caller's (the `kiln` binary writes `.folded`, `.svg`,
//! `.html` or `.kiln`).
use crate::child::HeldChild;
use crate::collect::{Collector, RecordingSummary};
use crate::error::RecordError;
use crate::events::EventSpec;
use crate::records::{self, Scratch, Weigh, Weigher};
use crate::sys::{self, PerfEventAttr, RingBuffer};
use crate::{RecordOptions, Target, UnwindMode};
use kiln_model::{EventInfo, Profile, WeightUnit};
use linux_perf_data::linux_perf_event_reader::{
    Endianness, RawData, RawEventRecord, RecordParseInfo, RecordType, SampleRecord,
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
    pub summary: RecordingSummary,
    /// Why the recording stopped.
    pub stopped: StopReason,
    /// Exit status of the spawned command, if it exited.
    pub exit_status: Option<ExitStatus>,
    /// Time from the call to the events being enabled (loading the eBPF programs,
    /// opening the events, reading `/proc`): the wait before the first sample.
    pub startup: Duration,
    /// Time from the end of sampling to the finished profiles (reading what was left in
    /// the buffers, unwinding it, naming every frame), excluding the wait for a started
    /// command to stop. The "results seconds after the load stops" promise is measured
    /// on this.
    pub processing: Duration,
    /// Of `processing`: reading what was left in the buffers (and unwinding it).
    pub final_drain: Duration,
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

/// Records `opts.target` until the duration passes, the stop flag is raised or the
/// target exits, and returns one profile per event. What was recorded is always returned,
/// however the recording ends.
pub fn record(opts: &RecordOptions) -> Result<Recording, RecordError> {
    let launched = Instant::now();
    let plan = Plan::new(opts)?;
    let started = Started::new(opts, plan)?;
    let mut running = started.attach(opts)?;
    let startup = launched.elapsed();
    let stopped = running.drain_until_stop(opts);
    let mut rec = running.finish(stopped);
    rec.startup = startup;
    Ok(rec)
}

/// What a slot of the in-kernel sampler is loaded for: sampling events, or a tracepoint
/// whose samples carry the 8-byte field at this offset of its data (the event's weight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotUse {
    Sampling,
    Tracepoint(Option<u32>),
}

/// An event to open: its index among the recording's events, what it is, its
/// attributes, and its in-kernel sampler slot when its stacks are unwound in the kernel.
struct EventAttr {
    index: usize,
    spec: EventSpec,
    attr: PerfEventAttr,
    slot: Option<u32>,
}

/// Stage 1: what to open, and how to read and weigh what it gives.
struct Plan {
    attrs: Vec<EventAttr>,
    parse_info: RecordParseInfo,
    weigher: Weigher,
    pages: usize,
    /// Whether the in-kernel unwinder is wanted (mode and events allow it).
    in_kernel: bool,
    /// Event index and kind of each sampler slot.
    slots: Vec<(usize, SlotUse)>,
    /// The events the off-CPU collector records, if any.
    offcpu: Option<crate::offcpu::SchedEvents>,
    infos: Vec<EventInfo>,
}

impl Plan {
    fn new(opts: &RecordOptions) -> Result<Plan, RecordError> {
        check_options(opts)?;
        let events = &opts.events;
        let weigher = weigher_of(events)?;
        let copies = opts.stack_bytes > 0;
        let sample_type = sample_type(&weigher, copies);
        let pages = opts.buffer_pages.next_power_of_two().max(8);
        let spawned = matches!(opts.target, Target::Command(_));
        let system = matches!(opts.target, Target::System);
        let slot_use = |ev: &EventSpec| slot_use(ev, opts);
        let sampled_in_kernel = |ev: &EventSpec| slot_use(ev).is_some();
        let in_kernel = cfg!(feature = "bpf")
            && opts.unwind != UnwindMode::Copy
            && events.iter().any(sampled_in_kernel);
        let mut slots: Vec<(usize, SlotUse)> = Vec::new();
        let common = |flags: u64| {
            flags
                | sys::FLAG_DISABLED
                | sys::FLAG_SAMPLE_ID_ALL
                | sys::FLAG_USE_CLOCKID
                | if system { 0 } else { sys::FLAG_INHERIT }
                | if spawned { sys::FLAG_ENABLE_ON_EXEC } else { 0 }
        };
        let user_regs = if copies { sys::REGS_MASK_X86_64 } else { 0 };
        let mut attrs = Vec::new();
        for (index, ev) in events.iter().enumerate() {
            if ev.is_scheduler_time() {
                continue;
            }
            let (type_, config, period, freq) = ev.perf_config(opts.frequency)?;
            // (Room left, written so that it reads right when SAMPLER_SLOTS is 0: without
            // eBPF `len < 0` is a comparison clippy refuses.)
            let slot = (in_kernel
                && sampled_in_kernel(ev)
                && SAMPLER_SLOTS.saturating_sub(slots.len()) > 0)
                .then(|| {
                    slots.push((index, slot_use(ev).unwrap_or(SlotUse::Sampling)));
                    slots.len() as u32 - 1
                });
            let mut flags = common(sys::FLAG_WATERMARK);
            if freq {
                flags |= sys::FLAG_FREQ;
            }
            if slot.is_some() && copies {
                // Unwound in the kernel: perf's own samples (for processes without
                // tables yet) need no frame-pointer walk of the user stack; they carry
                // a copy.
                flags |= sys::FLAG_EXCLUDE_CALLCHAIN_USER;
            }
            attrs.push(EventAttr {
                index,
                spec: ev.clone(),
                attr: PerfEventAttr {
                    type_,
                    config,
                    sample_period_or_freq: period,
                    sample_type,
                    flags,
                    wakeup: (pages as u32 * PAGE_SIZE) / 4,
                    sample_regs_user: user_regs,
                    sample_stack_user: opts.stack_bytes,
                    clockid: libc::CLOCK_MONOTONIC,
                    sample_max_stack: 127,
                    ..Default::default()
                },
                slot,
            });
        }
        if attrs.is_empty() {
            // Off-CPU alone: a dummy event that never samples still reports mappings,
            // names and forks, which unwinding and naming the off-CPU stacks need after
            // the processes are gone.
            attrs.push(off_cpu_only(opts, sample_type, common(0), user_regs));
        }
        let attr_bytes = attrs[0].attr.to_bytes();
        let (reader_attr, _) = linux_perf_data::linux_perf_event_reader::PerfEventAttr::parse::<
            _,
            byteorder::NativeEndian,
        >(&attr_bytes[..])
        .map_err(|e| RecordError::sys("perf_event_attr", e))?;
        let infos = event_infos(opts);
        Ok(Plan {
            parse_info: RecordParseInfo::new(&reader_attr, Endianness::NATIVE),
            attrs,
            weigher,
            pages,
            in_kernel: in_kernel && !slots.is_empty(),
            slots,
            offcpu: crate::offcpu::SchedEvents::of(events),
            infos,
        })
    }
}

/// Software events (cpu-clock, page-faults) and tracepoints (mmap, brk, any
/// CATEGORY:NAME) have their stacks unwound in the kernel, by one program of the sampler
/// per kind of event.
fn slot_use(ev: &EventSpec, opts: &RecordOptions) -> Option<SlotUse> {
    match ev.perf_config(opts.frequency) {
        Ok((sys::PERF_TYPE_SOFTWARE, ..)) => Some(SlotUse::Sampling),
        Ok((sys::PERF_TYPE_TRACEPOINT, ..)) => Some(SlotUse::Tracepoint(
            ev.weight_field().ok().flatten().map(|(off, _)| off as u32),
        )),
        _ => None,
    }
}

/// The options a recording cannot start with.
fn check_options(opts: &RecordOptions) -> Result<(), RecordError> {
    if opts.events.is_empty() {
        return Err(RecordError::InvalidOption("no event to record".into()));
    }
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
    if !matches!(
        opts.offcpu_unit,
        WeightUnit::Microseconds | WeightUnit::Nanoseconds
    ) {
        return Err(RecordError::InvalidOption(format!(
            "off-CPU time is counted in microseconds or nanoseconds, not {}",
            opts.offcpu_unit.name()
        )));
    }
    Ok(())
}

/// Events weighed by a tracepoint field need the raw data of their samples.
fn weigher_of(events: &[EventSpec]) -> Result<Weigher, RecordError> {
    Ok(Weigher::new(
        events
            .iter()
            .map(|e| {
                Ok(match (e, e.weight_field()?) {
                    (EventSpec::Brk, Some((off, _))) => Weigh::BreakGrowth(off),
                    (_, Some((off, _))) => Weigh::Field(off),
                    (EventSpec::Cpu, None) => Weigh::One,
                    (_, None) => Weigh::Period,
                })
            })
            .collect::<Result<_, RecordError>>()?,
    ))
}

/// What each sample carries: raw data for events weighed by a field, the user registers
/// and stack when `copies`.
fn sample_type(weigher: &Weigher, copies: bool) -> u64 {
    let raw = if weigher.needs_raw() {
        sys::SAMPLE_RAW
    } else {
        0
    };
    raw | sys::SAMPLE_IDENTIFIER
        | sys::SAMPLE_IP
        | sys::SAMPLE_TID
        | sys::SAMPLE_TIME
        | sys::SAMPLE_CPU
        | sys::SAMPLE_PERIOD
        | sys::SAMPLE_CALLCHAIN
        | if copies {
            sys::SAMPLE_REGS_USER | sys::SAMPLE_STACK_USER
        } else {
            0
        }
}

/// Off-CPU alone: a dummy event that never samples still reports mappings, names and
/// forks, which unwinding and naming the off-CPU stacks need after the processes are
/// gone.
fn off_cpu_only(opts: &RecordOptions, sample_type: u64, flags: u64, user_regs: u64) -> EventAttr {
    EventAttr {
        index: usize::MAX,
        spec: EventSpec::OffCpu,
        attr: PerfEventAttr {
            type_: sys::PERF_TYPE_SOFTWARE,
            config: sys::PERF_COUNT_SW_DUMMY,
            sample_period_or_freq: 1,
            sample_type,
            flags,
            sample_regs_user: user_regs,
            sample_stack_user: opts.stack_bytes,
            clockid: libc::CLOCK_MONOTONIC,
            ..Default::default()
        },
        slot: None,
    }
}

/// The name, unit and sample period of each event.
fn event_infos(opts: &RecordOptions) -> Vec<EventInfo> {
    opts.events
        .iter()
        .map(|e| EventInfo {
            name: e.name(),
            unit: if e.is_scheduler_time() {
                opts.offcpu_unit
            } else {
                e.unit()
            },
            // What one cpu sample stands for: the period the kernel gives a timer
            // sampled at the frequency.
            sample_period_ns: (*e == EventSpec::Cpu)
                .then(|| 1_000_000_000 / u64::from(opts.frequency.max(1))),
        })
        .collect()
}

const PAGE_SIZE: u32 = 4096;
#[cfg(feature = "bpf")]
const SAMPLER_SLOTS: usize = kiln_bpf::sampler::SLOTS as usize;
#[cfg(not(feature = "bpf"))]
const SAMPLER_SLOTS: usize = 0;

#[cfg(feature = "bpf")]
type KernelUnwinder = crate::inkernel::InKernel;
#[cfg(not(feature = "bpf"))]
type KernelUnwinder = std::convert::Infallible;

#[cfg(feature = "bpf")]
type BpfStats = kiln_bpf::RunTimeStats;
#[cfg(not(feature = "bpf"))]
type BpfStats = std::convert::Infallible;

/// Starts measuring the run time of eBPF programs; why not, as a warning of the recording.
fn enable_bpf_stats() -> Result<BpfStats, String> {
    #[cfg(feature = "bpf")]
    return kiln_bpf::RunTimeStats::enable()
        .map_err(|e| format!("kiln's own eBPF cost is not measured: {e}"));
    #[cfg(not(feature = "bpf"))]
    Err("kiln's own eBPF cost is not measured: built without eBPF".into())
}

/// What the loading thread hands back: the in-kernel unwinder (or why it is missing) and
/// the off-CPU collector.
type Loaded = (
    Option<Result<KernelUnwinder, RecordError>>,
    Option<Result<crate::offcpu::OffCpu, RecordError>>,
);

/// What the off-CPU collector is started with: pids (`None`: the whole system), stack
/// bytes, minimum block, its events, the processes' maps already read, wakers.
type OffCpuStart = (
    Option<Vec<u32>>,
    u32,
    u64,
    crate::offcpu::SchedEvents,
    Maps,
    bool,
);

/// The text of `/proc/PID/maps` per process, read once for everyone who needs it.
type Maps = HashMap<u32, std::sync::Arc<[u8]>>;

fn read_maps(pids: &[u32]) -> Maps {
    pids.iter()
        .filter_map(|&p| {
            let text = std::fs::read(format!("/proc/{p}/maps")).ok()?;
            Some((p, std::sync::Arc::from(text)))
        })
        .collect()
}

/// Loads the eBPF programs the plan needs (verifying them takes most of the start-up).
fn load_programs(
    in_kernel: bool,
    slots: Vec<(usize, SlotUse)>,
    offcpu: Option<OffCpuStart>,
) -> Loaded {
    #[cfg(feature = "bpf")]
    let unwinder = in_kernel.then(|| crate::inkernel::InKernel::load(slots));
    #[cfg(not(feature = "bpf"))]
    let unwinder: Option<Result<KernelUnwinder, RecordError>> = {
        let _ = (in_kernel, slots);
        None
    };
    let offcpu = offcpu.map(|(pids, stack_bytes, min_block_us, events, maps, wakers)| {
        crate::offcpu::OffCpu::start(pids, stack_bytes, min_block_us, events, maps, wakers)
    });
    (unwinder, offcpu)
}

/// The events opened so far, and their ring buffers (one per CPU).
struct Opened {
    fds: Vec<OwnedFd>,
    /// Sampler slot of each descriptor (same order as `fds`).
    slots: Vec<Option<u32>>,
    /// Event index of each descriptor, for the events sampled at every occurrence
    /// (same order as `fds`; `None` for the others).
    every: Vec<Option<usize>>,
    buffers: Vec<RingBuffer>,
    /// Buffer index per CPU (position in `cpus`).
    leader: HashMap<i32, usize>,
    ids: HashMap<u64, usize>,
    /// (tid, cpu) pairs already opened.
    done: HashSet<(i32, i32)>,
    cpus: Vec<i32>,
    pages: usize,
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
    fn new(pages: usize) -> Opened {
        Opened {
            fds: Vec::new(),
            slots: Vec::new(),
            every: Vec::new(),
            buffers: Vec::new(),
            leader: HashMap::new(),
            ids: HashMap::new(),
            done: HashSet::new(),
            cpus: sys::online_cpus(),
            pages,
        }
    }

    /// Opens every event for `tid` (-1: all tasks) on every CPU, disabled; `kernel`
    /// (when loaded) is attached to the events with a sampler slot, and with `enable`
    /// the events are enabled.
    fn open_task(
        &mut self,
        attrs: &[EventAttr],
        tid: i32,
        kernel: Option<&mut KernelUnwinder>,
        enable: bool,
    ) -> Result<(), RecordError> {
        let mut kernel = kernel;
        for cpu in self.cpus.clone() {
            if !self.done.insert((tid, cpu)) {
                continue;
            }
            for (k, e) in attrs.iter().enumerate() {
                let mut a = e.attr;
                if k == 0 {
                    // One event per (task, CPU) reports mappings, names and forks.
                    a.flags |= sys::FLAG_MMAP
                        | sys::FLAG_MMAP2
                        | sys::FLAG_COMM
                        | sys::FLAG_COMM_EXEC
                        | sys::FLAG_TASK;
                }
                let fd = sys::perf_event_open(&a, tid, cpu)
                    .map_err(|err| open_error(err, &e.spec, tid))?;
                let id =
                    sys::event_id(&fd).map_err(|e| RecordError::sys("PERF_EVENT_IOC_ID", e))?;
                self.ids.insert(id, e.index);
                match self.leader.get(&cpu) {
                    Some(&b) => sys::set_output(&fd, self.buffers[b].fd())
                        .map_err(|e| RecordError::sys("PERF_EVENT_IOC_SET_OUTPUT", e))?,
                    None => {
                        let dup = fd.try_clone().map_err(|e| RecordError::sys("dup", e))?;
                        let rb = RingBuffer::new(dup, self.pages)
                            .map_err(|e| RecordError::sys("mmap of the perf ring buffer", e))?;
                        self.leader.insert(cpu, self.buffers.len());
                        self.buffers.push(rb);
                    }
                }
                if let (Some(k), Some(slot)) = (kernel.as_deref_mut(), e.slot) {
                    attach_sampler(k, &fd, slot)?;
                }
                if enable {
                    sys::enable(&fd).map_err(|e| RecordError::sys("PERF_EVENT_IOC_ENABLE", e))?;
                } else {
                    // Attaching enables the event (libbpf does): off until all is ready.
                    sys::disable(&fd);
                }
                self.fds.push(fd);
                self.slots.push(e.slot);
                let every = a.flags & sys::FLAG_FREQ == 0 && a.sample_period_or_freq == 1;
                self.every.push(every.then_some(e.index));
            }
        }
        Ok(())
    }

    /// Attaches the in-kernel unwinder to every descriptor with a sampler slot.
    fn attach_all(&mut self, kernel: &mut KernelUnwinder) -> Result<(), RecordError> {
        for (fd, slot) in self.fds.iter().zip(&self.slots) {
            if let Some(slot) = slot {
                attach_sampler(kernel, fd, *slot)?;
                sys::disable(fd);
            }
        }
        Ok(())
    }

    fn enable_all(&self) -> Result<(), RecordError> {
        for fd in &self.fds {
            sys::enable(fd).map_err(|e| RecordError::sys("PERF_EVENT_IOC_ENABLE", e))?;
        }
        Ok(())
    }
}

#[cfg(feature = "bpf")]
fn attach_sampler(k: &mut KernelUnwinder, fd: &OwnedFd, slot: u32) -> Result<(), RecordError> {
    k.attach(fd, slot)
}

#[cfg(not(feature = "bpf"))]
fn attach_sampler(k: &mut KernelUnwinder, _: &OwnedFd, _: u32) -> Result<(), RecordError> {
    match *k {}
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

/// Every process now running.
fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Read as bytes: a process whose name is not UTF-8 exists too.
fn alive(pid: u32) -> bool {
    kiln_os::proc::alive(pid)
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

/// Stage 2: the target started, its events open (disabled), the programs loading.
struct Started {
    plan: Plan,
    opened: Opened,
    collector: Collector,
    child: Option<HeldChild>,
    pids: Vec<u32>,
    loading: std::thread::JoinHandle<Loaded>,
    bpf_stats: Option<BpfStats>,
}

impl Started {
    fn new(opts: &RecordOptions, plan: Plan) -> Result<Started, RecordError> {
        raise_fd_limit();
        let mut child: Option<HeldChild> = None;
        let pids: Vec<u32> = match &opts.target {
            Target::Pids(pids) => {
                if pids.is_empty() {
                    return Err(RecordError::InvalidOption("no PID given".into()));
                }
                if let Some(&p) = pids.iter().find(|&&p| !alive(p)) {
                    return Err(RecordError::NoSuchProcess(p));
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
        let system = matches!(opts.target, Target::System);
        let maps = Maps::new();
        let offcpu = plan.offcpu.map(|index| {
            (
                (!system).then(|| pids.clone()),
                opts.stack_bytes,
                opts.offcpu_min_block_us,
                index,
                maps.clone(),
                opts.offcpu_wakers,
            )
        });
        let (in_kernel, slots) = (plan.in_kernel, plan.slots.clone());
        // What kiln's own eBPF programs cost is measured from before they load.
        let mut stats_warning = None;
        let bpf_stats = (in_kernel || offcpu.is_some())
            .then(|| enable_bpf_stats().map_err(|e| stats_warning = Some(e)).ok())
            .flatten();
        let loading = std::thread::Builder::new()
            .name("kiln-bpf-load".into())
            .spawn(move || load_programs(in_kernel, slots, offcpu))
            .map_err(|e| RecordError::sys("starting a thread", e));
        let loading = match loading {
            Ok(l) => l,
            Err(e) => {
                if let Some(mut c) = child {
                    c.stop();
                }
                return Err(e);
            }
        };
        // Meanwhile: open the events.
        let mut opened = Opened::new(plan.pages);
        let result = (|| -> Result<(), RecordError> {
            if system {
                return opened.open_task(&plan.attrs, -1, None, false);
            }
            for &p in &pids {
                for tid in tasks_of(p) {
                    match opened.open_task(&plan.attrs, tid, None, false) {
                        Err(RecordError::NoSuchProcess(_)) if tid != p as i32 => {}
                        r => r?,
                    }
                }
            }
            Ok(())
        })();
        let mut collector = Collector::live(plan.infos.clone(), opts.naming);
        if let Some(w) = stats_warning {
            collector.summary.warnings.push(w);
        }
        if let Err(e) = result {
            if let Some(mut c) = child {
                c.stop();
            }
            let _ = loading.join();
            return Err(e);
        }
        if let Some(ev) = plan.offcpu {
            if opts.offcpu_unit == WeightUnit::Microseconds {
                for i in [ev.offcpu, ev.runnable].into_iter().flatten() {
                    collector.weigh_ns_as_us(i);
                }
            }
        }
        Ok(Started {
            plan,
            opened,
            collector,
            child,
            pids,
            loading,
            bpf_stats,
        })
    }

    /// Stage 3: the programs attached, the events enabled, the command let go.
    fn attach(self, opts: &RecordOptions) -> Result<Running, RecordError> {
        let Started {
            plan,
            mut opened,
            mut collector,
            mut child,
            pids,
            loading,
            bpf_stats,
        } = self;
        let stop_child = |child: &mut Option<HeldChild>, e: RecordError| {
            if let Some(c) = child.as_mut() {
                c.stop();
            }
            e
        };
        let (mut kernel, mut offcpu) = match take_loaded(loading, opts, &mut collector) {
            Ok(l) => l,
            Err(e) => return Err(stop_child(&mut child, e)),
        };
        if let Some(k) = kernel.as_mut() {
            opened
                .attach_all(k)
                .map_err(|e| stop_child(&mut child, e))?;
        }
        let spawned = child.is_some();
        wait_for_gate(opts);
        // Sampling starts now: the off-CPU collector, running since it loaded, keeps the
        // time off CPU from here on.
        let started_ns = kiln_os::clock::monotonic_ns();
        if let Some(o) = offcpu.as_mut() {
            o.window_starts(started_ns);
        }
        if !spawned {
            opened.enable_all().map_err(|e| stop_child(&mut child, e))?;
            let mut follow = Following {
                plan: &plan,
                opened: &mut opened,
                collector: &mut collector,
                kernel: kernel.as_mut(),
                offcpu: offcpu.as_mut(),
            };
            let copies = match &opts.target {
                Target::Pids(_) => follow.copies(&pids),
                _ => Vec::new(),
            };
            let pids = [pids, copies].concat();
            follow.track_mappings(opts, &pids);
            follow.open_new_threads(&pids)?;
        }
        if let (Some(c), Target::Command(argv)) = (&mut child, &opts.target) {
            // Let the held child exec; the events enable themselves at exec.
            c.release(&argv[0])?;
        }
        Ok(Running {
            plan,
            opened,
            collector,
            child,
            kernel,
            offcpu,
            scratch: Scratch::default(),
            _bpf_stats: bpf_stats,
            started: Instant::now(),
            started_ns,
        })
    }
}

/// What the loading thread gave: the in-kernel unwinder (its failure a warning under
/// `--unwind auto`, an error when it was asked for) and the off-CPU collector.
fn take_loaded(
    loading: std::thread::JoinHandle<Loaded>,
    opts: &RecordOptions,
    collector: &mut Collector,
) -> Result<(Option<KernelUnwinder>, Option<crate::offcpu::OffCpu>), RecordError> {
    let (unwinder, offcpu) = loading
        .join()
        .map_err(|_| RecordError::InvalidOption("the eBPF loader panicked".into()))?;
    let kernel = match unwinder {
        Some(Ok(k)) => Some(k),
        Some(Err(e)) if opts.unwind == UnwindMode::Auto => {
            collector
                .summary
                .warnings
                .push(format!("{e}; stacks are unwound from copies of the stack"));
            None
        }
        Some(Err(e)) => return Err(e),
        None if opts.unwind == UnwindMode::Kernel => {
            return Err(RecordError::InKernelUnwind(if cfg!(feature = "bpf") {
                "no event of this recording is sampled by perf (cpu, page-faults, tracepoints)"
                    .into()
            } else {
                "this kiln was built without the `bpf` feature (eBPF)".into()
            }))
        }
        None => None,
    };
    Ok((kernel, offcpu.transpose()?))
}

/// Everything is loaded and opened: with a gate, sampling starts when the caller says so
/// (or the recording is stopped).
fn wait_for_gate(opts: &RecordOptions) {
    let Some(g) = &opts.gate else { return };
    g.ready.raise();
    while !g.go.sleep(Duration::from_millis(20)) {
        if opts.stop.as_ref().is_some_and(|s| s.is_raised()) {
            break;
        }
    }
}

/// The running processes kiln attached to (not a command it started), as sampling
/// begins: their mappings and the threads they started meanwhile.
struct Following<'a> {
    plan: &'a Plan,
    opened: &'a mut Opened,
    collector: &'a mut Collector,
    kernel: Option<&'a mut KernelUnwinder>,
    offcpu: Option<&'a mut crate::offcpu::OffCpu>,
}

impl Following<'_> {
    /// The processes' mappings, read once, now: what they map from here on comes as
    /// records of the enabled events. (Read before, a process that had just exec'd could
    /// still be without its program's mappings.) A started command's mappings come with
    /// its exec.
    fn track_mappings(&mut self, opts: &RecordOptions, pids: &[u32]) {
        let maps = match &opts.target {
            Target::System => read_maps(&all_pids()),
            _ => read_maps(pids),
        };
        for (&pid, text) in &maps {
            self.collector.track(pid, text);
            if let Some(o) = self.offcpu.as_deref_mut() {
                o.set_maps(pid, text);
            }
        }
        if let Some(k) = self.kernel.as_deref_mut() {
            sync_unwinder(k, self.collector);
        }
    }

    /// The copies of `pids` forked before sampling began (their descendants running the
    /// same executable: PostgreSQL's backend for each connection the load opened while
    /// kiln was loading its programs), traced off CPU from now on; their threads are
    /// opened with the targets'. Forks from here on are followed by the kernel
    /// (inherited events, the off-CPU program's fork tracepoint).
    fn copies(&mut self, pids: &[u32]) -> Vec<u32> {
        let exe = |p: u32| std::fs::read_link(format!("/proc/{p}/exe")).ok();
        let parents: Vec<(u32, u32)> = kiln_os::proc::ids("/proc")
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| Some((p, kiln_os::proc::stat(p)?.field(4)? as u32)))
            .collect();
        let mut out: Vec<u32> = Vec::new();
        for &root in pids {
            let Some(own) = exe(root) else { continue };
            let mut tree = vec![root];
            let mut i = 0;
            while i < tree.len() {
                let p = tree[i];
                tree.extend(parents.iter().filter(|e| e.1 == p).map(|e| e.0));
                i += 1;
            }
            for p in tree.into_iter().skip(1) {
                if !pids.contains(&p) && !out.contains(&p) && exe(p).as_ref() == Some(&own) {
                    out.push(p);
                }
            }
        }
        if let Some(o) = self.offcpu.as_deref_mut() {
            out.retain(|&p| o.trace(p).is_ok());
        }
        out
    }

    /// Threads started while the events were being opened: attached to as well (new
    /// threads of threads already followed are inherited by the kernel).
    fn open_new_threads(&mut self, pids: &[u32]) -> Result<(), RecordError> {
        for _ in 0..3 {
            let before = self.opened.done.len();
            for &p in pids {
                for tid in tasks_of(p) {
                    let kernel = self.kernel.as_deref_mut();
                    match self.opened.open_task(&self.plan.attrs, tid, kernel, true) {
                        Ok(()) | Err(RecordError::NoSuchProcess(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if self.opened.done.len() == before {
                break;
            }
        }
        Ok(())
    }
}

/// Stage 4: sampling.
struct Running {
    plan: Plan,
    opened: Opened,
    collector: Collector,
    child: Option<HeldChild>,
    kernel: Option<KernelUnwinder>,
    offcpu: Option<crate::offcpu::OffCpu>,
    scratch: Scratch,
    /// While it lives, the kernel measures kiln's eBPF programs' run time.
    _bpf_stats: Option<BpfStats>,
    started: Instant,
    /// CLOCK_MONOTONIC ns when sampling began.
    started_ns: u64,
}

impl Running {
    /// Reads the rings until the duration passes, the stop is raised or the target exits.
    fn drain_until_stop(&mut self, opts: &RecordOptions) -> StopReason {
        // With in-kernel unwinding and off-CPU, mappings reach the kernel when the rings
        // are read: read them often, so that a new process (a started command right
        // after its exec) is walked with its tables, and its blocks told apart by
        // caller, within milliseconds.
        let poll_ms = if self.kernel.is_some() || self.offcpu.is_some() {
            10
        } else {
            100
        };
        loop {
            if self.opened.buffers.is_empty() {
                std::thread::sleep(Duration::from_millis(poll_ms as u64));
            } else {
                let fds: Vec<&OwnedFd> = self.opened.buffers.iter().map(|b| b.fd()).collect();
                sys::poll(&fds, poll_ms);
            }
            self.drain_once();
            if opts.stop.as_ref().is_some_and(|s| s.is_raised()) {
                return StopReason::Interrupted;
            }
            if opts.duration.is_some_and(|d| self.started.elapsed() >= d) {
                return StopReason::Duration;
            }
            let exited = match (&mut self.child, &opts.target) {
                (Some(c), _) => c.try_wait().is_some(),
                (None, Target::Pids(p)) => p.iter().all(|&p| !alive(p)),
                _ => false,
            };
            if exited {
                return StopReason::TargetExited;
            }
        }
    }

    /// Moves everything the kernel wrote so far into the collector.
    fn drain_once(&mut self) {
        let Running {
            plan,
            opened,
            collector,
            kernel,
            offcpu,
            scratch,
            ..
        } = self;
        let ids = &opened.ids;
        let event_of = |s: &SampleRecord<'_>| s.id.and_then(|id| ids.get(&id).copied());
        let parse_info = plan.parse_info;
        let weigher = &mut plan.weigher;
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
                    Ok(r) => {
                        records::handle(collector, scratch, r, raw.timestamp(), &event_of, weigher)
                    }
                    Err(_) => collector.summary.bad_records += 1,
                }
            });
        }
        if let Some(k) = kernel.as_mut() {
            sync_unwinder(k, collector);
            drain_unwinder(k, collector, weigher);
        }
        if let Some(o) = offcpu.as_mut() {
            if let Err(e) = o.drain(collector) {
                collector.summary.warnings.push(e.to_string());
                *offcpu = None;
            }
        }
    }

    /// Closes the books of the events sampled at every occurrence: what the kernel
    /// counted is either a sample kept or counted lost. The rest is lost as well: the
    /// kernel drops the sample of an event whose eBPF program it skips because another
    /// one holds that CPU (a tracepoint's program preempted, another tool's), and says
    /// so nowhere for a perf event's program.
    fn count_unseen(&mut self) {
        let mut counted: HashMap<usize, u64> = HashMap::new();
        for (fd, ev) in self.opened.fds.iter().zip(&self.opened.every) {
            if let (Some(ev), Some(n)) = (ev, sys::count(fd)) {
                *counted.entry(*ev).or_default() += n;
            }
        }
        let s = &mut self.collector.summary;
        let short: u64 = counted
            .iter()
            .map(|(&ev, &n)| n.saturating_sub(s.samples.get(ev).copied().unwrap_or(0)))
            .sum();
        // Losses already counted are not per event: only what none of them covers.
        let counted_lost = s.lost + s.unweighable + s.unattributed + s.bad_records;
        let unseen = short.saturating_sub(counted_lost);
        s.unseen_samples = unseen;
        s.lost += unseen;
    }

    /// Stage 5: what is left read, a started command stopped, the profiles built.
    fn finish(mut self, stopped: StopReason) -> Recording {
        let stopped_at = Instant::now();
        let stopped_ns = kiln_os::clock::monotonic_ns();
        for fd in &self.opened.fds {
            sys::disable(fd);
        }
        if let Some(o) = self.offcpu.as_mut() {
            o.window_ends(stopped_ns);
        }
        self.drain_once();
        if let Some(k) = self.kernel.take() {
            finish_unwinder(k, &mut self.collector);
        }
        if let Some(o) = self.offcpu.take() {
            o.summarise(&mut self.collector);
        }
        self.collector.summary.brk_unknown_base = self.plan.weigher.unknown_break;
        self.count_unseen();
        let drained = stopped_at.elapsed();
        // The recording may end first (duration, Ctrl-C): stop the program we started.
        let exit_status = self.child.as_mut().and_then(|c| c.stop());
        drop(self.opened);
        let build_start = Instant::now();
        let (profiles, summary) = self.collector.finish();
        Recording {
            profiles,
            summary,
            stopped,
            exit_status,
            startup: Duration::ZERO,
            processing: drained + build_start.elapsed(),
            final_drain: drained,
            sampling: (self.started_ns, stopped_ns),
        }
    }
}

/// Gives the kernel the mappings (and unwind tables) of processes that changed.
#[cfg(feature = "bpf")]
fn sync_unwinder(k: &mut KernelUnwinder, c: &mut Collector) {
    k.sync(c);
}

#[cfg(not(feature = "bpf"))]
fn sync_unwinder(k: &mut KernelUnwinder, _: &mut Collector) {
    match *k {}
}

/// Moves the in-kernel unwinder's samples into the collector.
#[cfg(feature = "bpf")]
fn drain_unwinder(k: &mut KernelUnwinder, c: &mut Collector, w: &mut Weigher) {
    k.drain(c, w);
}

#[cfg(not(feature = "bpf"))]
fn drain_unwinder(k: &mut KernelUnwinder, _: &mut Collector, _: &mut Weigher) {
    match *k {}
}

/// Takes the kernel side's final counters into the summary and detaches the program.
#[cfg(feature = "bpf")]
fn finish_unwinder(mut k: KernelUnwinder, c: &mut Collector) {
    k.finish(c);
    c.summary.in_kernel = Some(k.summary);
}

#[cfg(not(feature = "bpf"))]
fn finish_unwinder(k: KernelUnwinder, _: &mut Collector) {
    match k {}
}
