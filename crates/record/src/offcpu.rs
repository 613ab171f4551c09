//! Off-CPU profiles through the eBPF collector of `kiln-bpf` (feature `bpf`, on by
//! default).
//!
//! The collector hands over one record per block: when it started (switch-out, on
//! CLOCK_MONOTONIC like the perf samples), how long it lasted, and its stacks (kernel
//! addresses, and user registers with a copy of the user stack). Each block becomes one
//! sample stamped with its start and weighted by its duration, so a time window of the
//! recording holds exactly the blocks that started in it. User stacks are unwound by the
//! same code as perf samples (CFI + frame pointers), once per distinct stack: blocks at
//! the same place share a key, and the unwound addresses are kept per key.
//!
//! The collector runs from before sampling starts (a gated `kiln run` loads it during the
//! warm-up): each block is cut to the sampling window, so the off-CPU and runnable
//! profiles hold the same seconds as the CPU samples — a block that began before the
//! window counts from its start, one that ends after it up to its end, and one wholly
//! before it not at all (counted in [`crate::RecordingSummary::offcpu_before_window`]).
use crate::collect::Collector;
#[cfg(feature = "bpf")]
use crate::collect::UserStack;
use crate::error::RecordError;
#[cfg(feature = "bpf")]
use std::collections::HashMap;
#[cfg(feature = "bpf")]
use std::sync::Arc;

/// The events the off-CPU collector records into: blocked time (`offcpu`) and time
/// runnable (`runnable`), by their indexes in the recording's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SchedEvents {
    pub offcpu: Option<usize>,
    pub runnable: Option<usize>,
}

impl SchedEvents {
    /// The off-CPU collector's events among `events`; `None` when it is not needed.
    pub fn of(events: &[crate::EventSpec]) -> Option<SchedEvents> {
        let at = |e: crate::EventSpec| events.iter().position(|x| *x == e);
        let ev = SchedEvents {
            offcpu: at(crate::EventSpec::OffCpu),
            runnable: at(crate::EventSpec::Runnable),
        };
        (ev.offcpu.is_some() || ev.runnable.is_some()).then_some(ev)
    }
}

#[cfg(feature = "bpf")]
pub(crate) struct OffCpu {
    collector: kiln_bpf::offcpu::OffCpuCollector,
    events: SchedEvents,
    /// Unwound user stacks (lookup addresses, leaf first) and whether they were shallow,
    /// per stack key.
    user_cache: HashMap<kiln_bpf::offcpu::StackKey, (Arc<[u64]>, bool)>,
    /// Kernel stacks without the tracing machinery's frames, per kernel stack hash.
    kernel_cache: HashMap<u64, Arc<[u64]>>,
    /// Blocks lost so far (the kernel's count at the last drain).
    dropped: u64,
    /// The sampling window (CLOCK_MONOTONIC ns) blocks are cut to.
    window: (u64, u64),
}

#[cfg(feature = "bpf")]
impl OffCpu {
    /// Starts collecting for `pids` (`None`: the whole system) into event `event`.
    pub fn start(
        pids: Option<Vec<u32>>,
        stack_bytes: u32,
        min_block_us: u64,
        events: SchedEvents,
        maps: HashMap<u32, Arc<[u8]>>,
        wakers: bool,
    ) -> Result<Self, RecordError> {
        let cfg = kiln_bpf::offcpu::OffCpuConfig {
            pids,
            min_block_us,
            user_stack_bytes: stack_bytes.min(kiln_bpf::offcpu::MAX_USER_STACK_BYTES),
            wakers: wakers && events.offcpu.is_some(),
            runnable: events.runnable.is_some(),
            no_blocked: events.offcpu.is_none(),
            // The recorder reads the maps once the events run (see live.rs).
            maps_from_caller: true,
            maps,
            ring_bytes: 0,
        };
        let collector = kiln_bpf::offcpu::OffCpuCollector::start(&cfg)
            .map_err(|e| RecordError::OffCpu(e.to_string()))?;
        Ok(OffCpu {
            collector,
            events,
            user_cache: HashMap::new(),
            kernel_cache: HashMap::new(),
            dropped: 0,
            window: (0, u64::MAX),
        })
    }

    /// Sampling began at `ns`: earlier time off CPU is not the recording's.
    pub fn window_starts(&mut self, ns: u64) {
        self.window.0 = ns;
    }

    /// Sampling ended at `ns`: later time off CPU is not the recording's.
    pub fn window_ends(&mut self, ns: u64) {
        self.window.1 = ns;
    }

    /// Moves the blocks that ended since the last call into `c`.
    pub fn drain(&mut self, c: &mut Collector) -> Result<(), RecordError> {
        // A process that exec'd has new code: the kernel's caller hash needs its ranges
        // (a started command's were read before its exec, from this program's image).
        for pid in c.take_execs() {
            self.collector.process_changed(pid);
        }
        let blocks = self
            .collector
            .drain()
            .map_err(|e| RecordError::OffCpu(e.to_string()))?;
        // Losses per second of the recording, for the run to show when they happened.
        let dropped = self.collector.dropped_blocks();
        if dropped > self.dropped {
            let second = kiln_os::clock::monotonic_ns() / 1_000_000_000 * 1_000_000_000;
            let per_s = &mut c.summary.offcpu_dropped_per_second;
            match per_s.last_mut() {
                Some((t, n)) if *t == second => *n += dropped - self.dropped,
                _ => per_s.push((second, dropped - self.dropped)),
            }
            self.dropped = dropped;
        }
        for mut b in blocks {
            let (from, until) = self.window;
            let end = b.start_ns.saturating_add(b.duration_ns).min(until);
            let start = b.start_ns.max(from);
            if end <= start {
                c.summary.offcpu_before_window += 1;
                continue;
            }
            (b.start_ns, b.duration_ns) = (start, end - start);
            let event = if b.runnable {
                self.events.runnable
            } else {
                self.events.offcpu
            };
            let Some(event) = event else {
                c.summary.unattributed += 1;
                continue;
            };
            let t = &b.blocked;
            if !t.comm.is_empty() {
                c.on_comm_if_unknown(t.tid, &t.comm);
            }
            let kernel = self.kernel(c, t);
            let user = self.user(c, t);
            match &b.waker {
                Some(w) => {
                    if !w.comm.is_empty() {
                        c.on_comm_if_unknown(w.tid, &w.comm);
                    }
                    let wk = self.kernel(c, w);
                    let wu = self.user(c, w);
                    c.add_woken_sample(
                        event,
                        b.start_ns,
                        b.duration_ns,
                        (t.pid, t.tid, &kernel, &user),
                        (w.pid, w.tid, &wk, &wu),
                    );
                }
                None => c.add_sample(
                    event,
                    t.pid,
                    t.tid,
                    b.start_ns,
                    b.duration_ns,
                    &mut kernel.iter().copied(),
                    UserStack::Lookup(&user),
                ),
            }
        }
        Ok(())
    }

    /// The kernel stack of `t`, ending in the scheduler (see
    /// [`Collector::trim_tracing_frames`]).
    fn kernel(&mut self, c: &mut Collector, t: &kiln_bpf::offcpu::TaskStacks) -> Arc<[u64]> {
        self.kernel_cache
            .entry(t.key.kstack)
            .or_insert_with(|| Arc::from(c.trim_tracing_frames(&t.kernel_ips)))
            .clone()
    }

    /// The user stack of `t` (lookup addresses, leaf first), unwound once per key. A
    /// block without its key's snapshot (the kernel's buffer of copies was full) has the
    /// frame-pointer walk alone, and is not kept for the key: a later block of it may
    /// bring the snapshot.
    fn user(&mut self, c: &mut Collector, t: &kiln_bpf::offcpu::TaskStacks) -> Arc<[u64]> {
        if t.user.is_none() && !t.user_ips.is_empty() && !self.user_cache.contains_key(&t.key) {
            let out: Vec<u64> = t
                .user_ips
                .iter()
                .enumerate()
                .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
                .collect();
            if out.len() == 1 {
                c.summary.shallow_user_stacks += 1;
            }
            return Arc::from(out);
        }
        let (addrs, shallow) = self
            .user_cache
            .entry(t.key)
            .or_insert_with(|| {
                let mut out = Vec::new();
                let frames = match &t.user {
                    Some(s) if !s.stack.is_empty() => c.unwind_user(
                        t.pid,
                        s.regs.ip,
                        s.regs.sp,
                        s.regs.bp,
                        &s.stack,
                        &t.user_ips,
                        &mut out,
                    ),
                    _ => {
                        // The frame-pointer walk: return addresses after the first.
                        out.extend(t.user_ips.iter().enumerate().map(|(i, &a)| {
                            if i == 0 {
                                a
                            } else {
                                a.saturating_sub(1)
                            }
                        }));
                        out.len()
                    }
                };
                (Arc::from(out), frames == 1)
            })
            .clone();
        if shallow {
            c.summary.shallow_user_stacks += 1;
        }
        addrs
    }

    /// Gives the collector a process's maps (read by the recorder).
    pub fn set_maps(&mut self, pid: u32, maps: &[u8]) {
        self.collector.set_maps(pid, maps);
    }

    /// Traces process `pid` too (a copy of the target forked before the programs were
    /// attached).
    pub fn trace(&mut self, pid: u32) -> Result<(), RecordError> {
        self.collector
            .trace(pid)
            .map_err(|e| RecordError::OffCpu(e.to_string()))
    }

    /// Writes the collector's counts into the summary.
    pub(crate) fn summarise(&self, c: &mut Collector) {
        let s = self.collector.stats();
        c.summary.offcpu_dropped_blocks = s.dropped_blocks;
        c.summary.offcpu_dropped_ns = s.dropped_ns;
        let cost = self.collector.cost();
        c.summary.own_bpf.push(crate::collect::BpfCost {
            program: "off-CPU",
            cpu_ns: cost.run_time_ns,
            runs: cost.runs,
            missed: cost.missed,
        });
        c.summary.offcpu_short_blocks = s.short_blocks;
        c.summary.offcpu_blocks = s.blocks;
        c.summary.offcpu_unseen_ends = s.unseen_ends;
        c.summary.offcpu_fp_only = s.missing_snapshots;
        c.summary.offcpu_without_waker = s.blocks_without_waker;
        c.summary.bad_records += s.bad_records;
    }
}

#[cfg(not(feature = "bpf"))]
pub(crate) struct OffCpu;

#[cfg(not(feature = "bpf"))]
impl OffCpu {
    pub fn start(
        _: Option<Vec<u32>>,
        _: u32,
        _: u64,
        _: SchedEvents,
        _: std::collections::HashMap<u32, std::sync::Arc<[u8]>>,
        _: bool,
    ) -> Result<Self, RecordError> {
        Err(RecordError::OffCpu(
            "this kiln was built without the `bpf` feature (eBPF); rebuild with \
             --features bpf, or record sched:sched_switch instead"
                .into(),
        ))
    }
    pub fn drain(&mut self, _: &mut Collector) -> Result<(), RecordError> {
        Ok(())
    }
    pub fn set_maps(&mut self, _: u32, _: &[u8]) {}
    pub fn trace(&mut self, _: u32) -> Result<(), RecordError> {
        Ok(())
    }
    pub fn window_starts(&mut self, _: u64) {}
    pub fn window_ends(&mut self, _: u64) {}
    pub(crate) fn summarise(&self, _: &mut Collector) {}
}
