//! The Firefox Profiler's processed profile format (`x.gecko.json`), written with
//! samply's `fxprof-processed-profile` (the format's own Rust writer, kept in step with
//! the profiler by the profiler's authors; the profiler upgrades older versions on
//! import).
//!
//! One thread track per kiln thread, grouped into processes by pid, with every sample at
//! its timestamp, so the profiler's timeline, call tree and flame graph all work.
//! Weights: counted samples of a timer are samples at the timer's interval; time
//! profiles (perf periods, off-CPU blocks) are samples of one microsecond each (the
//! format's weights are integers, so a 2.5 ms block weighs 2,500); bytes are bytes.
//! Samples without timestamps are spread one interval apart, in input order.
use fxprof_processed_profile as fx;
use kiln_model::{FrameKind, Profile, ThreadId, WeightUnit, NO_TIME};
use std::collections::HashMap;

/// Weight type, interval (ns) and factor turning a kiln weight into the written one.
fn weights(p: &Profile) -> (fx::WeightType, u64, f64) {
    match p.event.unit {
        WeightUnit::Samples => (
            fx::WeightType::Samples,
            p.event
                .sample_period_ns
                .filter(|&x| x > 0)
                .unwrap_or(1_000_000),
            1.0,
        ),
        WeightUnit::Period if p.event.is_clock() => (fx::WeightType::Samples, 1_000, 1e-3),
        WeightUnit::Nanoseconds => (fx::WeightType::Samples, 1_000, 1e-3),
        WeightUnit::Microseconds => (fx::WeightType::Samples, 1_000, 1.0),
        WeightUnit::Bytes => (fx::WeightType::Bytes, 1_000_000, 1.0),
        _ => (fx::WeightType::Samples, 1_000_000, 1.0),
    }
}

/// Writes `profiles` (each event's threads as their own tracks) for the Firefox
/// Profiler; `name` names the product.
pub fn write(
    profiles: &[Profile],
    name: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let interval = profiles.first().map_or(1_000_000, |p| weights(p).1);
    let mut fp = fx::Profile::new(
        name,
        fx::ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        fx::SamplingInterval::from_nanos(interval),
    );
    fp.set_symbolicated(true);
    let user = fp.add_category("User", fx::CategoryColor::Yellow);
    let kernel = fp.add_category("Kernel", fx::CategoryColor::Orange);
    let jit = fp.add_category("JIT", fx::CategoryColor::Green);
    let inline = fp.add_category("Inlined", fx::CategoryColor::LightBlue);
    let root = fp.add_category("Thread", fx::CategoryColor::Gray);
    // The earliest timestamp of all: time zero.
    let t0 = profiles
        .iter()
        .filter_map(|p| p.samples.time_range().map(|r| r.0))
        .min()
        .unwrap_or(0);
    let mut processes: HashMap<(usize, Option<u32>), fx::ProcessHandle> = HashMap::new();
    let several = profiles.len() > 1;
    for (pi, p) in profiles.iter().enumerate() {
        let (wtype, interval_ns, factor) = weights(p);
        let event = if p.event.name.is_empty() {
            "samples"
        } else {
            p.event.name.as_str()
        };
        // Rows per thread, in time order.
        let mut by_thread: HashMap<ThreadId, Vec<usize>> = HashMap::new();
        for i in 0..p.samples.len() {
            by_thread.entry(p.samples.thread[i]).or_default().push(i);
        }
        let mut threads: Vec<_> = by_thread.into_iter().collect();
        threads.sort_by_key(|(t, _)| t.0);
        for (tid, mut rows) in threads {
            rows.sort_by_key(|&i| p.samples.time[i]);
            let info = p.threads.get(tid);
            let pid = info.and_then(|t| t.pid);
            let tname = info.map_or_else(
                || "all threads".to_string(),
                |t| p.strings.get_lossy(t.name).into_owned(),
            );
            let start = rows
                .first()
                .map(|&i| p.samples.time[i])
                .filter(|&t| t != NO_TIME)
                .map_or(0, |t| t.saturating_sub(t0));
            let start = fx::Timestamp::from_nanos_since_reference(start);
            let process = *processes.entry((pi, pid)).or_insert_with(|| {
                let pname = if several {
                    format!("{event}: {tname}")
                } else {
                    tname.clone()
                };
                fp.add_process(&pname, pid.unwrap_or(0), start)
            });
            let thread =
                fp.add_thread(process, info.and_then(|t| t.tid).unwrap_or(0), start, false);
            fp.set_thread_name(
                thread,
                &if several {
                    format!("{tname} ({event})")
                } else {
                    tname
                },
            );
            fp.set_thread_samples_weight_type(thread, wtype.clone());
            // Stacks, memoised per kiln stack node.
            let mut stacks: HashMap<u32, fx::StackHandle> = HashMap::new();
            let mut frames: HashMap<u32, fx::FrameHandle> = HashMap::new();
            let mut chain = Vec::new();
            for (k, &i) in rows.iter().enumerate() {
                let s = p.samples.stack[i];
                // The nodes from the deepest already interned (or the root) to `s`.
                chain.clear();
                let mut n = Some(s);
                let mut top: Option<fx::StackHandle> = None;
                while let Some(id) = n {
                    if let Some(&h) = stacks.get(&id.0) {
                        top = Some(h);
                        break;
                    }
                    chain.push(id);
                    n = p.stacks.parent(id);
                }
                for &id in chain.iter().rev() {
                    let f = p.stacks.frame(id);
                    let fh = match frames.get(&f.0) {
                        Some(&h) => h,
                        None => {
                            let fr = p.frames.get(f);
                            let cat = match fr.kind {
                                FrameKind::Kernel => kernel,
                                FrameKind::Jit => jit,
                                FrameKind::Inline => inline,
                                FrameKind::Root => root,
                                _ => user,
                            };
                            let label = fp.intern_string(&p.strings.get_lossy(fr.name));
                            let h = fp.intern_frame(
                                thread,
                                fx::FrameInfo {
                                    frame: fx::Frame::Label(label),
                                    category_pair: cat.into(),
                                    flags: fx::FrameFlags::empty(),
                                },
                            );
                            frames.insert(f.0, h);
                            h
                        }
                    };
                    let h = fp.intern_stack(thread, top, fh);
                    stacks.insert(id.0, h);
                    top = Some(h);
                }
                let t = p.samples.time[i];
                let ts = if t == NO_TIME {
                    (k as u64).saturating_mul(interval_ns)
                } else {
                    t.saturating_sub(t0)
                };
                let mut w = (p.samples.weight[i] as f64 * factor).round() as u64;
                // Weights are 32-bit: a heavier sample is written as several (a lighter
                // one than the unit still shows in the timeline, weighing 0).
                let mut first = true;
                while w > 0 || first {
                    first = false;
                    let part = w.min(i32::MAX as u64);
                    fp.add_sample(
                        thread,
                        fx::Timestamp::from_nanos_since_reference(ts),
                        top,
                        fx::CpuDelta::ZERO,
                        part as i32,
                    );
                    w -= part;
                }
            }
        }
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &fp).map_err(std::io::Error::other)?;
    std::io::Write::flush(&mut w)
}
