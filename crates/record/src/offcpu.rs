//! Off-CPU profiles through the eBPF collector of `kiln-bpf`.
//!
//! Integration point: `kiln_bpf::offcpu::{OffCpuConfig, OffCpuCollector}` hands over
//! aggregated entries (pid, tid, comm, total ns, count, kernel ips, user ips from a
//! frame-pointer walk, user registers and a user stack copy). Each entry becomes one sample
//! weighted by its blocked time, unwound with the same code as perf samples
//! ([`crate::collect::UserStack::Regs`]).
use crate::error::RecordError;
use crate::live::Recording;
use crate::RecordOptions;

pub(crate) fn record_with_offcpu(_opts: &RecordOptions) -> Result<Recording, RecordError> {
    Err(RecordError::OffCpu(
        "this build has no eBPF off-CPU collector (kiln-bpf); record cpu, page-faults or \
         tracepoints such as sched:sched_switch instead"
            .into(),
    ))
}
