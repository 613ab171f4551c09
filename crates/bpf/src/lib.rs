//! eBPF collectors for `kiln record`.
//!
//! [`offcpu`] measures off-CPU time (how long threads were blocked, and the
//! kernel and user stacks where they went to sleep) with one eBPF program on
//! the `sched:sched_switch` tracepoint, aggregated in the kernel. It replaces
//! bcc's `offcputime` (which needs kprobes, absent on many kernels) and
//! bpftrace scripts (whose per-stack printing costs ~0.25 s of CPU each):
//!
//! ```no_run
//! use kiln_bpf::offcpu::{OffCpuCollector, OffCpuConfig};
//! let cfg = OffCpuConfig { pids: Some(vec![1234]), min_block_us: 100, user_stack_bytes: 16384 };
//! let mut collector = OffCpuCollector::start(&cfg)?;
//! std::thread::sleep(std::time::Duration::from_secs(10));
//! for e in collector.drain()? {
//!     println!("{} {} us in {} blocks", e.tid, e.total_ns / 1000, e.count);
//! }
//! eprintln!("{:?}", collector.stats());
//! # Ok::<(), kiln_bpf::BpfError>(())
//! ```
//!
//! ## Requirements
//! Running: Linux >= 5.18 with BTF (`/sys/kernel/btf/vmlinux`), x86-64, and
//! root or CAP_BPF + CAP_PERFMON. Building: clang and the Linux UAPI headers
//! (Debian: `clang`, `linux-libc-dev`, plus `libelf-dev`, `zlib1g-dev`,
//! `pkg-config` and `make` for the libbpf that libbpf-sys builds and links
//! statically). No bpftool, no kernel headers and no BTF are needed to build:
//! the few kernel types used are declared in `src/bpf/kiln_kernel.h` and
//! relocated against the running kernel at load time (CO-RE).
#![deny(missing_docs)]

mod error;
pub mod offcpu;
mod procmaps;

pub use error::BpfError;

#[allow(clippy::all, missing_docs, unused_imports, unsafe_op_in_unsafe_fn)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/offcpu.skel.rs"));
}
