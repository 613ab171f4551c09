use crate::{StackId, ThreadId};

/// Timestamp value meaning "unknown".
pub const NO_TIME: u64 = u64::MAX;

/// Samples, column-wise: for sample `i`, `stack[i]`, `weight[i]`, `time[i]` (nanoseconds
/// on the input's clock, [`NO_TIME`] if unknown) and `thread[i]` ([`ThreadId::NONE`] if
/// unknown).
///
/// A sample may stand for many: folded input gives one row per distinct stack with its
/// count as weight; a recording gives one row per sample with its period or duration.
#[derive(Default, Clone, Debug)]
pub struct SampleTable {
    /// Stack of each sample.
    pub stack: Vec<StackId>,
    /// Weight of each sample (count, period, nanoseconds, bytes: see the profile's unit).
    pub weight: Vec<u64>,
    /// Timestamp of each sample in nanoseconds, or [`NO_TIME`].
    pub time: Vec<u64>,
    /// Thread of each sample, or [`ThreadId::NONE`].
    pub thread: Vec<ThreadId>,
}

impl SampleTable {
    /// Appends a sample.
    #[inline]
    pub fn push(&mut self, stack: StackId, weight: u64, time: u64, thread: ThreadId) {
        self.stack.push(stack);
        self.weight.push(weight);
        self.time.push(time);
        self.thread.push(thread);
    }

    /// Number of samples (rows).
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Sum of all weights.
    pub fn total_weight(&self) -> u64 {
        self.weight.iter().fold(0u64, |a, &w| a.saturating_add(w))
    }

    /// Whether any sample has a timestamp.
    pub fn has_time(&self) -> bool {
        self.time.iter().any(|&t| t != NO_TIME)
    }

    /// Range of known timestamps `(first, last)`.
    pub fn time_range(&self) -> Option<(u64, u64)> {
        let mut it = self.time.iter().copied().filter(|&t| t != NO_TIME);
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), t| (lo.min(t), hi.max(t))))
    }
}
