//! What a collapse read, kept and skipped, and why each skipped sample was skipped.
use std::collections::BTreeMap;
use std::fmt;

/// Why a sample was not kept.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// A sample of another event than the one kept (perf input with several events).
    OtherEvent(String),
    /// A sample of a process or thread not selected by a pid/tid filter.
    FilteredOut,
    /// A perf sample header line that could not be read; its stack lines were skipped.
    MalformedHeader,
    /// A folded or bpftrace line without a readable count.
    MalformedLine,
    /// A sample with no frames at all.
    EmptyStack,
    /// A sample whose value is negative (a pprof difference of two profiles): kiln's
    /// weights are not.
    NegativeValue,
    /// A sample whose weight (perf period, folded count) does not fit in 64 bits.
    WeightTooLarge,
    /// A folded or bpftrace line whose count is negative.
    NegativeCount,
    /// A stack deeper than [`kiln_model::input::MAX_STACK_DEPTH`] frames.
    TooDeep,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::OtherEvent(e) => write!(
                f,
                "event '{e}' (not the one kept; choose with --event-filter)"
            ),
            SkipReason::FilteredOut => f.write_str("filtered out by --pid/--tid selection"),
            SkipReason::MalformedHeader => f.write_str("unreadable sample header line"),
            SkipReason::MalformedLine => f.write_str("malformed line"),
            SkipReason::EmptyStack => f.write_str("no frames"),
            SkipReason::NegativeValue => f.write_str("negative value (a difference of profiles)"),
            SkipReason::WeightTooLarge => {
                f.write_str("weight (period or count) too large for 64 bits")
            }
            SkipReason::NegativeCount => f.write_str("negative count"),
            SkipReason::TooDeep => write!(
                f,
                "stack deeper than {} frames",
                kiln_model::input::MAX_STACK_DEPTH
            ),
        }
    }
}

/// Counts of what a collapse read, kept and skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Samples (perf events, folded lines, bpftrace entries) read.
    pub read: u64,
    /// Samples kept in the profile.
    pub kept: u64,
    /// Skipped samples by reason.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Malformed lines warned about (stack lines that could not be read are warned about
    /// and left out of their sample's stack; the sample itself is kept).
    pub warnings: u64,
    /// The event kept, for perf input.
    pub event: Option<String>,
}

impl Stats {
    /// Counts a skipped sample.
    pub fn skip(&mut self, reason: SkipReason) {
        *self.skipped.entry(reason).or_insert(0) += 1;
    }

    /// Total skipped samples.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// Adds another input's counts.
    pub fn add(&mut self, other: &Stats) {
        self.read += other.read;
        self.kept += other.kept;
        self.warnings += other.warnings;
        for (k, v) in &other.skipped {
            *self.skipped.entry(k.clone()).or_insert(0) += v;
        }
        if self.event.is_none() {
            self.event.clone_from(&other.event);
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} samples read, {} kept, {} skipped",
            self.read,
            self.kept,
            self.skipped_total()
        )?;
        if let Some(e) = &self.event {
            write!(f, " (event '{e}')")?;
        }
        if self.warnings > 0 {
            write!(f, ", {} malformed lines", self.warnings)?;
        }
        for (reason, n) in &self.skipped {
            write!(f, "\n  skipped {n}: {reason}")?;
        }
        Ok(())
    }
}
