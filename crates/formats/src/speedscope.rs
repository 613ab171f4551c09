//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`):
//! one `sampled` profile per thread, stacks root first as indexes into shared frames,
//! with weights in the profile's unit.
//!
//! Samples with timestamps are written in time order, so speedscope's time-ordered view
//! shows each thread's timeline; consecutive samples of the same stack are merged into
//! one (their weights summed), which keeps files small without changing either view.
//! Counted timer samples are written as time (count × period, in nanoseconds), off-CPU
//! time in its unit, bytes as bytes, anything else as plain numbers (`none`).
use kiln_model::{Profile, ThreadId, WeightUnit, NO_TIME};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<Sampled>,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
struct Sampled {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: Vec<Vec<u32>>,
    weights: Vec<u64>,
}

/// speedscope's unit for `p`'s weights and the factor to apply to them.
fn unit(p: &Profile) -> (&'static str, u64) {
    match p.event.unit {
        WeightUnit::Samples => match p.event.sample_period_ns.filter(|&x| x > 0) {
            Some(per) => ("nanoseconds", per),
            None => ("none", 1),
        },
        WeightUnit::Period if p.event.is_clock() => ("nanoseconds", 1),
        WeightUnit::Nanoseconds => ("nanoseconds", 1),
        WeightUnit::Microseconds => ("microseconds", 1),
        WeightUnit::Bytes => ("bytes", 1),
        _ => ("none", 1),
    }
}

/// A frame by name and source (file, line).
type FrameKey = (Vec<u8>, Option<(Vec<u8>, u32)>);

/// The frames shared by every profile of the file: one per name and source.
#[derive(Default)]
struct SharedFrames {
    frames: Vec<Frame>,
    index: std::collections::HashMap<FrameKey, u32>,
}

impl SharedFrames {
    /// Each of `p`'s frames' index in the shared frames.
    fn map(&mut self, p: &Profile) -> Vec<u32> {
        p.frames
            .iter()
            .map(|(id, f)| {
                let name = p.strings.get(f.name).to_vec();
                let src = p
                    .frames
                    .source(id)
                    .map(|s| (p.strings.get(s.file).to_vec(), s.line));
                let key = (name, src);
                if let Some(&i) = self.index.get(&key) {
                    return i;
                }
                let i = self.frames.len() as u32;
                self.frames.push(Frame {
                    name: String::from_utf8_lossy(&key.0).into_owned(),
                    file: key
                        .1
                        .as_ref()
                        .map(|s| String::from_utf8_lossy(&s.0).into_owned()),
                    line: key.1.as_ref().map(|s| s.1).filter(|&l| l > 0),
                });
                self.index.insert(key, i);
                i
            })
            .collect()
    }
}

/// One speedscope profile per thread of `p` (its frames at `map`), samples in time
/// order where known, consecutive samples of one stack joined.
fn sampled_of(p: &Profile, map: &[u32], name: &str, several_events: bool) -> Vec<Sampled> {
    let (unit, factor) = unit(p);
    // Stacks as frame paths, memoised per stack node.
    let mut paths: Vec<Option<Vec<u32>>> = vec![None; p.stacks.len()];
    let mut path_of = |s: kiln_model::StackId| -> Vec<u32> {
        if let Some(v) = &paths[s.0 as usize] {
            return v.clone();
        }
        let mut v = Vec::new();
        let mut n = Some(s);
        while let Some(id) = n {
            v.push(map[p.stacks.frame(id).0 as usize]);
            n = p.stacks.parent(id);
        }
        v.reverse();
        paths[s.0 as usize] = Some(v.clone());
        v
    };
    let mut by_thread: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for i in 0..p.samples.len() {
        by_thread.entry(p.samples.thread[i].0).or_default().push(i);
    }
    let event = if p.event.name.is_empty() {
        "samples"
    } else {
        p.event.name.as_str()
    };
    let several = by_thread.len() > 1 || several_events;
    let mut out = Vec::new();
    for (tid, mut rows) in by_thread {
        rows.sort_by_key(|&i| {
            let t = p.samples.time[i];
            if t == NO_TIME {
                0
            } else {
                t
            }
        });
        let mut samples: Vec<Vec<u32>> = Vec::new();
        let mut weights: Vec<u64> = Vec::new();
        let mut last: Option<kiln_model::StackId> = None;
        for i in rows {
            let s = p.samples.stack[i];
            let w = p.samples.weight[i].saturating_mul(factor);
            if last == Some(s) {
                if let Some(x) = weights.last_mut() {
                    *x = x.saturating_add(w);
                }
                continue;
            }
            last = Some(s);
            samples.push(path_of(s));
            weights.push(w);
        }
        let total = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
        let tname = thread_name(p, ThreadId(tid));
        out.push(Sampled {
            kind: "sampled",
            name: if several {
                format!("{event}: {tname}")
            } else {
                format!("{name} ({event})")
            },
            unit,
            start_value: 0,
            end_value: total,
            samples,
            weights,
        });
    }
    out
}

/// A thread as speedscope's profile names say it: `name (tid)`.
fn thread_name(p: &Profile, thread: ThreadId) -> String {
    match p.threads.get(thread) {
        Some(t) => {
            let n = p.strings.get_lossy(t.name);
            match t.tid {
                Some(id) => format!("{n} ({id})"),
                None => n.into_owned(),
            }
        }
        None => "all threads".to_string(),
    }
}

/// Writes `profiles` (every event, one speedscope profile per event and thread) as a
/// speedscope file named `name`.
pub fn write(
    profiles: &[Profile],
    name: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut frames = SharedFrames::default();
    let mut sampled = Vec::new();
    for p in profiles {
        let map = frames.map(p);
        sampled.extend(sampled_of(p, &map, name, profiles.len() > 1));
    }
    let frames = frames.frames;
    // The heaviest profile first: what speedscope opens on.
    let active = sampled
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| s.end_value)
        .map_or(0, |(i, _)| i);
    let file = File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles: sampled,
        name,
        active_profile_index: active,
        exporter: format!("kiln {}", env!("CARGO_PKG_VERSION")),
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &file).map_err(std::io::Error::other)?;
    std::io::Write::flush(&mut w)
}
