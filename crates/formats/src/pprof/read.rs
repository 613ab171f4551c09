//! pprof → kiln profiles: one [`Profile`] per sample type.
use super::proto;
use super::wire;
use crate::FormatError;
use kiln_collapse::folded::{group_by_prefix, Row};
use kiln_collapse::{SkipReason, Stats};
use kiln_model::input::{MAX_NAMES, MAX_STACK_DEPTH};
use kiln_model::{
    EventInfo, FrameId, FrameKind, Label, LabelSetId, LabelValue, Profile, Source, StackId, StrId,
    ThreadId, WeightUnit, NO_TIME,
};
use prost::Message;
use std::collections::HashMap;

/// A fast, fixed hasher: ids from the file, not from an adversary who gains anything.
type Fast = foldhash::fast::FixedState;

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

/// Decodes the protobuf message of a pprof file (gzipped or not) into owned messages
/// (what `kiln run --pprof` subtracts and re-encodes; reading a file for its profiles
/// goes through [`decode`], which reads the message in place). Gzipped bytes inflate to
/// at most `limit` bytes (the input limit).
pub fn decode_message(name: &str, bytes: &[u8], limit: u64) -> Result<proto::Profile, FormatError> {
    let raw = crate::compressed::inflate(name, bytes, limit)?;
    proto::Profile::decode(&*raw).map_err(|e| FormatError::Malformed {
        name: name.to_string(),
        format: "pprof",
        why: format!("not a valid profile.proto message: {e}"),
    })
}

/// Reads a pprof file's bytes (gzipped or not, inflating to at most `limit` bytes) into
/// one profile per sample type.
pub fn decode(name: &str, bytes: &[u8], limit: u64) -> Result<Decoded, FormatError> {
    let raw = crate::compressed::inflate(name, bytes, limit)?;
    read_message(name, &raw, None)
}

/// As [`decode`], building the profile of one sample type only: the one `choose` picks
/// from what the file says of itself (the others' profiles are left empty, their counts
/// kept). One profile of a large file costs its stack table once, not once per type.
pub fn decode_chosen(
    name: &str,
    bytes: &[u8],
    limit: u64,
    choose: &dyn Fn(&PprofInfo) -> Result<usize, FormatError>,
) -> Result<(Decoded, usize), FormatError> {
    let raw = crate::compressed::inflate(name, bytes, limit)?;
    let mut chosen = 0;
    let d = read_message(
        name,
        &raw,
        Some(&mut |info: &PprofInfo| {
            chosen = choose(info)?;
            Ok(chosen)
        }),
    )?;
    Ok((d, chosen))
}

/// Converts a decoded message (see [`decode_message`]).
pub fn convert(name: &str, msg: &proto::Profile) -> Result<Decoded, FormatError> {
    read_message(name, &msg.encode_to_vec(), None)
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
    table: Vec<&'a [u8]>,
    name: &'a str,
}

impl<'a> Strings<'a> {
    fn get(&self, i: i64, what: &str) -> Result<&'a [u8], FormatError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.table.get(i))
            .copied()
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

/// Picks the one sample type to build a profile of, from what the file says of itself.
type Choose<'a> = &'a mut dyn FnMut(&PprofInfo) -> Result<usize, FormatError>;

/// What a sample's stack came to.
#[derive(Clone, Copy)]
enum Stack {
    Node(StackId),
    /// No location: kept under a `[no stack]` frame.
    Empty,
    TooDeep,
}

/// The message's top-level fields: scalars read, repeated messages as their bytes.
#[derive(Default)]
struct Top<'a> {
    sample_type: Vec<(i64, i64)>,
    samples: Vec<&'a [u8]>,
    mappings: Vec<&'a [u8]>,
    locations: Vec<&'a [u8]>,
    functions: Vec<&'a [u8]>,
    strings: Vec<&'a [u8]>,
    time_nanos: i64,
    duration_nanos: i64,
    period_type: Option<(i64, i64)>,
    period: i64,
    comments: Vec<u64>,
    default_sample_type: i64,
}

fn top<'a>(raw: &'a [u8]) -> Result<Top<'a>, wire::WireError> {
    let mut t = Top::default();
    for f in wire::Fields::new(raw) {
        let (tag, v) = f?;
        match tag {
            1 => t.sample_type.push(wire::value_type(wire::bytes(&v, 1)?)?),
            2 => t.samples.push(wire::bytes(&v, 2)?),
            3 => t.mappings.push(wire::bytes(&v, 3)?),
            4 => t.locations.push(wire::bytes(&v, 4)?),
            5 => t.functions.push(wire::bytes(&v, 5)?),
            6 => {
                if t.strings.len() >= MAX_NAMES {
                    return Err(format!(
                        "more than {MAX_NAMES} strings, the most kiln reads from one profile"
                    ));
                }
                t.strings.push(wire::bytes(&v, 6)?)
            }
            9 => t.time_nanos = wire::int(&v, 9)? as i64,
            10 => t.duration_nanos = wire::int(&v, 10)? as i64,
            11 => t.period_type = Some(wire::value_type(wire::bytes(&v, 11)?)?),
            12 => t.period = wire::int(&v, 12)? as i64,
            13 => wire::push_ints(&v, &mut t.comments, 13)?,
            14 => t.default_sample_type = wire::int(&v, 14)? as i64,
            _ => {}
        }
    }
    Ok(t)
}

/// Reads an inflated message in place ([`wire`]): one profile per sample type, or only
/// the one `choose` picks.
fn read_message(
    name: &str,
    raw: &[u8],
    choose: Option<Choose<'_>>,
) -> Result<Decoded, FormatError> {
    let msg = top(raw).map_err(|e| FormatError::Malformed {
        name: name.to_string(),
        format: "pprof",
        why: format!("not a valid profile.proto message: {e}"),
    })?;
    let mut r = Reader {
        name,
        str_ids: vec![None; msg.strings.len()],
        strings: Strings {
            table: msg.strings.clone(),
            name,
        },
        base: Profile::default(),
    };
    let info = r.info(&msg)?;
    // Which sample types get a profile: all, or the one chosen now that the file has said
    // what it holds (before anything large is built).
    let only = match choose {
        Some(f) => Some(f(&info)?),
        None => None,
    };
    let functions = r.functions(&msg)?;
    let locations = r.locations(&msg, &functions)?;
    drop(functions);
    let mut samples = r.samples(&msg, &locations)?;
    drop(locations);
    r.build_stacks(&mut samples);
    let no_stack = r.no_stack_node(&samples.stacks);
    Ok(profiles(info, r.base, &samples, no_stack, only))
}

/// What the steps of reading one message share: the file's name and strings, and the
/// template profile holding the names, frames and stacks every sample type shares.
struct Reader<'a> {
    name: &'a str,
    strings: Strings<'a>,
    /// Each string's id in `base`, once interned.
    str_ids: Vec<Option<StrId>>,
    base: Profile,
}

/// The functions' (name, source), in the file's order, with their index by id.
type Functions = (Index, Vec<(StrId, Option<Source>)>);

/// The locations' frames, root first (a location's lines are innermost first; all but
/// the outermost are inlined into it), in one flat array.
struct Locations {
    index: Index,
    /// Where each location's frames start in `frames`, then the end.
    start: Vec<u32>,
    frames: Vec<FrameId>,
}

impl Locations {
    fn frames_of(&self, li: usize) -> &[FrameId] {
        &self.frames[self.start[li] as usize..self.start[li + 1] as usize]
    }
}

/// The samples as read: each one's stack (set once the tree is built), values (one per
/// sample type), labels and thread, and the frames of every stack (`rows` into `ids`).
struct Samples {
    stacks: Vec<Stack>,
    values: Vec<u64>,
    labels: Vec<(LabelSetId, ThreadId)>,
    rows: Vec<Row>,
    ids: Vec<u32>,
    ntypes: usize,
}

impl Reader<'_> {
    fn bad(&self, why: String) -> FormatError {
        FormatError::Malformed {
            name: self.name.to_string(),
            format: "pprof",
            why,
        }
    }

    fn wire_err(&self, what: String) -> impl Fn(wire::WireError) -> FormatError + '_ {
        move |e| self.bad(format!("{what}: {e}"))
    }

    /// String `i` interned in the template (once).
    fn intern(&mut self, i: i64, what: &str) -> Result<StrId, FormatError> {
        let s = self.strings.get(i, what)?;
        let slot = &mut self.str_ids[i as usize];
        Ok(*slot.get_or_insert_with(|| self.base.strings.intern(s)))
    }

    /// What the file says of itself: sample types, default type, period, comments.
    fn info(&self, msg: &Top<'_>) -> Result<PprofInfo, FormatError> {
        let strings = &self.strings;
        if strings.table.first().is_some_and(|s| !s.is_empty()) {
            return Err(self.bad("the string table's first string is not empty".into()));
        }
        if msg.sample_type.is_empty() {
            return Err(
                self.bad("no sample_type: the profile says nothing of what its values are".into())
            );
        }
        let mut info = PprofInfo {
            time_nanos: msg.time_nanos,
            duration_nanos: msg.duration_nanos,
            ..Default::default()
        };
        for (i, &(ty, unit)) in msg.sample_type.iter().enumerate() {
            let what = format!("sample_type {i}");
            info.sample_types
                .push((strings.text(ty, &what)?, strings.text(unit, &what)?));
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
        if let Some((ty, unit)) = msg.period_type {
            info.period = Some((
                strings.text(ty, "period_type")?,
                strings.text(unit, "period_type")?,
                msg.period,
            ));
        }
        for &c in &msg.comments {
            info.comments.push(strings.text(c as i64, "comment")?);
        }
        Ok(info)
    }

    /// Functions: (name, source), in the file's order, with their index by id.
    fn functions(&mut self, msg: &Top<'_>) -> Result<Functions, FormatError> {
        let raw = msg
            .functions
            .iter()
            .enumerate()
            .map(|(i, b)| wire::function(b).map_err(self.wire_err(format!("function #{i}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let index = Index::new(raw.iter().map(|f| f.id))
            .map_err(|id| self.bad(format!("two functions have id {id}")))?;
        let mut functions: Vec<(StrId, Option<Source>)> = Vec::with_capacity(raw.len());
        for (i, f) in raw.iter().enumerate() {
            let what = format!("function {} (#{i})", f.id);
            let n = if f.name != 0 { f.name } else { f.system_name };
            // A function without a name (Go's threadcreate profiles) reads as go tool
            // pprof -traces shows it.
            let name = if self.strings.get(n, &what)?.is_empty() {
                self.base.strings.intern(b"<unknown>")
            } else {
                self.intern(n, &what)?
            };
            let _ = self.intern(f.system_name, &what)?;
            let source = if f.filename != 0 {
                Some(Source {
                    file: self.intern(f.filename, &what)?,
                    line: u32::try_from(f.start_line).unwrap_or(0),
                })
            } else {
                None
            };
            functions.push((name, source));
        }
        Ok((index, functions))
    }

    /// The name of an address that no function names: in its image where the mapping
    /// says (`image+0xOFF`), else the address.
    fn address_frame(
        &mut self,
        (id, i): (u64, usize),
        mapping: Option<&wire::Mapping>,
        mapping_id: u64,
        address: u64,
    ) -> Result<FrameId, FormatError> {
        let image = match (mapping_id, mapping) {
            (0, _) => None,
            (mid, None) => {
                return Err(self.bad(format!(
                    "location {id} (#{i}) names mapping {mid}, which does not exist"
                )))
            }
            (_, Some(m)) => {
                let file = self.strings.get(m.filename, &format!("mapping {}", m.id))?;
                let base_name = file.rsplit(|&c| c == b'/').next().unwrap_or(file);
                (!base_name.is_empty()).then(|| {
                    let off = address
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
            None => format!("0x{address:x}").into_bytes(),
        };
        Ok(self.base.frame(&label, FrameKind::Unknown))
    }

    /// Every location's frames.
    fn locations(
        &mut self,
        msg: &Top<'_>,
        (fidx, functions): &Functions,
    ) -> Result<Locations, FormatError> {
        let mappings = msg
            .mappings
            .iter()
            .enumerate()
            .map(|(i, b)| wire::mapping(b).map_err(self.wire_err(format!("mapping #{i}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let midx = Index::new(mappings.iter().map(|m| m.id))
            .map_err(|id| self.bad(format!("two mappings have id {id}")))?;
        let nloc = msg.locations.len();
        let mut loc_ids: Vec<u64> = Vec::with_capacity(nloc);
        let mut start: Vec<u32> = Vec::with_capacity(nloc + 1);
        let mut frames: Vec<FrameId> = Vec::with_capacity(nloc);
        let mut lines: Vec<(u64, i64)> = Vec::new();
        for (i, b) in msg.locations.iter().enumerate() {
            let (id, mapping_id, address) =
                wire::location(b, &mut lines).map_err(self.wire_err(format!("location #{i}")))?;
            loc_ids.push(id);
            start.push(
                u32::try_from(frames.len())
                    .map_err(|_| self.bad("more than 4 billion frames in locations".into()))?,
            );
            if lines.is_empty() {
                // Not symbolised: named by address.
                let mapping = midx.get(mapping_id).map(|m| &mappings[m]);
                frames.push(self.address_frame((id, i), mapping, mapping_id, address)?);
                continue;
            }
            let last = lines.len() - 1;
            for (k, &(function_id, line)) in lines.iter().enumerate().rev() {
                let Some(fi) = fidx.get(function_id) else {
                    return Err(self.bad(format!(
                        "location {id} (#{i}) names function {function_id}, which does not exist"
                    )));
                };
                let (fname, source) = functions[fi];
                let kind = if k == last {
                    FrameKind::User
                } else {
                    FrameKind::Inline
                };
                let f = self
                    .base
                    .frames
                    .intern(kiln_model::Frame { name: fname, kind });
                let source = source.map(|s| Source {
                    line: if s.line == 0 {
                        u32::try_from(line).unwrap_or(0)
                    } else {
                        s.line
                    },
                    ..s
                });
                if let Some(s) = source {
                    self.base.frames.set_source(f, s);
                }
                frames.push(f);
            }
        }
        start.push(frames.len() as u32);
        let index = Index::new(loc_ids.iter().copied())
            .map_err(|id| self.bad(format!("two locations have id {id}")))?;
        Ok(Locations {
            index,
            start,
            frames,
        })
    }

    /// Samples, read one at a time from their bytes: their frames (root first, into one
    /// arena), values, labels, thread. The stack tree is built afterwards from all of them
    /// at once ([`Reader::build_stacks`]).
    fn samples(&mut self, msg: &Top<'_>, locs: &Locations) -> Result<Samples, FormatError> {
        let ntypes = msg.sample_type.len();
        let nsamples = msg.samples.len();
        let mut out = Samples {
            stacks: Vec::with_capacity(nsamples),
            // Grows with the values read (each at least a byte of the file), never
            // reserved from the counts: a million sample types times a million samples is
            // no allocation to attempt before the first sample says it has the wrong
            // number of values.
            values: Vec::new(),
            labels: Vec::with_capacity(nsamples),
            rows: Vec::with_capacity(nsamples),
            ids: Vec::new(),
            ntypes,
        };
        let mut label_buf: Vec<Label> = Vec::new();
        let (mut s_locs, mut s_values, mut s_labels) = (Vec::new(), Vec::new(), Vec::new());
        for (si, b) in msg.samples.iter().enumerate() {
            wire::sample(b, &mut s_locs, &mut s_values, &mut s_labels)
                .map_err(self.wire_err(format!("sample {si}")))?;
            if s_values.len() != ntypes {
                return Err(self.bad(format!(
                    "sample {si} has {} values for {ntypes} sample types",
                    s_values.len()
                )));
            }
            out.values.extend_from_slice(&s_values);
            let at = out.ids.len();
            let mut depth = 0usize;
            for &lid in s_locs.iter().rev() {
                let Some(li) = locs.index.get(lid) else {
                    return Err(self.bad(format!(
                        "sample {si} names location {lid}, which does not exist"
                    )));
                };
                let frames = locs.frames_of(li);
                if frames.is_empty() {
                    return Err(self.bad(format!("location {lid} has no frame")));
                }
                depth += frames.len();
                // A stack deeper than kiln keeps: counted, never built.
                if depth > MAX_STACK_DEPTH {
                    break;
                }
                out.ids.extend(frames.iter().map(|f| f.0));
            }
            if depth > MAX_STACK_DEPTH {
                out.ids.truncate(at);
                out.stacks.push(Stack::TooDeep);
                out.labels.push((LabelSetId::EMPTY, ThreadId::NONE));
                continue;
            }
            if depth > 0 {
                out.rows.push(Row::path(at, depth as u32, si as u64));
            }
            // Set once the tree is built.
            out.stacks.push(Stack::Empty);
            out.labels
                .push(self.sample_labels(si, &s_labels, &mut label_buf)?);
        }
        Ok(out)
    }

    /// A sample's labels; a thread's name and ids (kiln's own pprof output) become its
    /// thread.
    fn sample_labels(
        &mut self,
        si: usize,
        labels: &[&[u8]],
        buf: &mut Vec<Label>,
    ) -> Result<(LabelSetId, ThreadId), FormatError> {
        let thread_key = |s: &[u8]| matches!(s, b"thread" | b"comm" | b"thread_name");
        buf.clear();
        let (mut tname, mut pid, mut tid): (Option<StrId>, Option<u32>, Option<u32>) =
            (None, None, None);
        for lb in labels {
            let l = wire::label(lb).map_err(self.wire_err(format!("a label of sample {si}")))?;
            let what = format!("a label of sample {si}");
            let key = self.intern(l.key, &what)?;
            let kb = self.strings.get(l.key, &what)?;
            if l.str != 0 {
                let v = self.intern(l.str, &what)?;
                if thread_key(kb) && tname.is_none() {
                    tname = Some(v);
                    continue;
                }
                buf.push(Label {
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
                    Some(self.intern(l.num_unit, &what)?)
                } else {
                    None
                };
                buf.push(Label {
                    key,
                    value: LabelValue::Num { value: l.num, unit },
                });
            }
        }
        let set = self.base.samples.label_sets.intern(buf);
        let thread = if tname.is_some() || pid.is_some() || tid.is_some() {
            let name = tname.unwrap_or_else(|| self.base.strings.intern(b""));
            self.base
                .threads
                .intern(kiln_model::Thread { pid, tid, name })
        } else {
            ThreadId::NONE
        };
        Ok((set, thread))
    }

    /// The stack tree of every sample, built at once: grouped by prefix, every node is
    /// appended without a lookup and the table is sized exactly, so no hash index of
    /// millions of nodes is ever built (the folded reader builds its tree the same way:
    /// `kiln_collapse::folded::Row`).
    fn build_stacks(&mut self, s: &mut Samples) {
        let rows = std::mem::take(&mut s.rows);
        let ids = std::mem::take(&mut s.ids);
        let mut rows = rows;
        group_by_prefix(&mut rows, &ids);
        let new_nodes: usize = rows
            .iter()
            .map(|r| (r.frames() - r.shared()) as usize)
            .sum();
        self.base.stacks.reserve(new_nodes);
        let mut nodes: Vec<StackId> = Vec::new();
        for r in &rows {
            nodes.truncate(r.shared() as usize);
            for &id in &ids[r.at() + r.shared() as usize..r.at() + r.frames() as usize] {
                let parent = nodes.last().copied();
                nodes.push(self.base.stacks.push_new(parent, FrameId(id)));
            }
            if let Some(&leaf) = nodes.last() {
                s.stacks[r.value() as usize] = Stack::Node(leaf);
            }
        }
    }

    /// A sample without locations (Go's heap profile has one for memory the runtime
    /// cannot attribute) keeps its value under a `[no stack]` frame, as `go tool pprof`
    /// counts it in every total.
    fn no_stack_node(&mut self, stacks: &[Stack]) -> Option<StackId> {
        let base = &mut self.base;
        stacks.iter().any(|s| matches!(s, Stack::Empty)).then(|| {
            let name = base.strings.intern(b"[no stack]");
            let known = base.frames.len();
            let f = base.frames.intern(kiln_model::Frame {
                name,
                kind: FrameKind::Unknown,
            });
            if base.frames.len() > known {
                // A new frame: no node has it yet.
                base.stacks.push_new(None, f)
            } else {
                base.stacks.intern(None, f)
            }
        })
    }
}

/// The event of sample type `tname`/`tunit` and the factor turning its values into the
/// event's unit; Go's `samples/count` are counted timer samples of `period_ns`.
fn event_of(tname: &str, tunit: &str, period_ns: Option<u64>) -> (EventInfo, u64) {
    let (unit, factor) = unit_of(tunit);
    if unit == WeightUnit::Events && (tunit == "count" || tunit.is_empty()) && tname == "samples" {
        let mut event = EventInfo::new(tname.to_string(), WeightUnit::Samples);
        event.sample_period_ns = period_ns;
        return (event, factor);
    }
    (EventInfo::new(tname.to_string(), unit), factor)
}

/// The values of sample type `ti` (named `tname`) as `p`'s samples when `build` (else
/// only counted): what was read, kept and skipped, and how many values were zero.
fn take_samples(
    p: &mut Profile,
    s: &Samples,
    (ti, tname): (usize, &str),
    no_stack: Option<StackId>,
    build: bool,
    factor: u64,
) -> (Stats, u64) {
    let ntypes = s.ntypes;
    let mut stats = Stats {
        event: Some(tname.to_string()),
        ..Default::default()
    };
    let mut zero = 0u64;
    for (si, stack) in s.stacks.iter().enumerate() {
        let v = s.values[si * ntypes + ti] as i64;
        if v == 0 {
            zero += 1;
            continue;
        }
        stats.read += 1;
        if v < 0 {
            stats.skip(SkipReason::NegativeValue);
            continue;
        }
        let stack = match *stack {
            Stack::Node(s) => s,
            Stack::Empty => match no_stack {
                Some(n) => n,
                None => {
                    stats.skip(SkipReason::EmptyStack);
                    continue;
                }
            },
            Stack::TooDeep => {
                stats.skip(SkipReason::TooDeep);
                continue;
            }
        };
        if build {
            let (set, thread) = s.labels[si];
            p.samples.push_labeled(
                stack,
                (v as u64).saturating_mul(factor),
                NO_TIME,
                thread,
                set,
            );
        }
        stats.kept += 1;
    }
    (stats, zero)
}

/// One profile per sample type (or the one chosen); the last built takes the template
/// itself rather than a copy.
fn profiles(
    info: PprofInfo,
    base: Profile,
    s: &Samples,
    no_stack: Option<StackId>,
    only: Option<usize>,
) -> Decoded {
    let ntypes = s.ntypes;
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
    let built: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..ntypes).collect(),
    };
    let mut base = Some(base);
    for (ti, (tname, tunit)) in out.info.sample_types.clone().iter().enumerate() {
        let (event, factor) = event_of(tname, tunit, period_ns);
        let build = built.contains(&ti);
        let mut p = if !build {
            Profile::new(event.clone())
        } else if built.last() == Some(&ti) {
            base.take().unwrap_or_default()
        } else {
            let b = base.as_ref().expect("the template is there until the last");
            let mut p = Profile {
                strings: b.strings.clone(),
                frames: b.frames.clone(),
                stacks: b.stacks.clone(),
                threads: b.threads.clone(),
                samples: Default::default(),
                event: event.clone(),
            };
            p.samples.label_sets = b.samples.label_sets.clone();
            p
        };
        p.event = event;
        if build {
            let sets = p.samples.label_sets.clone();
            p.samples = Default::default();
            p.samples.label_sets = sets;
        }
        let (stats, zero) = take_samples(&mut p, s, (ti, tname), no_stack, build, factor);
        out.profiles.push(p);
        out.stats.push(stats);
        out.zero.push(zero);
    }
    out
}
