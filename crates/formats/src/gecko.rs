//! The Firefox Profiler's processed profile format (`x.gecko.json`), written with
//! samply's `fxprof-processed-profile` (the format's own Rust writer, kept in step with
//! the profiler by the profiler's authors; the profiler upgrades older versions on
//! import).
//!
//! One thread track per kiln thread, grouped into processes by pid, with every sample at
//! its timestamp, so the profiler's timeline, call tree and flame graph all work.
//! Weights: counted samples of a timer are samples at the timer's interval; time
//! profiles (perf periods of a clock, off-CPU blocks) are traced time (`tracing-ms`: a
//! 2.5 ms block weighs 2.5, to the µs); bytes are bytes; counted events are samples.
//! Samples without timestamps are spread one interval apart, in input order.
//!
//! The activity graph: each sample of a CPU profile (a timer's samples, a clock's
//! periods) carries the CPU time it stands for as its `threadCPUDelta` (µs), so the
//! profiler draws the thread's CPU use between samples; where that is not known (off-CPU
//! blocks, counted events, bytes) the column is left out and the profiler draws each
//! sample as busy, as it does for traced profiles.
//!
//! A run adds its [`Timeline`] ([`write_with`]): its per-second series as counter tracks
//! and its phases and load events as markers, on the samples' clock, in a process of their own (`kiln
//! run`, one thread holding the markers), so the load and the samples share one time axis.
//! The profiler makes a counter track for every counter of a process it shows (a
//! `line-rate` graph: each sample's value over the time since the previous one, which
//! for per-second series is the value's shape, and the value itself in its tooltip).
use fxprof_processed_profile as fx;
use kiln_model::{FrameKind, Profile, ThreadId, WeightUnit, NO_TIME};
use std::collections::HashMap;

/// How one profile's weights are written.
struct Weights {
    /// The profiler's weight type.
    wtype: fx::WeightType,
    /// The sampling interval, ns.
    interval_ns: u64,
    /// The factor turning a kiln weight into the written (integer) one.
    factor: f64,
    /// Written weights are µs of traced time, turned into ms after writing
    /// (`tracing-ms` weights are fractional; the writer takes integers).
    tracing: bool,
    /// The CPU time one written unit of weight stands for, µs, when the profile measures
    /// CPU time (a timer's samples, a clock's periods); `None` when it is not known.
    cpu_us: Option<f64>,
}

/// How `p`'s weights are written.
fn weights(p: &Profile) -> Weights {
    let clock = p.event.is_clock();
    let period = p.event.sample_period_ns.filter(|&x| x > 0);
    let traced = |ns_per_unit: f64, cpu: bool| Weights {
        wtype: fx::WeightType::TracingMs,
        interval_ns: 1_000_000,
        factor: ns_per_unit / 1e3,
        tracing: true,
        cpu_us: cpu.then_some(1.0),
    };
    match p.event.unit {
        WeightUnit::Samples => Weights {
            wtype: fx::WeightType::Samples,
            interval_ns: period.unwrap_or(1_000_000),
            factor: 1.0,
            tracing: false,
            cpu_us: period.map(|ns| ns as f64 / 1e3),
        },
        WeightUnit::Period if clock => traced(1.0, true),
        WeightUnit::Nanoseconds => traced(1.0, clock),
        WeightUnit::Microseconds => traced(1e3, clock),
        WeightUnit::Bytes => Weights {
            wtype: fx::WeightType::Bytes,
            interval_ns: 1_000_000,
            factor: 1.0,
            tracing: false,
            cpu_us: None,
        },
        _ => Weights {
            wtype: fx::WeightType::Samples,
            interval_ns: 1_000_000,
            factor: 1.0,
            tracing: false,
            cpu_us: None,
        },
    }
}

/// What is set on a written thread after the writer is done: its name (the writer
/// holds a tag in its place, so the thread is found again whatever order the writer put
/// the threads in), its weights and CPU deltas.
struct ThreadFix {
    name: String,
    tracing: bool,
    cpu_us: Option<f64>,
}

/// The start of the tag naming a written thread until [`fix_threads`] names it.
const TAG: &str = "\u{1}kiln-thread-";

/// The tag naming the `k`th written thread.
fn tag(k: usize) -> String {
    format!("{TAG}{k}")
}

/// What a run shows beside its samples: per-second series and markers, in ns on the
/// samples' clock.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// The series, one counter track each.
    pub counters: Vec<Counter>,
    /// The phases (warm-up, measurement, sweep steps) and what the load did (flow
    /// control, connections dropped, failed requests, agents), one marker each.
    pub markers: Vec<Marker>,
    /// The series left out: nothing but zeros or nothing measured (a track that would
    /// draw nothing), by name.
    pub left_out: Vec<String>,
}

/// One per-second series: `values[i]` is measured over `(time_ns[i] - step, time_ns[i]]`.
#[derive(Clone, Debug, Default)]
pub struct Counter {
    /// Its name on the track, with its unit (`load: sent/s (msg/s)`).
    pub name: String,
    /// The table it comes from (`load`, `target`): the profiler's counter category.
    pub category: String,
    /// A sentence on what it is.
    pub description: String,
    /// The end of each interval, ns.
    pub time_ns: Vec<u64>,
    /// An interval's length, ns.
    pub step_ns: u64,
    /// The values; `None` where nothing was measured (drawn as 0, as the profiler draws a
    /// rate of 0: not at all).
    pub values: Vec<Option<f64>>,
}

/// One span of a run: a phase, or something the load did.
#[derive(Clone, Debug, Default)]
pub struct Marker {
    /// Its name (`warm-up`, `measurement`, `step connections=2`, `connections dropped`).
    pub name: String,
    /// What kind of span (`warm-up`, `measurement`, `sweep step`, `flag`, `counter`,
    /// `agent`).
    pub kind: String,
    /// The group it belongs to (`phases`, `flow control`, `errors`, `agents`).
    pub lane: String,
    /// What to say beside its name (`3 conn`, why an agent failed), or empty.
    pub detail: String,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
}

impl Timeline {
    /// The earliest time it holds, ns.
    fn start(&self) -> Option<u64> {
        let counters = self
            .counters
            .iter()
            .filter_map(|c| c.time_ns.iter().min().map(|&t| t.saturating_sub(c.step_ns)));
        let markers = self.markers.iter().map(|m| m.start_ns.min(m.end_ns));
        counters.chain(markers).min()
    }

    fn is_empty(&self) -> bool {
        self.counters.is_empty() && self.markers.is_empty()
    }
}

/// Writes `profiles` (each event's threads as their own tracks) for the Firefox
/// Profiler; `name` names the product.
pub fn write(
    profiles: &[Profile],
    name: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    write_with(profiles, &Timeline::default(), name, out)
}

/// Categories of frames and markers.
struct Categories {
    user: fx::CategoryHandle,
    kernel: fx::CategoryHandle,
    jit: fx::CategoryHandle,
    inline: fx::CategoryHandle,
    root: fx::CategoryHandle,
}

/// Writes `profiles` as [`write`] does, with `timeline`'s counters and markers on the same
/// clock (time zero: the earliest sample or the timeline's start, whichever comes first).
pub fn write_with(
    profiles: &[Profile],
    timeline: &Timeline,
    name: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let interval = profiles
        .first()
        .map_or(1_000_000, |p| weights(p).interval_ns);
    let mut fp = fx::Profile::new(
        name,
        fx::ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        fx::SamplingInterval::from_nanos(interval),
    );
    fp.set_symbolicated(true);
    let cats = Categories {
        user: fp.add_category("User", fx::CategoryColor::Yellow),
        kernel: fp.add_category("Kernel", fx::CategoryColor::Orange),
        jit: fp.add_category("JIT", fx::CategoryColor::Green),
        inline: fp.add_category("Inlined", fx::CategoryColor::LightBlue),
        root: fp.add_category("Thread", fx::CategoryColor::Gray),
    };
    // The earliest timestamp of all: time zero.
    let t0 = profiles
        .iter()
        .filter_map(|p| p.samples.time_range().map(|r| r.0))
        .chain(timeline.start())
        .min()
        .unwrap_or(0);
    let mut processes: HashMap<(usize, Option<u32>), fx::ProcessHandle> = HashMap::new();
    let mut threads_written = Vec::new();
    let mut fixes = Vec::new();
    let several = profiles.len() > 1;
    for (pi, p) in profiles.iter().enumerate() {
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
            let w = weights(p);
            fp.set_thread_name(thread, &tag(fixes.len()));
            fixes.push(ThreadFix {
                name: if several {
                    format!("{tname} ({event})")
                } else {
                    tname
                },
                tracing: w.tracing,
                cpu_us: w.cpu_us,
            });
            write_samples(&mut fp, thread, p, &rows, t0, &cats);
            threads_written.push(thread);
        }
    }
    if !timeline.is_empty() {
        // The profiler hides threads without samples unless told which to show.
        let load = write_timeline(&mut fp, timeline, t0);
        for t in std::iter::once(load).chain(threads_written) {
            fp.add_initial_visible_thread(t);
        }
    }
    let mut json = serde_json::to_value(&fp).map_err(std::io::Error::other)?;
    fix_threads(&mut json, &fixes);
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &json).map_err(std::io::Error::other)?;
    std::io::Write::flush(&mut w)
}

/// Names each tagged thread of the written profile, turns its traced weights (µs) into
/// ms, and sets its CPU deltas from its weights, or leaves them out where unknown.
fn fix_threads(json: &mut serde_json::Value, fixes: &[ThreadFix]) {
    use serde_json::Value;
    let Some(threads) = json.get_mut("threads").and_then(Value::as_array_mut) else {
        return;
    };
    for t in threads {
        let Some(fix) = t
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| n.strip_prefix(TAG))
            .and_then(|k| k.parse::<usize>().ok())
            .and_then(|k| fixes.get(k))
        else {
            continue;
        };
        t["name"] = Value::from(fix.name.as_str());
        let Some(samples) = t.get_mut("samples").and_then(Value::as_object_mut) else {
            continue;
        };
        let written: Vec<f64> = samples
            .get("weight")
            .and_then(Value::as_array)
            .map(|w| w.iter().map(|x| x.as_f64().unwrap_or(0.0)).collect())
            .unwrap_or_default();
        match fix.cpu_us {
            Some(us) => {
                let deltas = written.iter().map(|&w| Value::from(w * us)).collect();
                samples.insert("threadCPUDelta".into(), Value::Array(deltas));
            }
            None => {
                samples.remove("threadCPUDelta");
            }
        }
        if fix.tracing {
            let ms = written.iter().map(|&w| Value::from(w / 1e3)).collect();
            samples.insert("weight".into(), Value::Array(ms));
        }
    }
}

/// One kiln thread's samples (`rows` of `p`, in time order) on `thread`.
fn write_samples(
    fp: &mut fx::Profile,
    thread: fx::ThreadHandle,
    p: &Profile,
    rows: &[usize],
    t0: u64,
    cats: &Categories,
) {
    let Weights {
        wtype,
        interval_ns,
        factor,
        ..
    } = weights(p);
    fp.set_thread_samples_weight_type(thread, wtype);
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
            let fh = *frames.entry(f.0).or_insert_with(|| {
                let fr = p.frames.get(f);
                let cat = match fr.kind {
                    FrameKind::Kernel => cats.kernel,
                    FrameKind::Jit => cats.jit,
                    FrameKind::Inline => cats.inline,
                    FrameKind::Root => cats.root,
                    _ => cats.user,
                };
                let label = fp.intern_string(&p.strings.get_lossy(fr.name));
                fp.intern_frame(
                    thread,
                    fx::FrameInfo {
                        frame: fx::Frame::Label(label),
                        category_pair: cat.into(),
                        flags: fx::FrameFlags::empty(),
                    },
                )
            });
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

/// A span of the run as the profiler's marker: its name, and its kind, lane and detail
/// as fields.
struct SpanMarker {
    name: fx::StringHandle,
    /// Kind, lane, detail.
    fields: [fx::StringHandle; 3],
    category: fx::CategoryHandle,
}

/// The fields of [`SpanMarker`].
const SPAN_FIELDS: [(&str, &str); 3] = [("kind", "Kind"), ("lane", "Lane"), ("detail", "Detail")];

impl fx::StaticSchemaMarker for SpanMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "KilnSpan";
    const DESCRIPTION: Option<&'static str> =
        Some("A phase of the run, or what its load did (flow control, drops, failures)");
    const LOCATIONS: fx::MarkerLocations = fx::MarkerLocations::MARKER_CHART
        .union(fx::MarkerLocations::MARKER_TABLE)
        .union(fx::MarkerLocations::TIMELINE_OVERVIEW);
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const FIELDS: &'static [fx::StaticSchemaMarkerField] = &[
        fx::StaticSchemaMarkerField {
            key: SPAN_FIELDS[0].0,
            label: SPAN_FIELDS[0].1,
            format: fx::MarkerFieldFormat::String,
            flags: fx::MarkerFieldFlags::SEARCHABLE,
        },
        fx::StaticSchemaMarkerField {
            key: SPAN_FIELDS[1].0,
            label: SPAN_FIELDS[1].1,
            format: fx::MarkerFieldFormat::String,
            flags: fx::MarkerFieldFlags::SEARCHABLE,
        },
        fx::StaticSchemaMarkerField {
            key: SPAN_FIELDS[2].0,
            label: SPAN_FIELDS[2].1,
            format: fx::MarkerFieldFormat::String,
            flags: fx::MarkerFieldFlags::SEARCHABLE,
        },
    ];

    fn name(&self, _: &mut fx::Profile) -> fx::StringHandle {
        self.name
    }

    fn category(&self, _: &mut fx::Profile) -> fx::CategoryHandle {
        self.category
    }

    fn string_field_value(&self, i: u32) -> fx::StringHandle {
        self.fields[(i as usize).min(self.fields.len() - 1)]
    }

    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// The run's process: one thread (`load`) holding the markers, and a counter
/// track per series. Returns the thread.
fn write_timeline(fp: &mut fx::Profile, timeline: &Timeline, t0: u64) -> fx::ThreadHandle {
    let ts = |t: u64| fx::Timestamp::from_nanos_since_reference(t.saturating_sub(t0));
    let zero = ts(t0);
    let process = fp.add_process("kiln run", 0, zero);
    let thread = fp.add_thread(process, 0, zero, true);
    fp.set_thread_name(thread, "load");
    fp.set_thread_show_markers_in_timeline(thread, true);
    let category = fp.add_category("Load", fx::CategoryColor::Blue);
    for m in &timeline.markers {
        let marker = SpanMarker {
            name: fp.intern_string(&m.name),
            fields: [
                fp.intern_string(&m.kind),
                fp.intern_string(&m.lane),
                fp.intern_string(&m.detail),
            ],
            category,
        };
        let timing = fx::MarkerTiming::Interval(ts(m.start_ns), ts(m.end_ns.max(m.start_ns)));
        fp.add_marker(thread, timing, marker);
    }
    for c in &timeline.counters {
        let h = fp.add_counter(process, &c.name, &c.category, &c.description);
        // The profiler draws a counter as its value over the time since the previous
        // sample: a first sample of 0 at the first interval's start gives the first
        // value its second.
        if let Some(&first) = c.time_ns.first() {
            fp.add_counter_sample(h, ts(first.saturating_sub(c.step_ns)), 0.0, 0);
        }
        for (&t, v) in c.time_ns.iter().zip(&c.values) {
            let v = v.filter(|x| x.is_finite()).unwrap_or(0.0);
            fp.add_counter_sample(h, ts(t), v, 1);
        }
    }
    thread
}
