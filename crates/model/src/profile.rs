//! A profile: its samples, the tables they point into, and what its weights measure.
use crate::{
    Frame, FrameId, FrameKind, FrameTable, Label, LabelSetId, LabelValue, SampleTable, Source,
    StackId, StackTable, StringTable, Thread, ThreadId, ThreadTable,
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
    /// What the periods of samples of `event` count: nanoseconds of CPU time for perf's
    /// `cpu-clock` and `task-clock`, occurrences for tracepoints and software events
    /// (page faults, context switches, migrations), the counter's own unit otherwise.
    /// `perf script` text and perf.data files are weighed by this one rule, so one
    /// recording read either way compares as equal.
    pub fn of_period(event: &str) -> WeightUnit {
        let base = match event.rsplit_once(':') {
            // `cpu-clock:ppp`, `cycles:u`: modifiers.
            Some((b, m))
                if !m.is_empty()
                    && m.len() <= 6
                    && m.bytes().all(|c| b"ukhpPGHISDWe".contains(&c)) =>
            {
                b
            }
            _ => event,
        };
        match base {
            "cpu-clock" | "task-clock" => WeightUnit::Nanoseconds,
            "page-faults" | "faults" | "minor-faults" | "major-faults" | "context-switches"
            | "cs" | "cpu-migrations" | "migrations" | "alignment-faults" | "emulation-faults" => {
                WeightUnit::Events
            }
            b if b.contains(':') => WeightUnit::Events,
            _ => WeightUnit::Period,
        }
    }

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
    /// What one sample stands for, in nanoseconds of CPU time, when the weights count
    /// samples of a timer: `cpu-clock` sampled at 999 Hz fires every 1,001,001 ns of the
    /// task's CPU time (the kernel turns a timer event's frequency into this fixed
    /// period). `None` when unknown (folded input) or not a timer.
    pub sample_period_ns: Option<u64>,
}

/// What a profile's weights measure and at what scale: how every number drawn from them
/// is labelled (the viewer's header, tooltips and tables, the SVG's tooltips).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Quantity {
    /// Counted samples; `period_ns` is the CPU time one sample stands for, when known.
    Samples {
        /// Nanoseconds of CPU time per sample.
        period_ns: Option<u64>,
    },
    /// Time: `ns_per_unit` nanoseconds per unit of weight (1 for ns, 1,000 for µs).
    Time {
        /// Nanoseconds per unit of weight.
        ns_per_unit: u64,
    },
    /// Bytes (allocations, mapped or read memory).
    Bytes,
    /// Occurrences of an event (page faults, tracepoint hits, calls, cycles).
    Events,
}

impl Quantity {
    /// `v` units of weight for a reader, at a readable scale: `1.20 s`, `850 µs`,
    /// `3.50 MiB`, `1,234` (counts, without a name: the caller knows what they count).
    /// Three significant digits, as the viewer shows them (`web/src/lib/units.ts`).
    pub fn format_value(&self, v: f64) -> String {
        match *self {
            Quantity::Time { ns_per_unit } => format_ns(v * ns_per_unit as f64),
            Quantity::Bytes => format_bytes(v),
            _ => thousands(v.round() as u64),
        }
    }
}

/// A duration in nanoseconds as `12 ns`, `1.50 µs`, `850 ms`, `1.20 s`, `1,234 s`.
pub fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    let (v, unit) = if a < 1e3 {
        return format!("{} ns", ns.round());
    } else if a < 1e6 {
        (ns / 1e3, "µs")
    } else if a < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", three_digits(v))
}

/// A size in bytes as `512 B`, `1.50 KiB`, `3.20 MiB`, `1.00 GiB`.
pub fn format_bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{} B", b.round())
    } else {
        format!("{} {}", three_digits(v), UNITS[i])
    }
}

/// Three significant digits below 1,000 (`1.20`, `12.3`, `123`), whole numbers with
/// thousands separators above.
fn three_digits(v: f64) -> String {
    let a = v.abs();
    if a >= 999.5 {
        let s = thousands(a.round() as u64);
        return if v < 0.0 { format!("-{s}") } else { s };
    }
    let decimals = if a >= 99.95 {
        0
    } else if a >= 9.995 {
        1
    } else {
        2
    };
    format!("{v:.decimals$}")
}

/// `1234567` as `1,234,567`.
pub fn thousands(v: u64) -> String {
    let d = v.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl EventInfo {
    /// An event with no known sample period.
    pub fn new(name: impl Into<String>, unit: WeightUnit) -> Self {
        EventInfo {
            name: name.into(),
            unit,
            sample_period_ns: None,
        }
    }

    /// Whether the event is a timer that counts nanoseconds of CPU or wall time, so its
    /// periods are nanoseconds (perf's `cpu-clock` and `task-clock`, with or without a
    /// `:u`/`:k` modifier or a `software:` prefix).
    pub fn is_clock(&self) -> bool {
        let n = self
            .name
            .rsplit_once('/')
            .map_or(self.name.as_str(), |x| x.1);
        let n = n
            .split(':')
            .find(|s| !s.is_empty() && *s != "software" && *s != "sw");
        matches!(n, Some("cpu-clock" | "task-clock"))
    }

    /// What a weight of 1 is called in labels: `calls` for counted system calls (`mmap`,
    /// `munmap`, `brk`, `syscalls:*`), `blocks` for counted off-CPU blocks, the unit's
    /// name otherwise (`samples`, `bytes`, `us`, `events`).
    pub fn count_name(&self) -> &'static str {
        if self.unit != WeightUnit::Events {
            return self.unit.name();
        }
        match self.name.as_str() {
            "mmap" | "munmap" | "brk" => "calls",
            n if n.starts_with("syscalls:") => "calls",
            "offcpu" => "blocks",
            _ => "events",
        }
    }

    /// The nanoseconds one unit of weight stands for, for events that measure time (a
    /// timer's samples, its periods, off-CPU time); `None` for counted events.
    pub fn ns_per_weight(&self) -> Option<f64> {
        match self.quantity() {
            Quantity::Samples {
                period_ns: Some(period),
            } => Some(period as f64),
            Quantity::Time { ns_per_unit } => Some(ns_per_unit as f64),
            _ => None,
        }
    }

    /// What the weights measure: perf periods of a clock event are nanoseconds, other
    /// periods count the event; samples of a timer carry the time each stands for.
    pub fn quantity(&self) -> Quantity {
        match self.unit {
            WeightUnit::Samples => Quantity::Samples {
                period_ns: self.sample_period_ns.filter(|&p| p > 0),
            },
            WeightUnit::Period if self.is_clock() => Quantity::Time { ns_per_unit: 1 },
            WeightUnit::Period | WeightUnit::Events => Quantity::Events,
            WeightUnit::Nanoseconds => Quantity::Time { ns_per_unit: 1 },
            WeightUnit::Microseconds => Quantity::Time { ns_per_unit: 1_000 },
            WeightUnit::Bytes => Quantity::Bytes,
        }
    }
}

/// Where the stacks and threads of one profile landed in another
/// ([`Profile::import_tables`]).
#[derive(Clone, Debug, Default)]
pub struct ImportMap {
    /// New id of each of the other profile's stacks.
    pub stacks: Vec<StackId>,
    /// New id of each of the other profile's threads.
    pub threads: Vec<ThreadId>,
    /// New id of each of the other profile's label sets.
    pub labels: Vec<LabelSetId>,
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

    /// The frames of stack `s`, root first, as (name, kind): what rules that read a whole
    /// stack by its names take ([`crate::causes`], [`crate::beam`]).
    pub fn named_path(&self, s: StackId) -> Vec<(String, crate::FrameKind)> {
        let mut path = Vec::new();
        self.stacks.path_into(s, &mut path);
        path.iter()
            .map(|&f| {
                let fr = self.frames.get(f);
                (
                    String::from_utf8_lossy(self.strings.get(fr.name)).into_owned(),
                    fr.kind,
                )
            })
            .collect()
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

    /// The samples taken in `[from, to)` (ns on the samples' clock; off-CPU blocks by their
    /// start), with the same names, frames, stacks and threads: a window of a run.
    pub fn time_slice(&self, from: u64, to: u64) -> Profile {
        let time = &self.samples.time;
        self.samples_where(|i| {
            let t = time[i];
            t != crate::NO_TIME && t >= from && t < to
        })
    }

    /// The profile with the samples `keep` holds for (by index), its tables whole.
    pub fn samples_where(&self, mut keep: impl FnMut(usize) -> bool) -> Profile {
        let mut p = Profile {
            strings: self.strings.clone(),
            frames: self.frames.clone(),
            stacks: self.stacks.clone(),
            threads: self.threads.clone(),
            samples: SampleTable::default(),
            event: self.event.clone(),
        };
        p.samples.label_sets = self.samples.label_sets.clone();
        let s = &self.samples;
        for i in 0..s.len() {
            if keep(i) {
                p.samples.push_labeled(
                    s.stack[i],
                    s.weight[i],
                    s.time[i],
                    s.thread[i],
                    s.label_set(i),
                );
            }
        }
        p
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
            .map(|(id, f)| {
                let new = self.frames.intern(Frame {
                    name: str_map[f.name.0 as usize],
                    kind: f.kind,
                });
                if let Some(src) = other.frames.source(id) {
                    self.frames.set_source(
                        new,
                        Source {
                            file: str_map[src.file.0 as usize],
                            line: src.line,
                        },
                    );
                }
                new
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
        let labels = other
            .samples
            .label_sets
            .iter()
            .map(|(_, set)| {
                let mapped: Vec<Label> = set
                    .iter()
                    .map(|l| Label {
                        key: str_map[l.key.0 as usize],
                        value: match l.value {
                            LabelValue::Str(v) => LabelValue::Str(str_map[v.0 as usize]),
                            LabelValue::Num { value, unit } => LabelValue::Num {
                                value,
                                unit: unit.map(|u| str_map[u.0 as usize]),
                            },
                        },
                    })
                    .collect();
                self.samples.label_sets.intern(&mapped)
            })
            .collect();
        ImportMap {
            stacks,
            threads,
            labels,
        }
    }

    /// Appends `other`'s samples in `range`, mapped by `map` (from [`Self::import_tables`]).
    pub(crate) fn push_samples_from(
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
            let labels = map
                .labels
                .get(s.label_set(i).0 as usize)
                .copied()
                .unwrap_or(LabelSetId::EMPTY);
            self.samples.push_labeled(
                map.stacks[s.stack[i].0 as usize],
                s.weight[i],
                s.time[i],
                th,
                labels,
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
    fn quantities() {
        let q = |name: &str, unit| EventInfo::new(name, unit).quantity();
        assert_eq!(
            q("cpu-clock", WeightUnit::Period),
            Quantity::Time { ns_per_unit: 1 }
        );
        assert_eq!(
            q("cpu-clock:u", WeightUnit::Period),
            Quantity::Time { ns_per_unit: 1 }
        );
        assert_eq!(
            q("software:task-clock", WeightUnit::Period),
            Quantity::Time { ns_per_unit: 1 }
        );
        assert_eq!(q("cycles", WeightUnit::Period), Quantity::Events);
        assert_eq!(q("page-faults", WeightUnit::Events), Quantity::Events);
        assert_eq!(
            q("offcpu", WeightUnit::Microseconds),
            Quantity::Time { ns_per_unit: 1000 }
        );
        assert_eq!(q("mmap", WeightUnit::Bytes), Quantity::Bytes);
        assert_eq!(
            q("", WeightUnit::Samples),
            Quantity::Samples { period_ns: None }
        );
        let mut e = EventInfo::new("cpu-clock", WeightUnit::Samples);
        e.sample_period_ns = Some(1_001_001);
        assert_eq!(
            e.quantity(),
            Quantity::Samples {
                period_ns: Some(1_001_001)
            }
        );
    }

    #[test]
    fn readable_values() {
        let t = Quantity::Time { ns_per_unit: 1 };
        assert_eq!(t.format_value(1_199_199_198.0), "1.20 s");
        assert_eq!(t.format_value(850_000_000.0), "850 ms");
        assert_eq!(t.format_value(12_345.0), "12.3 µs");
        assert_eq!(t.format_value(999.0), "999 ns");
        assert_eq!(t.format_value(1_234_000_000_000.0), "1,234 s");
        let us = Quantity::Time { ns_per_unit: 1000 };
        assert_eq!(us.format_value(1500.0), "1.50 ms");
        assert_eq!(Quantity::Bytes.format_value(512.0), "512 B");
        assert_eq!(
            Quantity::Bytes.format_value(3.5 * 1024.0 * 1024.0),
            "3.50 MiB"
        );
        assert_eq!(Quantity::Events.format_value(1_234_567.0), "1,234,567");
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
