//! pprof → kiln profiles: one [`Profile`] per sample type.
use super::proto;
use crate::FormatError;
use kiln_collapse::{SkipReason, Stats};
use kiln_model::{
    EventInfo, FrameId, FrameKind, Label, LabelSetId, LabelValue, Profile, Source, StackId, StrId,
    ThreadId, WeightUnit, NO_TIME,
};
use prost::Message;
use std::collections::HashMap;

/// A fast, fixed hasher: ids from the file, not from an adversary who gains anything.
type Fast = foldhash::fast::FixedState;
use std::io::Read;

/// What a pprof file held besides its samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PprofInfo {
    /// The sample types, `type/unit` (`alloc_space/bytes`).
    pub sample_types: Vec<(String, String)>,
    /// The type `go tool pprof` shows by default: `default_sample_type`, else the last.
    pub default_type: usize,
    /// `period_type` and `period` (`cpu/nanoseconds`, 10,000,000).
    pub period: Option<(String, String, i64)>,
    /// When the profile was taken (ns since the Unix epoch; 0 when unknown).
    pub time_nanos: i64,
    /// How long it covers, ns (0 when unknown).
    pub duration_nanos: i64,
    /// Free-form comments.
    pub comments: Vec<String>,
}

/// A decoded pprof file: one profile per sample type, with the counts of each.
#[derive(Debug, Default)]
pub struct Decoded {
    /// What the file said about itself.
    pub info: PprofInfo,
    /// One profile per sample type, in the file's order.
    pub profiles: Vec<Profile>,
    /// Per sample type: samples read, kept and skipped.
    pub stats: Vec<Stats>,
    /// Per sample type: samples whose value was 0 (present for another type: a heap
    /// sample whose objects were all freed has inuse 0); they weigh nothing and are not
    /// counted as read.
    pub zero: Vec<u64>,
}

/// Whether `head` (the first bytes of an input, already inflated) starts like a pprof
/// message: every field key in it is one of `profile.proto`'s fields with its wire type
/// (prost's key and varint decoders skim it; writers order fields as they like: Go
/// writes `time_nanos` first).
pub fn sniff(head: &[u8]) -> bool {
    use prost::encoding::{decode_key, decode_varint, WireType};
    let mut buf = head;
    let mut fields = 0;
    while !buf.is_empty() && fields < 64 {
        let Ok((tag, wire)) = decode_key(&mut buf) else {
            return false;
        };
        let ok = matches!(
            (tag, wire),
            (1..=6 | 11 | 13, WireType::LengthDelimited) | (7..=10 | 12..=15, WireType::Varint)
        );
        if !ok {
            return false;
        }
        fields += 1;
        match wire {
            WireType::Varint => {
                if decode_varint(&mut buf).is_err() {
                    return !buf.is_empty() || fields > 1;
                }
            }
            _ => {
                let Ok(len) = decode_varint(&mut buf) else {
                    return fields > 1;
                };
                if len as usize > buf.len() {
                    // Runs past the head: pprof as far as it goes, if a whole field came
                    // before (text starting with a newline looks like a first field).
                    return fields > 1;
                }
                buf = &buf[len as usize..];
            }
        }
    }
    fields > 0
}

/// Inflates gzip data (pprof files are usually gzipped); other bytes are returned as is.
pub fn inflate<'a>(name: &str, bytes: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>, FormatError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4));
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| FormatError::Malformed {
            name: name.to_string(),
            format: "gzip",
            why: if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!(
                    "the gzip data is truncated ({} bytes inflated before the end)",
                    out.len()
                )
            } else {
                format!("damaged gzip data: {e}")
            },
        })?;
    Ok(std::borrow::Cow::Owned(out))
}

/// Decodes the protobuf message of a pprof file (gzipped or not).
pub fn decode_message(name: &str, bytes: &[u8]) -> Result<proto::Profile, FormatError> {
    let raw = inflate(name, bytes)?;
    proto::Profile::decode(&*raw).map_err(|e| FormatError::Malformed {
        name: name.to_string(),
        format: "pprof",
        why: format!("not a valid profile.proto message: {e}"),
    })
}

/// Reads a pprof file's bytes (gzipped or not) into one profile per sample type.
pub fn decode(name: &str, bytes: &[u8]) -> Result<Decoded, FormatError> {
    let msg = decode_message(name, bytes)?;
    convert(name, &msg)
}

/// What a pprof unit becomes: kiln's unit, and the factor turning values into it.
fn unit_of(unit: &str) -> (WeightUnit, u64) {
    match unit {
        "nanoseconds" | "nanosecond" | "ns" => (WeightUnit::Nanoseconds, 1),
        "microseconds" | "microsecond" | "us" => (WeightUnit::Microseconds, 1),
        "milliseconds" | "millisecond" | "ms" => (WeightUnit::Nanoseconds, 1_000_000),
        "seconds" | "second" | "s" => (WeightUnit::Nanoseconds, 1_000_000_000),
        "bytes" | "byte" | "B" => (WeightUnit::Bytes, 1),
        "kilobytes" | "KB" | "KiB" => (WeightUnit::Bytes, 1024),
        "megabytes" | "MB" | "MiB" => (WeightUnit::Bytes, 1024 * 1024),
        _ => (WeightUnit::Events, 1),
    }
}

struct Strings<'a> {
    table: &'a [Vec<u8>],
    name: &'a str,
}

impl Strings<'_> {
    fn get(&self, i: i64, what: &str) -> Result<&[u8], FormatError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.table.get(i))
            .map(|s| s.as_slice())
            .ok_or_else(|| FormatError::Malformed {
                name: self.name.to_string(),
                format: "pprof",
                why: format!(
                    "{what} names string {i}, but the string table has {} strings",
                    self.table.len()
                ),
            })
    }

    fn text(&self, i: i64, what: &str) -> Result<String, FormatError> {
        Ok(String::from_utf8_lossy(self.get(i, what)?).into_owned())
    }
}

/// Ids to positions: dense (`1..=n` in order, as Go writes them) or a map.
enum Index {
    Dense(usize),
    Map(HashMap<u64, u32, Fast>),
}

impl Index {
    fn new(ids: impl ExactSizeIterator<Item = u64> + Clone) -> Result<Self, u64> {
        let n = ids.len();
        if ids.clone().enumerate().all(|(i, id)| id == i as u64 + 1) {
            return Ok(Index::Dense(n));
        }
        let mut m = HashMap::with_capacity_and_hasher(n, Fast::default());
        for (i, id) in ids.enumerate() {
            if m.insert(id, i as u32).is_some() {
                return Err(id);
            }
        }
        Ok(Index::Map(m))
    }

    fn get(&self, id: u64) -> Option<usize> {
        match self {
            Index::Dense(n) => (id >= 1 && id <= *n as u64).then(|| (id - 1) as usize),
            Index::Map(m) => m.get(&id).map(|&i| i as usize),
        }
    }
}

/// Converts a decoded message (see [`decode_message`]).
pub fn convert(name: &str, msg: &proto::Profile) -> Result<Decoded, FormatError> {
    let bad = |why: String| FormatError::Malformed {
        name: name.to_string(),
        format: "pprof",
        why,
    };
    let strings = Strings {
        table: &msg.string_table,
        name,
    };
    if msg.string_table.first().is_some_and(|s| !s.is_empty()) {
        return Err(bad("the string table's first string is not empty".into()));
    }
    if msg.sample_type.is_empty() {
        return Err(bad(
            "no sample_type: the profile says nothing of what its values are".into(),
        ));
    }
    let mut info = PprofInfo {
        time_nanos: msg.time_nanos,
        duration_nanos: msg.duration_nanos,
        ..Default::default()
    };
    for (i, st) in msg.sample_type.iter().enumerate() {
        let what = format!("sample_type {i}");
        info.sample_types.push((
            strings.text(st.r#type, &what)?,
            strings.text(st.unit, &what)?,
        ));
    }
    info.default_type = info.sample_types.len() - 1;
    if msg.default_sample_type != 0 {
        let want = strings.get(msg.default_sample_type, "default_sample_type")?;
        if let Some(i) = info
            .sample_types
            .iter()
            .position(|(t, _)| t.as_bytes() == want)
        {
            info.default_type = i;
        }
    }
    if let Some(pt) = &msg.period_type {
        info.period = Some((
            strings.text(pt.r#type, "period_type")?,
            strings.text(pt.unit, "period_type")?,
            msg.period,
        ));
    }
    for &c in &msg.comment {
        info.comments.push(strings.text(c, "comment")?);
    }

    // One template profile holds the names, frames and stacks every sample type shares.
    let mut base = Profile::default();
    let mut str_ids: Vec<Option<StrId>> = vec![None; msg.string_table.len()];
    let mut intern = |p: &mut Profile, i: i64, what: &str| -> Result<StrId, FormatError> {
        let s = strings.get(i, what)?;
        let slot = &mut str_ids[i as usize];
        Ok(*slot.get_or_insert_with(|| p.strings.intern(s)))
    };

    // Functions: (name, source).
    let fidx = Index::new(msg.function.iter().map(|f| f.id))
        .map_err(|id| bad(format!("two functions have id {id}")))?;
    let mut functions: Vec<(StrId, Option<Source>)> = Vec::with_capacity(msg.function.len());
    for (i, f) in msg.function.iter().enumerate() {
        let what = format!("function {} (#{i})", f.id);
        let n = if f.name != 0 { f.name } else { f.system_name };
        // A function without a name (Go's threadcreate profiles) reads as go tool
        // pprof -traces shows it.
        let name = if strings.get(n, &what)?.is_empty() {
            base.strings.intern(b"<unknown>")
        } else {
            intern(&mut base, n, &what)?
        };
        let _ = intern(&mut base, f.system_name, &what)?;
        let source = if f.filename != 0 {
            Some(Source {
                file: intern(&mut base, f.filename, &what)?,
                line: u32::try_from(f.start_line).unwrap_or(0),
            })
        } else {
            None
        };
        functions.push((name, source));
    }
    let midx = Index::new(msg.mapping.iter().map(|m| m.id))
        .map_err(|id| bad(format!("two mappings have id {id}")))?;

    // Locations: their frames, root first (a location's lines are innermost first; all
    // but the outermost are inlined into it).
    let lidx = Index::new(msg.location.iter().map(|l| l.id))
        .map_err(|id| bad(format!("two locations have id {id}")))?;
    let mut loc_frames: Vec<Vec<FrameId>> = Vec::with_capacity(msg.location.len());
    for (i, loc) in msg.location.iter().enumerate() {
        let mut frames = Vec::with_capacity(loc.line.len().max(1));
        if loc.line.is_empty() {
            // Not symbolised: name it by address, in its image where the mapping says.
            let image = match (loc.mapping_id, midx.get(loc.mapping_id)) {
                (0, _) => None,
                (id, None) => {
                    return Err(bad(format!(
                        "location {} (#{i}) names mapping {id}, which does not exist",
                        loc.id
                    )))
                }
                (_, Some(m)) => {
                    let m = &msg.mapping[m];
                    let file = strings.get(m.filename, &format!("mapping {}", m.id))?;
                    let base_name = file.rsplit(|&c| c == b'/').next().unwrap_or(file);
                    (!base_name.is_empty()).then(|| {
                        let off = loc
                            .address
                            .wrapping_sub(m.memory_start)
                            .wrapping_add(m.file_offset);
                        (base_name.to_vec(), off)
                    })
                }
            };
            let label = match image {
                Some((img, off)) => {
                    let mut v = img;
                    v.extend_from_slice(format!("+0x{off:x}").as_bytes());
                    v
                }
                None => format!("0x{:x}", loc.address).into_bytes(),
            };
            frames.push(base.frame(&label, FrameKind::Unknown));
        } else {
            let last = loc.line.len() - 1;
            for (k, line) in loc.line.iter().enumerate().rev() {
                let Some(fi) = fidx.get(line.function_id) else {
                    return Err(bad(format!(
                        "location {} (#{i}) names function {}, which does not exist",
                        loc.id, line.function_id
                    )));
                };
                let (fname, source) = functions[fi];
                let kind = if k == last {
                    FrameKind::User
                } else {
                    FrameKind::Inline
                };
                let f = base.frames.intern(kiln_model::Frame { name: fname, kind });
                let source = source.map(|s| Source {
                    line: if s.line == 0 {
                        u32::try_from(line.line).unwrap_or(0)
                    } else {
                        s.line
                    },
                    ..s
                });
                if let Some(s) = source {
                    base.frames.set_source(f, s);
                }
                frames.push(f);
            }
        }
        loc_frames.push(frames);
    }

    // Samples: stacks, labels, thread.
    let ntypes = msg.sample_type.len();
    // The previous sample's locations and nodes, root first: samples next to each other
    // often share their root side, which is then not looked up again.
    let mut prev_locs: Vec<u64> = Vec::new();
    let mut prev_nodes: Vec<StackId> = Vec::new();
    let thread_key = |s: &[u8]| matches!(s, b"thread" | b"comm" | b"thread_name");
    let mut stacks: Vec<Option<StackId>> = Vec::with_capacity(msg.sample.len());
    let mut sample_labels: Vec<(LabelSetId, ThreadId)> = Vec::with_capacity(msg.sample.len());
    let mut label_buf: Vec<Label> = Vec::new();
    for (si, s) in msg.sample.iter().enumerate() {
        if s.value.len() != ntypes {
            return Err(bad(format!(
                "sample {si} has {} values for {ntypes} sample types",
                s.value.len()
            )));
        }
        let shared = prev_locs
            .iter()
            .zip(s.location_id.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        prev_locs.truncate(shared);
        prev_nodes.truncate(shared);
        let mut parent: Option<StackId> = prev_nodes.last().copied();
        for &lid in s.location_id.iter().rev().skip(shared) {
            let Some(li) = lidx.get(lid) else {
                return Err(bad(format!(
                    "sample {si} names location {lid}, which does not exist"
                )));
            };
            // The stack table interns (parent, frame) pairs itself: one lookup a frame.
            let mut node = parent;
            for &f in &loc_frames[li] {
                node = Some(base.stacks.intern(node, f));
            }
            parent = Some(node.ok_or_else(|| bad(format!("location {lid} has no frame")))?);
            prev_locs.push(lid);
            prev_nodes.extend(parent);
        }
        stacks.push(parent);
        // Labels; a thread's name and ids (kiln's own pprof output) become its thread.
        label_buf.clear();
        let (mut tname, mut pid, mut tid): (Option<StrId>, Option<u32>, Option<u32>) =
            (None, None, None);
        for l in &s.label {
            let what = format!("a label of sample {si}");
            let key = intern(&mut base, l.key, &what)?;
            let kb = strings.get(l.key, &what)?;
            if l.str != 0 {
                let v = intern(&mut base, l.str, &what)?;
                if thread_key(kb) && tname.is_none() {
                    tname = Some(v);
                    continue;
                }
                label_buf.push(Label {
                    key,
                    value: LabelValue::Str(v),
                });
            } else {
                if (kb == b"pid" || kb == b"tid") && (0..=i64::from(u32::MAX)).contains(&l.num) {
                    if kb == b"pid" {
                        pid = Some(l.num as u32);
                    } else {
                        tid = Some(l.num as u32);
                    }
                    continue;
                }
                let unit = if l.num_unit != 0 {
                    Some(intern(&mut base, l.num_unit, &what)?)
                } else {
                    None
                };
                label_buf.push(Label {
                    key,
                    value: LabelValue::Num { value: l.num, unit },
                });
            }
        }
        let set = base.samples.label_sets.intern(&label_buf);
        let thread = if tname.is_some() || pid.is_some() || tid.is_some() {
            let name = tname.unwrap_or_else(|| base.strings.intern(b""));
            base.threads.intern(kiln_model::Thread { pid, tid, name })
        } else {
            ThreadId::NONE
        };
        sample_labels.push((set, thread));
    }

    // A sample without locations (Go's heap profile has one for memory the runtime
    // cannot attribute) keeps its value under a `[no stack]` frame, as `go tool pprof`
    // counts it in every total.
    let no_stack = stacks.iter().any(Option::is_none).then(|| {
        let name = base.strings.intern(b"[no stack]");
        let f = base.frames.intern(kiln_model::Frame {
            name,
            kind: kiln_model::FrameKind::Unknown,
        });
        base.stacks.intern(None, f)
    });

    // One profile per sample type.
    let mut out = Decoded {
        info,
        ..Default::default()
    };
    let period_ns = match &out.info.period {
        Some((_, unit, p)) if *p > 0 => {
            let (u, f) = unit_of(unit);
            (u == WeightUnit::Nanoseconds).then(|| (*p as u64).saturating_mul(f))
        }
        _ => None,
    };
    for (ti, (tname, tunit)) in out.info.sample_types.iter().enumerate() {
        let (mut unit, factor) = unit_of(tunit);
        let mut event = EventInfo::new(tname.clone(), unit);
        if unit == WeightUnit::Events
            && (tunit == "count" || tunit.is_empty())
            && tname == "samples"
        {
            unit = WeightUnit::Samples;
            event = EventInfo::new(tname.clone(), unit);
            event.sample_period_ns = period_ns;
        }
        let mut p = Profile {
            strings: base.strings.clone(),
            frames: base.frames.clone(),
            stacks: base.stacks.clone(),
            threads: base.threads.clone(),
            samples: Default::default(),
            event,
        };
        p.samples.label_sets = base.samples.label_sets.clone();
        let mut stats = Stats {
            event: Some(tname.clone()),
            ..Default::default()
        };
        let mut zero = 0u64;
        for (si, s) in msg.sample.iter().enumerate() {
            let v = s.value[ti];
            if v == 0 {
                zero += 1;
                continue;
            }
            stats.read += 1;
            if v < 0 {
                stats.skip(SkipReason::NegativeValue);
                continue;
            }
            let Some(stack) = stacks[si].or(no_stack) else {
                stats.skip(SkipReason::EmptyStack);
                continue;
            };
            let (set, thread) = sample_labels[si];
            p.samples.push_labeled(
                stack,
                (v as u64).saturating_mul(factor),
                NO_TIME,
                thread,
                set,
            );
            stats.kept += 1;
        }
        out.profiles.push(p);
        out.stats.push(stats);
        out.zero.push(zero);
    }
    Ok(out)
}
