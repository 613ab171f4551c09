//! kiln profile → pprof.
//!
//! * **Values.** A profile of counted timer samples (`cpu-clock` at 999 Hz) gets two
//!   sample types, as Go's CPU profiles have: `samples/count` and `EVENT/nanoseconds`
//!   (count × period), with `period_type`; other profiles one, in their unit: CPU periods
//!   and off-CPU time in nanoseconds (microseconds are converted), bytes, counts.
//! * **Stacks.** One `Function` per distinct name and file; one `Location` per frame and
//!   the frames inlined into it (kiln's [`FrameKind::Inline`] frames join the location of
//!   their caller, as pprof's `Line`s do), so `go tool pprof -traces` prints kiln's stacks.
//! * **Samples.** Samples with the same stack, thread and labels are summed into one;
//!   threads become the labels `thread` (name), `pid` and `tid`, which kiln's pprof reader
//!   turns back into threads; kiln's own labels are written as they are.
use super::proto;
use kiln_model::{
    FrameId, FrameKind, LabelSetId, LabelValue, Profile, StackId, ThreadId, WeightUnit,
};
use std::collections::HashMap;

/// Options of the pprof writer.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// When the profile was taken, ns since the Unix epoch (0: unknown).
    pub time_nanos: i64,
    /// Free-form comments to keep in the file.
    pub comments: Vec<String>,
}

struct Strings {
    table: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.get(b"");
        s
    }

    /// The index of `v` in the table. The table's strings are proto3 `string`s, which
    /// must be UTF-8 (strict decoders — Go's protobuf, protobuf-java — refuse a file
    /// holding one that is not): bytes that are not are written as `\xNN`
    /// ([`kiln_model::text::from_bytes`]), never dropped.
    fn get(&mut self, v: &[u8]) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table
            .push(kiln_model::text::from_bytes(v).into_owned().into_bytes());
        self.index.insert(v.to_vec(), i);
        i
    }
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Computes a sample value from (weight sum, rows, period).
type ValueFn = fn(u64, u64, u64) -> u64;

/// The sample types of `p`, how to compute each value, and the period.
type ValueTypes = (Vec<(String, &'static str)>, Vec<ValueFn>, Option<u64>);

/// The sample types of `p` and how to compute each value from (weight sum, rows).
fn value_types(p: &Profile) -> ValueTypes {
    let ev = if p.event.name.is_empty() {
        "samples".to_string()
    } else {
        p.event.name.clone()
    };
    let period = p.event.sample_period_ns.filter(|&x| x > 0);
    match p.event.unit {
        WeightUnit::Samples => match period {
            Some(per) => (
                vec![
                    ("samples".into(), "count"),
                    // Go's name for the time of CPU samples; never two types of one name.
                    (
                        if ev == "samples" { "cpu".into() } else { ev },
                        "nanoseconds",
                    ),
                ],
                vec![|w, _, _| w, |w, _, per| w.saturating_mul(per)],
                Some(per),
            ),
            None => (vec![(ev, "count")], vec![|w, _, _| w], None),
        },
        WeightUnit::Period if p.event.is_clock() => {
            (vec![(ev, "nanoseconds")], vec![|w, _, _| w], None)
        }
        WeightUnit::Period | WeightUnit::Events => (vec![(ev, "count")], vec![|w, _, _| w], None),
        WeightUnit::Nanoseconds => (vec![(ev, "nanoseconds")], vec![|w, _, _| w], None),
        WeightUnit::Microseconds => (
            vec![(ev, "nanoseconds")],
            vec![|w, _, _| w.saturating_mul(1000)],
            None,
        ),
        WeightUnit::Bytes => (vec![(ev, "bytes")], vec![|w, _, _| w], None),
        _ => (vec![(ev, "count")], vec![|w, _, _| w], None),
    }
}

/// Builds the pprof message of `p`.
pub fn to_message(p: &Profile, opts: &WriteOptions) -> proto::Profile {
    let (types, compute, period) = value_types(p);
    let mut b = Builder {
        p,
        strings: Strings::new(),
        msg: proto::Profile {
            time_nanos: opts.time_nanos,
            ..Default::default()
        },
        functions: HashMap::new(),
        fn_by_name: HashMap::new(),
        locations: HashMap::new(),
        stack_locs: HashMap::new(),
    };
    b.header(&types, period, opts);
    let per = period.unwrap_or(0);
    for ((stack, thread, labels), (w, rows)) in sums(p) {
        let location_id = b.stack_locations(stack).to_vec();
        let label = b.labels(thread, labels);
        b.msg.sample.push(proto::Sample {
            location_id,
            value: compute.iter().map(|f| clamp(f(w, rows, per))).collect(),
            label,
        });
    }
    b.msg.string_table = b.strings.table;
    b.msg
}

/// What makes samples one pprof sample.
type SampleKey = (StackId, ThreadId, LabelSetId);

/// Samples summed by (stack, thread, labels): their weight and their count, in the
/// order of those ids.
fn sums(p: &Profile) -> Vec<(SampleKey, (u64, u64))> {
    let mut sums: HashMap<SampleKey, (u64, u64)> = HashMap::new();
    let s = &p.samples;
    for i in 0..s.len() {
        let e = sums
            .entry((s.stack[i], s.thread[i], s.label_set(i)))
            .or_insert((0, 0));
        e.0 = e.0.saturating_add(s.weight[i]);
        e.1 += 1;
    }
    let mut keys: Vec<_> = sums.into_iter().collect();
    keys.sort_unstable_by_key(|(k, _)| (k.0 .0, k.1 .0, k.2 .0));
    keys
}

/// The message being built and its tables: functions by frame and by (name, file),
/// locations by their group of frames, each stack's locations.
struct Builder<'p> {
    p: &'p Profile,
    strings: Strings,
    msg: proto::Profile,
    functions: HashMap<FrameId, u64>,
    fn_by_name: HashMap<(kiln_model::StrId, Option<kiln_model::StrId>), u64>,
    locations: HashMap<Vec<FrameId>, u64>,
    stack_locs: HashMap<StackId, Vec<u64>>,
}

impl Builder<'_> {
    /// Sample types, period, duration, comments and the one mapping.
    fn header(&mut self, types: &[(String, &str)], period: Option<u64>, opts: &WriteOptions) {
        let (msg, strings) = (&mut self.msg, &mut self.strings);
        for (t, u) in types {
            msg.sample_type.push(proto::ValueType {
                r#type: strings.get(t.as_bytes()),
                unit: strings.get(u.as_bytes()),
            });
        }
        if let Some(per) = period {
            msg.period_type = Some(proto::ValueType {
                r#type: strings.get(types[types.len() - 1].0.as_bytes()),
                unit: strings.get(b"nanoseconds"),
            });
            msg.period = clamp(per);
        }
        msg.default_sample_type = msg.sample_type[msg.sample_type.len() - 1].r#type;
        if let Some((a, b)) = self.p.samples.time_range() {
            msg.duration_nanos = clamp(b - a);
        }
        for c in &opts.comments {
            let i = strings.get(c.as_bytes());
            msg.comment.push(i);
        }
        // A mapping saying the locations are symbolised, so pprof never tries to.
        msg.mapping.push(proto::Mapping {
            id: 1,
            has_functions: true,
            has_filenames: self.p.frames.has_sources(),
            has_line_numbers: self.p.frames.has_sources(),
            has_inline_frames: true,
            ..Default::default()
        });
    }

    /// The locations of `stack`, leaf first: each frame with the inlined frames that
    /// follow it (from the root) is one location.
    fn stack_locations(&mut self, stack: StackId) -> &[u64] {
        if !self.stack_locs.contains_key(&stack) {
            let p = self.p;
            let mut frames = Vec::new();
            let mut n = Some(stack);
            while let Some(id) = n {
                frames.push(p.stacks.frame(id));
                n = p.stacks.parent(id);
            }
            // Root first; each frame grouped with the inlined frames that follow it.
            frames.reverse();
            let mut groups: Vec<Vec<FrameId>> = Vec::new();
            for &f in &frames {
                let inline = p.frames.get(f).kind == FrameKind::Inline;
                match groups.last_mut() {
                    Some(g) if inline => g.push(f),
                    _ => groups.push(vec![f]),
                }
            }
            let ids = groups.into_iter().rev().map(|g| self.location(g)).collect();
            self.stack_locs.insert(stack, ids);
        }
        &self.stack_locs[&stack]
    }

    /// The location of a group of frames (a frame and those inlined into it, root
    /// first), added on first sight with its lines innermost first.
    fn location(&mut self, g: Vec<FrameId>) -> u64 {
        if let Some(&id) = self.locations.get(&g) {
            return id;
        }
        let next = self.locations.len() as u64 + 1;
        let line = g
            .iter()
            .rev()
            .map(|&f| proto::Line {
                function_id: self.function(f),
                line: self.p.frames.source(f).map_or(0, |s| i64::from(s.line)),
                column: 0,
            })
            .collect();
        self.msg.location.push(proto::Location {
            id: next,
            mapping_id: 1,
            address: next,
            line,
            is_folded: false,
        });
        self.locations.insert(g, next);
        next
    }

    /// The function of frame `f`: one per distinct name and file.
    fn function(&mut self, f: FrameId) -> u64 {
        if let Some(&x) = self.functions.get(&f) {
            return x;
        }
        let p = self.p;
        let fr = p.frames.get(f);
        let src = p.frames.source(f);
        let key = (fr.name, src.map(|s| s.file));
        let x = match self.fn_by_name.get(&key) {
            Some(&x) => x,
            None => {
                let x = self.msg.function.len() as u64 + 1;
                let name = self.strings.get(p.strings.get(fr.name));
                let filename = src.map_or(0, |s| self.strings.get(p.strings.get(s.file)));
                self.msg.function.push(proto::Function {
                    id: x,
                    name,
                    system_name: name,
                    filename,
                    start_line: src.map_or(0, |s| i64::from(s.line)),
                });
                self.fn_by_name.insert(key, x);
                x
            }
        };
        self.functions.insert(f, x);
        x
    }

    /// A sample's labels: its thread's name, pid and tid, then kiln's own labels.
    fn labels(&mut self, thread: ThreadId, labels: LabelSetId) -> Vec<proto::Label> {
        let (p, strings) = (self.p, &mut self.strings);
        let mut label = Vec::new();
        if let Some(t) = p.threads.get(thread) {
            let name = p.strings.get(t.name);
            if !name.is_empty() {
                label.push(proto::Label {
                    key: strings.get(b"thread"),
                    str: strings.get(name),
                    ..Default::default()
                });
            }
            for (k, v) in [(&b"pid"[..], t.pid), (&b"tid"[..], t.tid)] {
                if let Some(v) = v {
                    label.push(proto::Label {
                        key: strings.get(k),
                        num: i64::from(v),
                        ..Default::default()
                    });
                }
            }
        }
        for l in p.samples.label_sets.get(labels) {
            let key = strings.get(p.strings.get(l.key));
            label.push(match l.value {
                LabelValue::Str(v) => proto::Label {
                    key,
                    str: strings.get(p.strings.get(v)),
                    ..Default::default()
                },
                LabelValue::Num { value, unit } => proto::Label {
                    key,
                    num: value,
                    num_unit: unit.map_or(0, |u| strings.get(p.strings.get(u))),
                    ..Default::default()
                },
            });
        }
        label
    }
}

/// Writes `p` as pprof: gzipped (as Go writes them, `.pb.gz`, `.pprof`) or not (`.pb`).
pub fn write(
    p: &Profile,
    opts: &WriteOptions,
    gzip: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use prost::Message;
    use std::io::Write;
    let bytes = to_message(p, opts).encode_to_vec();
    if gzip {
        let mut z = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
        z.write_all(&bytes)?;
        z.finish()?;
        Ok(())
    } else {
        out.write_all(&bytes)
    }
}
