//! The text of `perf script`: a header line per sample, then its stack, leaf first, one
//! frame per line, then a blank line.
//!
//! ```text
//! beam.smp 12688/12764 [001] 6544038.708352:   10101010 cpu-clock:
//!         7f1e2215d058 $rabbit_exchange:route/2+0x58 (/tmp/perf-12688.map)
//!         55d0c3a1b2c4 process_main+0x1c4 (/usr/lib/erlang/erts-13.1.5/bin/beam.smp)
//!
//! rabbitmq 412 [000] 17.5: syscalls:sys_enter_mmap: addr: 0x00000000, len: 0x00040000
//!         7f3a… __mmap+0x1a (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! ```
//!
//! Compatible with `stackcollapse-perf.pl` and `inferno-collapse-perf` (same root frame,
//! same tidying of names, same annotations, same default of keeping only the first event
//! seen), with these differences, each of which keeps a sample the others lose:
//!
//! * the header is read by anchoring on the timestamp (`123.456:`), so any comm (with
//!   spaces, digits, colons, `:-1`) and any event with argument text is understood;
//! * a symbol starting with `(` (`(anonymous namespace)::f`) is a frame, not a process
//!   name to skip;
//! * a sample without a call chain (the frame printed on the header line) is kept;
//! * a sample whose stack could not be read at all still counts, with its root frame.
//!
//! The collapser is in five parts: `tokenize` reads header and stack lines without
//! copying them, `fold` turns each task's samples into nodes of a call tree (`tree`),
//! naming each distinct frame once (`names`), and `pipeline` cuts the input into blocks,
//! parses them on several threads and joins the results in input order.
mod fold;
mod names;
mod pipeline;
mod tokenize;
mod tree;

pub use pipeline::collapse_reader;
pub use tokenize::{parse_frame, parse_header, Header};

use crate::{CollapseError, Collapsed, Input, Options};

/// How each perf sample is weighted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PerfWeight {
    /// Each sample counts its period where perf printed one (nanoseconds for cpu-clock,
    /// events otherwise), else 1: what stackcollapse-perf.pl and inferno do.
    #[default]
    Period,
    /// Each sample counts 1.
    Samples,
}

/// Options of the `perf script` collapser. Defaults match `stackcollapse-perf.pl`.
#[derive(Clone, Debug, Default)]
pub struct PerfOptions {
    /// Root frame `comm-PID` instead of `comm`. Default: false.
    pub include_pid: bool,
    /// Root frame `comm-PID/TID` (implies `include_pid`). Default: false.
    pub include_tid: bool,
    /// Append `_[k]` to kernel frames. Default: false.
    pub annotate_kernel: bool,
    /// Append `_[j]` to JIT frames (from `/tmp/perf-PID.map`). Default: false.
    pub annotate_jit: bool,
    /// Append `_[i]` to inlined frames (Java `a->b` chains, perf's `(inlined)` frames).
    /// Default: false.
    pub annotate_inline: bool,
    /// Name frames without a symbol `[module <0xADDR>]` instead of `[module]`. Default: false.
    pub include_addrs: bool,
    /// Keep only samples of this event. Default: `None`, meaning the first event seen.
    pub event_filter: Option<String>,
    /// Sample weighting. Default: one per sample.
    pub weight: PerfWeight,
    /// Parser threads; 0 means one per available core for `perf script` text and one for
    /// folded stacks (see [`crate::folded::collapse_reader`]). Default: 0.
    pub threads: usize,
    /// Keep one row per distinct stack with the summed weight, dropping per-sample
    /// timestamps and threads: all that folded output and SVG rendering need, and much
    /// smaller and faster than a row per sample. Default: false.
    pub aggregate: bool,
    /// Size of the blocks the input is read and parsed in; 0 means 512 KiB. Tests set it
    /// small to exercise block boundaries. Default: 0.
    pub block_bytes: usize,
}

/// Collapses `perf script` text (a [`crate::Collapser`]).
pub fn collapse(input: Input<'_>, opts: &Options) -> Result<Collapsed, CollapseError> {
    let mut data = input.data;
    collapse_reader(input.name, &mut data, opts).map_err(|e| match e {
        ReadError::Collapse(e) => e,
        ReadError::Io(e) => unreachable!("reading a slice cannot fail: {e}"),
    })
}

/// Errors of [`collapse_reader`]: the input could not be read, or it is malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Reading the input failed.
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    /// The input is malformed (strict mode) or too large.
    #[error(transparent)]
    Collapse(#[from] CollapseError),
}
