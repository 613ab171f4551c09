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

    fn get(&mut self, v: &[u8]) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(v.to_vec());
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
    let mut strings = Strings::new();
    let (types, compute, period) = value_types(p);
    let mut msg = proto::Profile {
        time_nanos: opts.time_nanos,
        ..Default::default()
    };
    for (t, u) in &types {
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
    if let Some((a, b)) = p.samples.time_range() {
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
        has_filenames: p.frames.has_sources(),
        has_line_numbers: p.frames.has_sources(),
        has_inline_frames: true,
        ..Default::default()
    });

    // Sum samples by (stack, thread, labels).
    let mut sums: HashMap<(StackId, ThreadId, LabelSetId), (u64, u64)> = HashMap::new();
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

    let mut functions: HashMap<FrameId, u64> = HashMap::new();
    let mut fn_by_name: HashMap<(kiln_model::StrId, Option<kiln_model::StrId>), u64> =
        HashMap::new();
    let mut locations: HashMap<Vec<FrameId>, u64> = HashMap::new();
    let mut stack_locs: HashMap<StackId, Vec<u64>> = HashMap::new();
    let mut frames_buf: Vec<FrameId> = Vec::new();
    let per = period.unwrap_or(0);
    for ((stack, thread, labels), (w, rows)) in keys {
        if let std::collections::hash_map::Entry::Vacant(slot) = stack_locs.entry(stack) {
            frames_buf.clear();
            let mut n = Some(stack);
            while let Some(id) = n {
                frames_buf.push(p.stacks.frame(id));
                n = p.stacks.parent(id);
            }
            // Root first; each frame grouped with the inlined frames that follow it.
            frames_buf.reverse();
            let mut groups: Vec<Vec<FrameId>> = Vec::new();
            for &f in &frames_buf {
                let inline = p.frames.get(f).kind == FrameKind::Inline;
                match groups.last_mut() {
                    Some(g) if inline => g.push(f),
                    _ => groups.push(vec![f]),
                }
            }
            let mut ids = Vec::with_capacity(groups.len());
            for g in groups.into_iter().rev() {
                // leaf first
                let next = locations.len() as u64 + 1;
                let id = match locations.get(&g) {
                    Some(&id) => id,
                    None => {
                        let mut lines = Vec::with_capacity(g.len());
                        for &f in g.iter().rev() {
                            // innermost first
                            let fid = match functions.get(&f) {
                                Some(&x) => x,
                                None => {
                                    let fr = p.frames.get(f);
                                    let src = p.frames.source(f);
                                    let key = (fr.name, src.map(|s| s.file));
                                    let x = match fn_by_name.get(&key) {
                                        Some(&x) => x,
                                        None => {
                                            let x = msg.function.len() as u64 + 1;
                                            let name = strings.get(p.strings.get(fr.name));
                                            msg.function.push(proto::Function {
                                                id: x,
                                                name,
                                                system_name: name,
                                                filename: src.map_or(0, |s| {
                                                    strings.get(p.strings.get(s.file))
                                                }),
                                                start_line: src.map_or(0, |s| i64::from(s.line)),
                                            });
                                            fn_by_name.insert(key, x);
                                            x
                                        }
                                    };
                                    functions.insert(f, x);
                                    x
                                }
                            };
                            lines.push(proto::Line {
                                function_id: fid,
                                line: p.frames.source(f).map_or(0, |s| i64::from(s.line)),
                                column: 0,
                            });
                        }
                        msg.location.push(proto::Location {
                            id: next,
                            mapping_id: 1,
                            address: next,
                            line: lines,
                            is_folded: false,
                        });
                        locations.insert(g, next);
                        next
                    }
                };
                ids.push(id);
            }
            slot.insert(ids);
        }
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
        msg.sample.push(proto::Sample {
            location_id: stack_locs[&stack].clone(),
            value: compute.iter().map(|f| clamp(f(w, rows, per))).collect(),
            label,
        });
    }
    msg.string_table = strings.table;
    msg
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
