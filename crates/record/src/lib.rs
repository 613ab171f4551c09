//! # kiln-record: CPU, off-CPU and tracepoint profiles of live processes
//!
//! `kiln record` replaces `perf record -g` + `perf script` + a collapser with one step
//! that produces a [`kiln_model::Profile`] per event, with complete stacks:
//!
//! ```text
//! kiln record -p 1234 -d 30 -o cpu.svg                  # on-CPU flame graph of a process
//! kiln record -e cpu,page-faults,mmap -o run.kiln -- ./server --port 8080
//! kiln record -a -F 99 -d 10 -o all.folded              # the whole machine
//! ```
//!
//! ## Design constraints
//!
//! * **No `perf script`.** It is the slowest link of the classic pipeline (about 2.5 s for a
//!   25 s, 2-CPU recording). Samples are read straight from `perf_event_open` ring buffers
//!   and an eBPF ring buffer ([`record`]) as they arrive; the recording is never kept as a
//!   list of raw records, so the profile is ready a moment after the recording stops.
//! * **Complete stacks through mixed code.** Debian's `beam.smp` is stripped and its C code
//!   has no frame pointers, while the Erlang JIT's code has them and keeps each Erlang
//!   process's frames on that process's own stack: a frame-pointer walk loses most Erlang
//!   frames, and a DWARF walk of a stack copy stops at the first JIT frame. So stacks are
//!   unwound in the kernel at sample time ([`UnwindMode::Kernel`], kiln-bpf's sampler):
//!   `.eh_frame` CFI (as tables built here) for code in ELF images, frame pointers for JIT
//!   code, reading the thread's memory wherever its frames are. Where eBPF is not
//!   available ([`UnwindMode::Copy`]), and for tracepoints and off-CPU snapshots, a copy of
//!   the user stack taken with each sample is unwound afterwards by framehop with the same
//!   methods; the eBPF off-CPU collector hands over the same input (registers + stack
//!   bytes + mappings), so one code path unwinds both.
//! * **Names without perf.** ELF symbol tables (or installed separate debug files),
//!   `/proc/kallsyms`, JIT perf maps (`/tmp/perf-<pid>.map`, read at the end of the
//!   recording so that JIT entries exist), the vDSO's own symbols, Rust and C++
//!   demangling, and `image+0xSTART` where nothing names the code (the start of its
//!   function, from `.eh_frame`, so that one stripped function is one frame). See
//!   [`symbols`].
//! * **Shaped like stackcollapse-perf.** Stacks are root first with the thread name
//!   (`comm`) as root frame, so `--merge-threads` applies; kernel frames get `_[k]` and JIT
//!   frames `_[j]` only when asked ([`NamingOptions`]), as `stackcollapse-perf.pl --kernel`
//!   and `--jit` do. Samples keep their timestamps (CLOCK_MONOTONIC ns) and threads.
//! * **Existing recordings too.** [`perf_data::read`] turns a `perf.data` file into the same
//!   profiles, with the same unwinder when the file has user stacks (`--call-graph dwarf`).
//!
//! Profiles are saved in kiln's native format (`kiln_model::native`) or as folded stacks.
#![deny(missing_docs)]

mod child;
mod collect;
pub mod debuginfo;
mod error;
mod events;
pub mod goparks;
#[cfg(feature = "bpf")]
mod inkernel;
mod live;
mod offcpu;
pub mod perf_data;
pub mod python;
mod records;
mod runtimes;
pub mod symbols;
mod sys;
mod unwind;

pub use collect::{
    fp_only_said, BpfCost, NamingOptions, PythonSummary, RecordingSummary, UnnamedImage,
};
pub use error::RecordError;
pub use events::EventSpec;
#[cfg(feature = "bpf")]
pub use inkernel::{EventWalks, InKernelSummary};
pub use live::{record, Recording, StopReason};
pub use runtimes::is_jvm;

use kiln_model::WeightUnit;
use std::ffi::OsString;
use std::time::Duration;

/// What to record.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Target {
    /// Existing processes, all their threads, including threads created later.
    Pids(Vec<u32>),
    /// A command to start (program and arguments), followed with its children.
    Command(Vec<OsString>),
    /// Every process on every CPU.
    System,
}

/// Where user stacks are unwound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnwindMode {
    /// In the kernel when it can be (eBPF: root, BTF; software events such as `cpu` and
    /// `page-faults`), otherwise from copies of the stack, with a warning.
    #[default]
    Auto,
    /// In the kernel at sample time, by an eBPF program that follows CFI tables built
    /// from `.eh_frame` and frame pointers for JIT code, reading the thread's memory
    /// wherever its frames are. Fails if eBPF is not available. Tracepoint events are
    /// still unwound from copies.
    Kernel,
    /// From a copy of the stack taken with each sample (`--stack-size` bytes from the
    /// stack pointer up), unwound after the fact, as `perf record --call-graph dwarf`
    /// does. Frames kept elsewhere (the BEAM's Erlang stacks) are out of its reach.
    Copy,
}

/// Options of a recording.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// What to record. No default.
    pub target: Target,
    /// Events, one profile each. Default: `[EventSpec::Cpu]`.
    pub events: Vec<EventSpec>,
    /// Sampling frequency of the `cpu` event in Hz. Default: 999 (as perf's default
    /// `-F 999` advice: not a multiple of common timer frequencies).
    pub frequency: u32,
    /// Stop after this long. Default: none (stop on the flag or when the target exits).
    pub duration: Option<Duration>,
    /// Bytes of user stack copied with each sample for unwinding; 0 disables user
    /// stacks. Default: 16384 (deep enough for the BEAM's and JVM's stacks, and about
    /// 16 MB/s per busy CPU at 999 Hz).
    pub stack_bytes: u32,
    /// Ring buffer data pages per CPU (rounded up to a power of two). Default: 2048 (8 MiB:
    /// half a second of 16 KiB samples at 999 Hz, read every 100 ms).
    pub buffer_pages: usize,
    /// How frames are named. Default: no annotations.
    pub naming: NamingOptions,
    /// Where user stacks are unwound. Default: [`UnwindMode::Auto`].
    pub unwind: UnwindMode,
    /// Off-CPU blocks shorter than this many microseconds add no time (they are counted
    /// in [`RecordingSummary::offcpu_short_blocks`]). Default: 0 (every block).
    pub offcpu_min_block_us: u64,
    /// Unit of off-CPU weights: [`WeightUnit::Microseconds`] (as bcc's `offcputime` and
    /// the usual off-CPU flame graph recipes) or [`WeightUnit::Nanoseconds`]. Blocks are
    /// measured in nanoseconds; in microseconds each sample's weight is rounded so that
    /// the weights of the samples of one stack add up to that stack's total, rounded
    /// (a sample of a block under half a microsecond may weigh 0). Default:
    /// microseconds.
    pub offcpu_unit: WeightUnit,
    /// Off-CPU stacks go on with the stack of the thread that woke the blocked one (as
    /// bcc's `offwaketime`): the blocked stack, a `--` frame, then the waker's stack from
    /// where it woke the thread up to its root. In lock contention the waker is the
    /// lock's holder. Default: false.
    pub offcpu_wakers: bool,
    /// Raised (by the binary's signal handling, or a `kiln run` ending its measurement)
    /// to end the recording; it is then written as usual. Default: none.
    pub stop: Option<kiln_os::stop::Stop>,
    /// Start sampling only when told: the recorder loads its programs and opens its events,
    /// raises [`StartGate::ready`], and enables the events once [`StartGate::go`] is raised.
    /// `kiln run` uses it so that the measurement starts exactly when the warm-up ends
    /// (or before a load with its own schedule, a sweep, starts), whatever the start-up
    /// costs. Default: none (sampling starts as soon as everything is ready). Not used for
    /// a started command, whose events enable themselves at its exec.
    pub gate: Option<StartGate>,
}

/// The two signals of a gated start ([`RecordOptions::gate`]).
#[derive(Clone, Debug, Default)]
pub struct StartGate {
    /// Raised by the recorder when everything is loaded and opened.
    pub ready: kiln_os::stop::Stop,
    /// Raised by the caller to start sampling.
    pub go: kiln_os::stop::Stop,
}

impl RecordOptions {
    /// Options with the defaults above for `target`.
    pub fn new(target: Target) -> Self {
        RecordOptions {
            target,
            events: vec![EventSpec::Cpu],
            frequency: 999,
            duration: None,
            stack_bytes: 16384,
            buffer_pages: 2048,
            naming: NamingOptions::default(),
            unwind: UnwindMode::Auto,
            offcpu_min_block_us: 0,
            offcpu_unit: WeightUnit::Microseconds,
            offcpu_wakers: false,
            stop: None,
            gate: None,
        }
    }
}
