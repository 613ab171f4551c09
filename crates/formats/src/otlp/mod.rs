//! OpenTelemetry's profiles signal (`x.otlp.pb`): an `ExportProfilesServiceRequest` of
//! opentelemetry-proto **v1.8.0**, `profiles/v1development` — a signal in development
//! status, whose messages still change between versions; kiln pins v1.8.0 ([`proto`]).
//! The file is the request's protobuf bytes, as a collector's OTLP/HTTP receiver takes
//! them (`Content-Type: application/x-protobuf`, `POST /v1development/profiles`).
//!
//! ```text
//! kiln collapse perf.data -o cpu.otlp.pb
//! kiln record -e cpu,offcpu -o run.otlp.pb -- ./server
//! kiln record -e cpu -d 30 -p PID --otlp-endpoint http://127.0.0.1:4318
//! ```
//!
//! [`send`] posts the same bytes to a collector (`--otlp-endpoint`).
//!
//! * **One request.** One `ResourceProfiles` with one `ScopeProfiles` (scope `kiln`, its
//!   version) holding one `Profile` per event, all indexing one `ProfilesDictionary`
//!   (every table's first entry its zero value, as the .proto requires).
//! * **Values.** One value per sample (v1.8.0 has one `sample_type`): counted timer
//!   samples as time (count × period, `EVENT/nanoseconds`, with `period_type` and
//!   `period`), perf periods of clocks and off-CPU time in nanoseconds (microseconds
//!   converted), bytes as bytes, other events as counts. Delta temporality.
//! * **Stacks.** One `Function` per distinct name and file, one `Location` per kiln
//!   frame (inlined frames keep their own location), stacks leaf first.
//! * **Samples.** Samples with the same stack and thread are summed into one, with the
//!   thread as attributes (`thread.name`, `thread.id`, `process.pid`, OpenTelemetry's
//!   semantic conventions) and, when the profile's start is known on the wall clock,
//!   every sample's time in `timestamps_unix_nano`.
pub mod proto;
mod send;

pub use send::{profiles_url, send, Sent, PROFILES_PATH};

use kiln_model::{Profile, StackId, ThreadId, WeightUnit, NO_TIME};
use proto::any_value::Value;
use std::collections::HashMap;

/// Options of the OTLP writer.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// When the first sample was taken, ns since the Unix epoch (0: unknown; then the
    /// profile has no wall-clock times).
    pub time_nanos: i64,
    /// A free-form comment (the input's or the run's name).
    pub comment: Option<String>,
    /// The resource's attributes: where the profiles come from (`host.name`, and for
    /// `kiln run` the run: `kiln.run.id`, `kiln.run.name`…). Empty: none.
    pub resource: Vec<(String, Value)>,
}

/// The dictionary under construction, with its lookups.
struct Dict {
    d: proto::ProfilesDictionary,
    strings: HashMap<String, i32>,
    functions: HashMap<(i32, i32, i64), i32>,
    stacks: HashMap<Vec<i32>, i32>,
    attributes: HashMap<(i32, Option<Value>), i32>,
}

fn idx(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Dict {
    fn new() -> Self {
        // Every table starts with its zero value.
        let d = proto::ProfilesDictionary {
            mapping_table: vec![proto::Mapping::default()],
            location_table: vec![proto::Location::default()],
            function_table: vec![proto::Function::default()],
            link_table: vec![proto::Link::default()],
            string_table: vec![String::new()],
            attribute_table: vec![proto::KeyValueAndUnit::default()],
            stack_table: vec![proto::Stack::default()],
        };
        let mut strings = HashMap::new();
        strings.insert(String::new(), 0);
        Dict {
            d,
            strings,
            functions: HashMap::new(),
            stacks: HashMap::new(),
            attributes: HashMap::new(),
        }
    }

    fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = idx(self.d.string_table.len());
        self.d.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn function(&mut self, name: &str, file: &str, line: i64) -> i32 {
        let key = (self.string(name), self.string(file), line);
        if let Some(&i) = self.functions.get(&key) {
            return i;
        }
        let i = idx(self.d.function_table.len());
        self.d.function_table.push(proto::Function {
            name_strindex: key.0,
            system_name_strindex: key.0,
            filename_strindex: key.1,
            start_line: line,
        });
        self.functions.insert(key, i);
        i
    }

    fn stack(&mut self, locations: Vec<i32>) -> i32 {
        if let Some(&i) = self.stacks.get(&locations) {
            return i;
        }
        let i = idx(self.d.stack_table.len());
        self.d.stack_table.push(proto::Stack {
            location_indices: locations.clone(),
        });
        self.stacks.insert(locations, i);
        i
    }

    fn attribute(&mut self, key: &str, value: Value) -> i32 {
        let k = (self.string(key), Some(value));
        if let Some(&i) = self.attributes.get(&k) {
            return i;
        }
        let i = idx(self.d.attribute_table.len());
        self.d.attribute_table.push(proto::KeyValueAndUnit {
            key_strindex: k.0,
            value: Some(proto::AnyValue { value: k.1.clone() }),
            unit_strindex: 0,
        });
        self.attributes.insert(k, i);
        i
    }
}

/// The sample type (name, unit), the factor turning a kiln weight into its value, and
/// the period of counted timer samples.
fn value_type(p: &Profile) -> (String, &'static str, u64, Option<u64>) {
    let ev = if p.event.name.is_empty() {
        "samples".to_string()
    } else {
        p.event.name.clone()
    };
    let period = p.event.sample_period_ns.filter(|&x| x > 0);
    match p.event.unit {
        WeightUnit::Samples => match period {
            Some(per) => (ev, "nanoseconds", per, Some(per)),
            None => (ev, "count", 1, None),
        },
        WeightUnit::Period if p.event.is_clock() => (ev, "nanoseconds", 1, None),
        WeightUnit::Nanoseconds => (ev, "nanoseconds", 1, None),
        WeightUnit::Microseconds => (ev, "nanoseconds", 1000, None),
        WeightUnit::Bytes => (ev, "bytes", 1, None),
        _ => (ev, "count", 1, None),
    }
}

/// Builds the request of `profiles` (one `Profile` each).
pub(crate) fn to_request(
    profiles: &[Profile],
    opts: &WriteOptions,
) -> proto::ExportProfilesServiceRequest {
    let mut dict = Dict::new();
    // The earliest sample of all is `time_nanos` on the wall clock.
    let t0 = profiles
        .iter()
        .filter_map(|p| p.samples.time_range().map(|r| r.0))
        .min();
    let wall = Wall {
        base: u64::try_from(opts.time_nanos).ok().filter(|&b| b > 0),
        t0,
    };
    let out = profiles
        .iter()
        .map(|p| {
            let (mut msg, factor) = header(&mut dict, p, opts, &wall);
            Tables::new(p).add_samples(&mut dict, &mut msg, factor, &wall);
            msg
        })
        .collect();
    request(out, opts, dict)
}

/// Sample times on the wall clock: the earliest sample of all is at `base`.
struct Wall {
    base: Option<u64>,
    t0: Option<u64>,
}

impl Wall {
    fn at(&self, t: u64) -> Option<u64> {
        let (base, t0) = (self.base?, self.t0?);
        (t != NO_TIME).then(|| base.saturating_add(t.saturating_sub(t0)))
    }
}

/// A profile's message without its samples (type, period, time, comment), and the factor
/// turning a kiln weight into its value.
fn header(dict: &mut Dict, p: &Profile, opts: &WriteOptions, wall: &Wall) -> (proto::Profile, u64) {
    let (ty, unit, factor, period) = value_type(p);
    let mut msg = proto::Profile {
        sample_type: Some(proto::ValueType {
            type_strindex: dict.string(&ty),
            unit_strindex: dict.string(unit),
            aggregation_temporality: proto::AGGREGATION_TEMPORALITY_DELTA,
        }),
        ..Default::default()
    };
    if let Some(per) = period {
        msg.period_type = Some(proto::ValueType {
            type_strindex: dict.string(&ty),
            unit_strindex: dict.string("nanoseconds"),
            aggregation_temporality: proto::AGGREGATION_TEMPORALITY_DELTA,
        });
        msg.period = clamp(per);
    }
    if let Some((a, b)) = p.samples.time_range() {
        msg.duration_nano = b - a;
        msg.time_unix_nano = wall.at(a).unwrap_or(0);
    } else if opts.time_nanos > 0 {
        msg.time_unix_nano = opts.time_nanos as u64;
    }
    if let Some(c) = &opts.comment {
        let i = dict.string(c);
        msg.comment_strindices.push(i);
    }
    (msg, factor)
}

/// One profile's memos: a location per kiln frame, a stack per kiln stack node, the
/// attributes of each thread, each made when first used.
struct Tables<'p> {
    p: &'p Profile,
    locations: Vec<Option<i32>>,
    stacks: HashMap<StackId, i32>,
    threads: HashMap<ThreadId, Vec<i32>>,
}

impl<'p> Tables<'p> {
    fn new(p: &'p Profile) -> Self {
        Tables {
            p,
            locations: vec![None; p.frames.len()],
            stacks: HashMap::new(),
            threads: HashMap::new(),
        }
    }

    fn location(&mut self, dict: &mut Dict, f: kiln_model::FrameId) -> i32 {
        if let Some(i) = self.locations[f.0 as usize] {
            return i;
        }
        let p = self.p;
        // OTLP's strings are UTF-8: a name's other bytes as `\xNN`, never dropped.
        let text = |id| kiln_model::text::from_bytes(p.strings.get(id));
        let name = text(p.frames.get(f).name);
        let (file, line) = p.frames.source(f).map_or((String::new(), 0), |s| {
            (text(s.file).into_owned(), i64::from(s.line))
        });
        let function_index = dict.function(&name, &file, 0);
        let i = idx(dict.d.location_table.len());
        dict.d.location_table.push(proto::Location {
            line: vec![proto::Line {
                function_index,
                line,
                column: 0,
            }],
            ..Default::default()
        });
        self.locations[f.0 as usize] = Some(i);
        i
    }

    /// The stack of a kiln stack node, leaf first.
    fn stack(&mut self, dict: &mut Dict, s: StackId) -> i32 {
        if let Some(&i) = self.stacks.get(&s) {
            return i;
        }
        let mut locs = Vec::new();
        let mut n = Some(s);
        while let Some(id) = n {
            locs.push(self.location(dict, self.p.stacks.frame(id)));
            n = self.p.stacks.parent(id);
        }
        let i = dict.stack(locs);
        self.stacks.insert(s, i);
        i
    }

    /// A thread's attributes: its name, tid and pid.
    fn attributes(&mut self, dict: &mut Dict, t: ThreadId) -> Vec<i32> {
        let p = self.p;
        self.threads
            .entry(t)
            .or_insert_with(|| {
                let mut a = Vec::new();
                if let Some(th) = p.threads.get(t) {
                    let name = kiln_model::text::from_bytes(p.strings.get(th.name)).into_owned();
                    if !name.is_empty() {
                        a.push(dict.attribute("thread.name", Value::StringValue(name)));
                    }
                    if let Some(tid) = th.tid {
                        a.push(dict.attribute("thread.id", Value::IntValue(tid.into())));
                    }
                    if let Some(pid) = th.pid {
                        a.push(dict.attribute("process.pid", Value::IntValue(pid.into())));
                    }
                }
                a
            })
            .clone()
    }

    /// The profile's samples into `msg`: those of one stack and thread summed, in
    /// first-seen order, each sample's time kept.
    fn add_samples(&mut self, dict: &mut Dict, msg: &mut proto::Profile, factor: u64, wall: &Wall) {
        let p = self.p;
        let mut rows: HashMap<(StackId, ThreadId), usize> = HashMap::new();
        let mut sums: Vec<u64> = Vec::new();
        for i in 0..p.samples.len() {
            let key = (p.samples.stack[i], p.samples.thread[i]);
            let w = p.samples.weight[i].saturating_mul(factor);
            let row = *rows.entry(key).or_insert_with(|| {
                let stack_index = self.stack(dict, key.0);
                let attribute_indices = self.attributes(dict, key.1);
                msg.sample.push(proto::Sample {
                    stack_index,
                    attribute_indices,
                    ..Default::default()
                });
                sums.push(0);
                msg.sample.len() - 1
            });
            sums[row] = sums[row].saturating_add(w);
            if let Some(t) = wall.at(p.samples.time[i]) {
                msg.sample[row].timestamps_unix_nano.push(t);
            }
        }
        for (s, v) in msg.sample.iter_mut().zip(sums) {
            s.values.push(clamp(v));
        }
    }
}

/// The request holding `profiles` under kiln's scope and the resource's attributes.
fn request(
    profiles: Vec<proto::Profile>,
    opts: &WriteOptions,
    dict: Dict,
) -> proto::ExportProfilesServiceRequest {
    proto::ExportProfilesServiceRequest {
        resource_profiles: vec![proto::ResourceProfiles {
            resource: Some(proto::Resource {
                attributes: opts
                    .resource
                    .iter()
                    .map(|(key, v)| proto::KeyValue {
                        key: key.clone(),
                        value: Some(proto::AnyValue {
                            value: Some(v.clone()),
                        }),
                    })
                    .collect(),
                dropped_attributes_count: 0,
            }),
            scope_profiles: vec![proto::ScopeProfiles {
                scope: Some(proto::InstrumentationScope {
                    name: "kiln".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                profiles,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dict.d),
    }
}

/// Whether `data` decodes as an OTLP profiles request with a dictionary and profiles
/// (for a clear error when one is given as an input).
pub(crate) fn looks_like_otlp(data: &[u8]) -> bool {
    <proto::ExportProfilesServiceRequest as prost::Message>::decode(data).is_ok_and(|r| {
        r.dictionary
            .as_ref()
            .is_some_and(|d| d.string_table.first().is_some_and(String::is_empty))
            && r.resource_profiles
                .iter()
                .any(|rp| rp.scope_profiles.iter().any(|sp| !sp.profiles.is_empty()))
    })
}

/// Writes `profiles` as one OTLP `ExportProfilesServiceRequest` (protobuf bytes).
pub fn write(
    profiles: &[Profile],
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    out.write_all(&encode(profiles, opts))?;
    out.flush()
}

/// The `ExportProfilesServiceRequest` of `profiles`, encoded: what [`write()`] writes and
/// [`send`] posts.
pub fn encode(profiles: &[Profile], opts: &WriteOptions) -> Vec<u8> {
    prost::Message::encode_to_vec(&to_request(profiles, opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, FrameKind};

    #[test]
    fn off_cpu_microseconds_as_nanoseconds_with_zero_entries_first() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let t = p.thread(Some(7), Some(8), b"worker");
        let main = p.frame(b"main", FrameKind::User);
        let wait = p.frame(b"wait", FrameKind::User);
        p.add_sample_path(&[main, wait], 5, 1_000, t);
        p.add_sample_path(&[main, wait], 2, 3_000, t);
        p.add_sample_path(&[main], 1, 2_000, t);
        let opts = WriteOptions {
            time_nanos: 1_700_000_000_000_000_000,
            comment: Some("run".into()),
            resource: vec![
                ("host.name".into(), Value::StringValue("node-1".into())),
                ("kiln.run.id".into(), Value::IntValue(12)),
            ],
        };
        let r = to_request(std::slice::from_ref(&p), &opts);
        let res = r.resource_profiles[0].resource.as_ref().unwrap();
        assert_eq!(
            res.attributes
                .iter()
                .map(|kv| (kv.key.as_str(), kv.value.clone().unwrap().value.unwrap()))
                .collect::<Vec<_>>(),
            vec![
                ("host.name", Value::StringValue("node-1".into())),
                ("kiln.run.id", Value::IntValue(12)),
            ]
        );
        let d = r.dictionary.as_ref().unwrap();
        assert_eq!(d.string_table[0], "");
        assert_eq!(d.stack_table[0], proto::Stack::default());
        assert_eq!(d.location_table[0], proto::Location::default());
        assert_eq!(d.function_table[0], proto::Function::default());
        assert_eq!(d.attribute_table[0], proto::KeyValueAndUnit::default());
        let prof = &r.resource_profiles[0].scope_profiles[0].profiles[0];
        let st = prof.sample_type.unwrap();
        assert_eq!(d.string_table[st.type_strindex as usize], "offcpu");
        assert_eq!(d.string_table[st.unit_strindex as usize], "nanoseconds");
        assert_eq!(prof.period_type, None, "no period for measured time");
        // Two stacks; the first summed from two samples, in µs × 1000.
        assert_eq!(prof.sample.len(), 2);
        assert_eq!(prof.sample[0].values, [7_000]);
        assert_eq!(prof.sample[1].values, [1_000]);
        assert_eq!(
            prof.sample[0].timestamps_unix_nano,
            [1_700_000_000_000_000_000, 1_700_000_000_000_002_000]
        );
        assert_eq!(prof.time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(prof.duration_nano, 2_000);
        // Leaf first.
        let stack = &d.stack_table[prof.sample[0].stack_index as usize];
        let names: Vec<&str> = stack
            .location_indices
            .iter()
            .map(|&l| {
                let f = d.location_table[l as usize].line[0].function_index;
                d.string_table[d.function_table[f as usize].name_strindex as usize].as_str()
            })
            .collect();
        assert_eq!(names, ["wait", "main"]);
        let attrs: Vec<String> = prof.sample[0]
            .attribute_indices
            .iter()
            .map(|&a| {
                let kv = &d.attribute_table[a as usize];
                format!(
                    "{}={:?}",
                    d.string_table[kv.key_strindex as usize],
                    kv.value.as_ref().unwrap().value.as_ref().unwrap()
                )
            })
            .collect();
        assert_eq!(
            attrs,
            [
                "thread.name=StringValue(\"worker\")",
                "thread.id=IntValue(8)",
                "process.pid=IntValue(7)"
            ]
        );
        // Without a wall clock, no sample times.
        let r = to_request(&[p], &WriteOptions::default());
        let prof = &r.resource_profiles[0].scope_profiles[0].profiles[0];
        assert!(prof
            .sample
            .iter()
            .all(|s| s.timestamps_unix_nano.is_empty()));
        assert_eq!(prof.time_unix_nano, 0);
        let bytes = prost::Message::encode_to_vec(&r);
        assert!(looks_like_otlp(&bytes));
    }
}
