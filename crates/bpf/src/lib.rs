//! eBPF collectors for `kiln record`.
//!
//! [`sampler`] unwinds the stacks of perf samples in the kernel at sample time, with
//! unwind tables ([`unwind_table`]) built from each image's `.eh_frame` for native code
//! and frame pointers for JIT code: complete stacks through code that keeps its frames
//! away from the thread's stack (the BEAM's Erlang processes).
//!
//! [`offcpu`] measures off-CPU time (when and how long threads were blocked,
//! and the kernel and user stacks where they went to sleep) with one eBPF
//! program on the `sched:sched_switch` tracepoint, one record per block. It
//! replaces bcc's `offcputime` (which needs kprobes, absent on many kernels)
//! and bpftrace scripts (whose per-stack printing costs ~0.25 s of CPU each):
//!
//! ```no_run
//! use kiln_bpf::offcpu::{OffCpuCollector, OffCpuConfig};
//! let cfg = OffCpuConfig {
//!     pids: Some(vec![1234]),
//!     min_block_us: 100,
//!     user_stack_bytes: 16384,
//!     ..Default::default()
//! };
//! let mut collector = OffCpuCollector::start(&cfg)?;
//! std::thread::sleep(std::time::Duration::from_secs(10));
//! for b in collector.drain()? {
//!     println!("{} blocked {} us from {} ns", b.blocked.tid, b.duration_ns / 1000, b.start_ns);
//! }
//! eprintln!("{:?}", collector.stats());
//! # Ok::<(), kiln_bpf::BpfError>(())
//! ```
//!
//! ## Feature `programs` (default)
//! The eBPF programs and their loaders. Without it, only [`unwind_table`] is built (no
//! clang, no libbpf).
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

#[cfg(feature = "programs")]
mod error;
#[cfg(feature = "programs")]
pub mod goparks;
#[cfg(feature = "programs")]
mod load;
#[cfg(feature = "programs")]
pub mod offcpu;
#[cfg(feature = "programs")]
mod procmaps;
#[cfg(feature = "programs")]
mod ring;
#[cfg(feature = "programs")]
pub mod sampler;
pub mod unwind_table;

#[cfg(feature = "programs")]
pub use error::BpfError;
#[cfg(feature = "programs")]
pub use load::{ProgramCost, RunTimeStats};

/// The generated skeletons, one module each (they define items of the same names).
#[cfg(feature = "programs")]
mod skel {
    #[allow(
        clippy::all,
        clippy::undocumented_unsafe_blocks,
        missing_docs,
        unused_imports,
        unsafe_op_in_unsafe_fn
    )]
    mod goparks {
        include!(concat!(env!("OUT_DIR"), "/goparks.skel.rs"));
    }
    #[allow(
        clippy::all,
        clippy::undocumented_unsafe_blocks,
        missing_docs,
        unused_imports,
        unsafe_op_in_unsafe_fn
    )]
    mod offcpu {
        include!(concat!(env!("OUT_DIR"), "/offcpu.skel.rs"));
    }
    #[allow(
        clippy::all,
        clippy::undocumented_unsafe_blocks,
        missing_docs,
        unused_imports,
        unsafe_op_in_unsafe_fn
    )]
    mod sampler {
        include!(concat!(env!("OUT_DIR"), "/sampler.skel.rs"));
    }
    pub(crate) use goparks::{GoparksSkel, GoparksSkelBuilder};
    pub(crate) use offcpu::{OffcpuSkel, OffcpuSkelBuilder};
    pub(crate) use sampler::{SamplerSkel, SamplerSkelBuilder};
}

/// Fails with [`BpfError::NoKernelBtf`] when the kernel publishes no BTF, which the
/// programs' CO-RE relocations need.
#[cfg(feature = "programs")]
fn require_btf() -> Result<(), BpfError> {
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux");
    if btf.exists() {
        Ok(())
    } else {
        Err(BpfError::NoKernelBtf {
            path: btf.to_path_buf(),
        })
    }
}
