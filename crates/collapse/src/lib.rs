//! # kiln-collapse: profiler output in, kiln profiles out
//!
//! Collapsing turns the text a profiler prints into weighted stacks. One module per
//! format, each with a [`Collapser`]:
//!
//! * `perf script` text ([`perf::collapse`], and [`perf::collapse_reader`] for a stream),
//!   everything `stackcollapse-perf.pl` and `inferno-collapse-perf` read, plus what they
//!   stumble on: tracepoints with argument text (`sched:sched_switch: prev_comm=…`),
//!   samples without a call chain, comm names such as `:-1`, symbols starting with `(`;
//! * folded stacks ([`folded::collapse`]): `a;b;c 42`, and the two-count form
//!   `a;b;c 42 17` that differential flame graphs use; bcc's `-f` output is folded;
//! * bpftrace and bcc map dumps ([`bpftrace::collapse`]): `@[\n  frame\n  frame\n]: 42`.
//!
//! Which format an input is, by name or by content, is `kiln-formats`' business: its one
//! table of formats names these collapsers as the readers of the three text formats.
//!
//! ```text
//! perf script | kiln collapse > stacks.folded
//! kiln collapse --format bpftrace offcpu.txt > offcpu.folded
//! ```
//!
//! ## Every sample is accounted for
//!
//! [`Stats`] counts samples read, kept and skipped with the reason of each skip;
//! [`Warning`]s name the file, the line and the offending text. With
//! [`Options::strict`], the first warning is an error instead.
//!
//! ## Design constraints
//!
//! The parsers work on a byte slice (a memory-mapped file or stdin read whole) and never
//! copy a line: `perf script` output of a busy minute is hundreds of megabytes, and the
//! collapse step must stay well below the time `perf script` takes. Frame lines are looked
//! up in a cache keyed by their symbol and module bytes before any tidying, so each
//! distinct frame is tidied once. `perf script` input is cut at sample boundaries and
//! parsed by several threads into separate profiles that are merged at the end.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod blocks;
pub mod bpftrace;
mod error;
pub mod folded;
pub mod perf;
mod stats;

pub use error::{CollapseError, Warning};
pub use stats::{SkipReason, Stats};

use kiln_model::Profile;

/// A collapser: the bytes of one input in, its profile out ([`perf::collapse`],
/// [`folded::collapse`], [`bpftrace::collapse`]).
pub type Collapser = fn(Input<'_>, &Options) -> Result<Collapsed, CollapseError>;

/// Options shared by all formats.
#[derive(Clone, Debug)]
pub struct Options {
    /// Make the first malformed line an error instead of a counted warning. Default: false.
    pub strict: bool,
    /// Options of the `perf script` parser.
    pub perf: perf::PerfOptions,
    /// Keep at most this many warnings in [`Collapsed::warnings`] (all are counted).
    /// Default: 100.
    pub max_warnings: usize,
    /// Folded input: keep samples in input order (flame charts need it). Otherwise lines
    /// are sorted before the stack tree is built, which is much faster. Default: false.
    pub keep_order: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            strict: false,
            perf: perf::PerfOptions::default(),
            max_warnings: 100,
            keep_order: false,
        }
    }
}

/// A named input: `name` appears in warnings and errors (a path, or `<stdin>`).
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// Display name.
    pub name: &'a str,
    /// The bytes.
    pub data: &'a [u8],
}

/// The result of collapsing one input.
#[derive(Debug, Default)]
pub struct Collapsed {
    /// The profile (for two-count folded input: the "before" counts).
    pub profile: Profile,
    /// For two-count folded input, the "after" counts.
    pub after: Option<Profile>,
    /// What was read, kept and skipped.
    pub stats: Stats,
    /// The first warnings (see [`Options::max_warnings`]); `stats.warnings` counts all.
    pub warnings: Vec<Warning>,
}

/// Collects warnings: counts all, keeps the first `max`, or fails on the first in strict mode.
#[derive(Debug)]
pub(crate) struct Warnings<'a> {
    source: &'a str,
    strict: bool,
    max: usize,
    pub(crate) list: Vec<Warning>,
    pub(crate) count: u64,
}

impl<'a> Warnings<'a> {
    pub(crate) fn new(source: &'a str, opts: &Options) -> Self {
        Warnings {
            source,
            strict: opts.strict,
            max: opts.max_warnings,
            list: Vec::new(),
            count: 0,
        }
    }

    pub(crate) fn source(&self) -> &str {
        self.source
    }

    pub(crate) fn warn(
        &mut self,
        line: u64,
        message: &str,
        text: &[u8],
    ) -> Result<(), CollapseError> {
        let w = Warning::new(self.source, line, message, text);
        if self.strict {
            return Err(CollapseError::Malformed(w));
        }
        self.count += 1;
        if self.list.len() < self.max {
            self.list.push(w);
        }
        Ok(())
    }
}
