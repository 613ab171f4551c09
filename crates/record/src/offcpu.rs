//! Off-CPU profiles through the eBPF collector of `kiln-bpf` (feature `bpf`, on by
//! default).
//!
//! The collector aggregates blocked time in the kernel per (thread, kernel stack, user
//! stack) and hands over, per entry, the kernel addresses, the user registers and a copy
//! of the user stack. Each entry becomes one sample weighted by its blocked time in
//! nanoseconds, unwound by the same code as perf samples (CFI + frame pointers), and
//! timestamped with the end of the latest block it aggregates (the kernel aggregates
//! between drains, a second apart, so individual blocks have no time of their own).
use crate::collect::Collector;
#[cfg(feature = "bpf")]
use crate::collect::UserStack;
use crate::error::RecordError;

#[cfg(feature = "bpf")]
pub(crate) struct OffCpu {
    collector: kiln_bpf::offcpu::OffCpuCollector,
    event: usize,
}

#[cfg(feature = "bpf")]
impl OffCpu {
    /// Starts collecting for `pids` (`None`: the whole system) into event `event`.
    pub fn start(
        pids: Option<Vec<u32>>,
        stack_bytes: u32,
        min_block_us: u64,
        event: usize,
    ) -> Result<Self, RecordError> {
        let cfg = kiln_bpf::offcpu::OffCpuConfig {
            pids,
            min_block_us,
            user_stack_bytes: stack_bytes.min(kiln_bpf::offcpu::MAX_USER_STACK_BYTES),
        };
        let collector = kiln_bpf::offcpu::OffCpuCollector::start(&cfg)
            .map_err(|e| RecordError::OffCpu(e.to_string()))?;
        Ok(OffCpu { collector, event })
    }

    /// Moves what the kernel aggregated so far into `c`.
    pub fn drain(&mut self, c: &mut Collector) -> Result<(), RecordError> {
        let entries = self
            .collector
            .drain()
            .map_err(|e| RecordError::OffCpu(e.to_string()))?;
        let now = monotonic_ns();
        for e in entries {
            if e.total_ns == 0 {
                continue;
            }
            if !e.comm.is_empty() {
                c.on_comm_if_unknown(e.tid, &e.comm);
            }
            let user = match e.user_regs {
                Some(r) if !e.user_stack.is_empty() => UserStack::Regs {
                    ip: r.ip,
                    sp: r.sp,
                    bp: r.bp,
                    stack: &e.user_stack,
                    fp_chain: &e.user_ips,
                },
                _ if !e.user_ips.is_empty() => UserStack::Ips(&e.user_ips),
                _ => UserStack::None,
            };
            let mut kernel = c.trim_tracing_frames(&e.kernel_ips).iter().copied();
            // Stamped with the end of the latest block aggregated into the entry (the
            // kernel keeps no per-block times); entries cover one drain interval.
            let time = if e.last_ns != 0 { e.last_ns } else { now };
            c.add_sample(
                self.event,
                e.pid,
                e.tid,
                time,
                e.total_ns,
                &mut kernel,
                user,
            );
        }
        Ok(())
    }

    /// Writes the collector's counts into the summary.
    pub fn summarise(&self, c: &mut Collector) {
        let s = self.collector.stats();
        c.summary.offcpu_dropped_blocks = s.dropped_blocks;
        c.summary.offcpu_short_blocks = s.short_blocks;
        c.summary.offcpu_blocks = s.blocks;
    }
}

#[cfg(not(feature = "bpf"))]
pub(crate) struct OffCpu;

#[cfg(not(feature = "bpf"))]
impl OffCpu {
    pub fn start(_: Option<Vec<u32>>, _: u32, _: u64, _: usize) -> Result<Self, RecordError> {
        Err(RecordError::OffCpu(
            "this kiln was built without the `bpf` feature (eBPF); rebuild with \
             --features bpf, or record sched:sched_switch instead"
                .into(),
        ))
    }
    pub fn drain(&mut self, _: &mut Collector) -> Result<(), RecordError> {
        Ok(())
    }
    pub fn summarise(&self, _: &mut Collector) {}
}

/// CLOCK_MONOTONIC in nanoseconds, the clock perf samples use here too.
#[cfg(feature = "bpf")]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
