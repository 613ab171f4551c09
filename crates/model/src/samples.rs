//! Samples stored column-wise: stack, weight, time and thread.
use crate::{LabelSetId, LabelTable, StackId, ThreadId};

/// Timestamp value meaning "unknown".
pub const NO_TIME: u64 = u64::MAX;

/// Samples, column-wise: for sample `i`, `stack[i]`, `weight[i]`, `time[i]` (nanoseconds
/// on the input's clock, [`NO_TIME`] if unknown) and `thread[i]` ([`ThreadId::NONE`] if
/// unknown).
///
/// A sample may stand for many: folded input gives one row per distinct stack with its
/// count as weight; a recording gives one row per sample with its period or duration.
///
/// Samples may carry labels (pprof's `key=value` pairs): `labels[i]` is the set of
/// sample `i` in `label_sets`. Without any label the column is empty, so profiles
/// without labels pay nothing for them.
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
    /// Label set of each sample; empty when no sample has labels.
    pub labels: Vec<LabelSetId>,
    /// The label sets `labels` points into (names in the profile's strings).
    pub label_sets: LabelTable,
}

impl SampleTable {
    /// Each sample's stack, weight, time and thread, in order.
    pub fn rows(&self) -> impl Iterator<Item = (StackId, u64, u64, ThreadId)> + '_ {
        self.stack
            .iter()
            .zip(&self.weight)
            .zip(self.time.iter().zip(&self.thread))
            .map(|((&s, &w), (&t, &th))| (s, w, t, th))
    }

    /// Appends a sample.
    #[inline]
    pub fn push(&mut self, stack: StackId, weight: u64, time: u64, thread: ThreadId) {
        self.stack.push(stack);
        self.weight.push(weight);
        self.time.push(time);
        self.thread.push(thread);
        if !self.labels.is_empty() {
            self.labels.push(LabelSetId::EMPTY);
        }
    }

    /// Appends a sample with labels (a set of `label_sets`).
    pub fn push_labeled(
        &mut self,
        stack: StackId,
        weight: u64,
        time: u64,
        thread: ThreadId,
        labels: LabelSetId,
    ) {
        let had_labels = self.has_labels();
        self.stack.push(stack);
        self.weight.push(weight);
        self.time.push(time);
        self.thread.push(thread);
        if had_labels {
            self.labels.push(labels);
        } else if labels != LabelSetId::EMPTY {
            self.labels.resize(self.stack.len() - 1, LabelSetId::EMPTY);
            self.labels.push(labels);
        }
    }

    /// The label set of sample `i` ([`LabelSetId::EMPTY`] when it has none).
    #[inline]
    pub fn label_set(&self, i: usize) -> LabelSetId {
        self.labels.get(i).copied().unwrap_or(LabelSetId::EMPTY)
    }

    /// Whether any sample carries labels.
    pub fn has_labels(&self) -> bool {
        !self.labels.is_empty()
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
