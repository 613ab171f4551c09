use crate::{
    Frame, FrameId, FrameKind, FrameTable, SampleTable, StackId, StackTable, StringTable, Thread,
    ThreadId, ThreadTable,
};

/// What a sample's weight counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WeightUnit {
    /// Number of samples (folded counts, unweighted perf samples).
    #[default]
    Samples,
    /// The event's period (perf's sample period: ns for cpu-clock, counts otherwise).
    Period,
    /// Time in nanoseconds.
    Nanoseconds,
    /// Time in microseconds (off-CPU profiles, as bcc's `offcputime` reports).
    Microseconds,
    /// Bytes (allocation profiles).
    Bytes,
    /// Occurrences of an event (tracepoint hits, page faults, calls).
    Events,
}

impl WeightUnit {
    /// A short English name, used as flame graph "count name".
    pub fn name(self) -> &'static str {
        match self {
            WeightUnit::Samples => "samples",
            WeightUnit::Period => "period",
            WeightUnit::Nanoseconds => "ns",
            WeightUnit::Microseconds => "us",
            WeightUnit::Bytes => "bytes",
            WeightUnit::Events => "events",
        }
    }
}

/// The event a profile measures.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct EventInfo {
    /// Event name as the source gives it (`cpu-clock`, `sched:sched_switch`, `offcpu`);
    /// empty when unknown (folded input).
    pub name: String,
    /// What weights count.
    pub unit: WeightUnit,
}

/// Where the stacks and threads of one profile landed in another
/// ([`Profile::import_tables`]).
#[derive(Clone, Debug, Default)]
pub struct ImportMap {
    /// New id of each of the other profile's stacks.
    pub stacks: Vec<StackId>,
    /// New id of each of the other profile's threads.
    pub threads: Vec<ThreadId>,
}

/// A profile: one event's weighted samples over interned stacks.
#[derive(Default, Clone, Debug)]
pub struct Profile {
    /// Interned names.
    pub strings: StringTable,
    /// Interned frames.
    pub frames: FrameTable,
    /// Stacks as a prefix tree.
    pub stacks: StackTable,
    /// Threads samples were taken on.
    pub threads: ThreadTable,
    /// The samples.
    pub samples: SampleTable,
    /// The measured event.
    pub event: EventInfo,
}

impl Profile {
    /// An empty profile of `event`.
    pub fn new(event: EventInfo) -> Self {
        Profile {
            event,
            ..Default::default()
        }
    }

    /// Interns a frame by name and kind.
    #[inline]
    pub fn frame(&mut self, name: &[u8], kind: FrameKind) -> FrameId {
        let name = self.strings.intern(name);
        self.frames.intern(Frame { name, kind })
    }

    /// The name of a frame.
    #[inline]
    pub fn frame_name(&self, f: FrameId) -> &[u8] {
        self.strings.get(self.frames.get(f).name)
    }

    /// The name of the frame of a stack node.
    #[inline]
    pub fn node_name(&self, s: StackId) -> &[u8] {
        self.frame_name(self.stacks.frame(s))
    }

    /// Interns a thread.
    pub fn thread(&mut self, pid: Option<u32>, tid: Option<u32>, name: &[u8]) -> ThreadId {
        let name = self.strings.intern(name);
        self.threads.intern(Thread { pid, tid, name })
    }

    /// Adds a sample of the stack `frames` (root first). Empty stacks are not samples a
    /// flame graph can draw; callers must count them as skipped instead.
    pub fn add_sample_path(
        &mut self,
        frames: &[FrameId],
        weight: u64,
        time: u64,
        thread: ThreadId,
    ) -> Option<StackId> {
        let stack = self.stacks.intern_path(frames)?;
        self.samples.push(stack, weight, time, thread);
        Some(stack)
    }

    /// Sum of the weights of all samples.
    pub fn total_weight(&self) -> u64 {
        self.samples.total_weight()
    }

    /// Self weight of every stack node: the sum of the weights of samples whose stack ends
    /// exactly there.
    pub fn self_weights(&self) -> Vec<u64> {
        let mut w = vec![0u64; self.stacks.len()];
        for (s, &x) in self.samples.stack.iter().zip(&self.samples.weight) {
            let slot = &mut w[s.0 as usize];
            *slot = slot.saturating_add(x);
        }
        w
    }

    /// Self weights restricted to samples whose timestamp lies in `[from, to]`.
    pub fn self_weights_in(&self, from: u64, to: u64) -> Vec<u64> {
        let mut w = vec![0u64; self.stacks.len()];
        for i in 0..self.samples.len() {
            let t = self.samples.time[i];
            if t >= from && t <= to {
                let slot = &mut w[self.samples.stack[i].0 as usize];
                *slot = slot.saturating_add(self.samples.weight[i]);
            }
        }
        w
    }

    /// Total weight of every node (self plus all descendants) from self weights.
    pub fn total_weights(&self, self_weights: &[u64]) -> Vec<u64> {
        let mut t = self_weights.to_vec();
        let parents = self.stacks.raw_parents();
        for i in (0..t.len()).rev() {
            let p = parents[i];
            if p != u32::MAX {
                t[p as usize] = t[p as usize].saturating_add(t[i]);
            }
        }
        t
    }

    /// Appends the samples of `other` to `self`, re-interning its names, frames, stacks
    /// and threads. Used to join profiles built in parallel.
    pub fn merge_from(&mut self, other: &Profile) {
        let map = self.import_tables(other);
        self.push_samples_from(other, 0..other.samples.len(), &map);
    }

    /// Interns every string, frame, stack and thread of `other` into `self` (no samples),
    /// returning where each of `other`'s stacks and threads landed.
    pub fn import_tables(&mut self, other: &Profile) -> ImportMap {
        let str_map: Vec<_> = other
            .strings
            .iter()
            .map(|(_, s)| self.strings.intern(s))
            .collect();
        let frame_map: Vec<_> = other
            .frames
            .iter()
            .map(|(_, f)| {
                self.frames.intern(Frame {
                    name: str_map[f.name.0 as usize],
                    kind: f.kind,
                })
            })
            .collect();
        let mut stacks: Vec<StackId> = Vec::with_capacity(other.stacks.len());
        for id in other.stacks.ids() {
            let parent = other.stacks.parent(id).map(|p| stacks[p.0 as usize]);
            let f = frame_map[other.stacks.frame(id).0 as usize];
            stacks.push(self.stacks.intern(parent, f));
        }
        let threads: Vec<_> = other
            .threads
            .iter()
            .map(|(_, t)| {
                self.threads.intern(Thread {
                    name: str_map[t.name.0 as usize],
                    ..t
                })
            })
            .collect();
        ImportMap { stacks, threads }
    }

    /// Appends `other`'s samples in `range`, mapped by `map` (from [`Self::import_tables`]).
    pub fn push_samples_from(
        &mut self,
        other: &Profile,
        range: std::ops::Range<usize>,
        map: &ImportMap,
    ) {
        let s = &other.samples;
        for i in range {
            let th = s.thread[i];
            let th = if th == ThreadId::NONE {
                th
            } else {
                map.threads[th.0 as usize]
            };
            self.samples.push(
                map.stacks[s.stack[i].0 as usize],
                s.weight[i],
                s.time[i],
                th,
            );
        }
    }

    /// Replaces the samples by one row per distinct stack with the summed weight (times and
    /// threads are dropped). Folded output and SVG rendering need only this.
    pub fn aggregated(&self) -> Profile {
        let w = self.self_weights();
        let mut p = Profile {
            strings: self.strings.clone(),
            frames: self.frames.clone(),
            stacks: self.stacks.clone(),
            threads: ThreadTable::new(),
            samples: SampleTable::default(),
            event: self.event.clone(),
        };
        for (i, &x) in w.iter().enumerate() {
            if x > 0 {
                p.samples
                    .push(StackId(i as u32), x, crate::NO_TIME, ThreadId::NONE);
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(p: &mut Profile, names: &[&str], w: u64) {
        let frames: Vec<_> = names
            .iter()
            .map(|n| p.frame(n.as_bytes(), FrameKind::Unknown))
            .collect();
        p.add_sample_path(&frames, w, crate::NO_TIME, ThreadId::NONE);
    }

    #[test]
    fn weights_and_merge() {
        let mut a = Profile::default();
        sample(&mut a, &["main", "f"], 2);
        sample(&mut a, &["main"], 1);
        let mut b = Profile::default();
        sample(&mut b, &["other"], 5);
        sample(&mut b, &["main", "f"], 3);
        a.merge_from(&b);
        let s = a.self_weights();
        let t = a.total_weights(&s);
        let main = a
            .stacks
            .find(None, a.frames.intern_name(&mut a.strings.clone(), b"main"))
            .unwrap();
        assert_eq!(t[main.0 as usize], 6);
        assert_eq!(a.total_weight(), 11);
        assert_eq!(a.aggregated().samples.len(), 3);
    }
}
