//! kiln's native profile format: the [`Profile`] model as compact binary columns.
//!
//! Why not folded stacks: they lose timestamps, threads and the event; the viewer's time
//! selection and stored runs need all three. Why not JSON: names are bytes (not always
//! UTF-8) and a 30 s recording holds tens of thousands of samples whose timestamps
//! compress to a byte or two each as deltas.
//!
//! ## Layout (versions 2 and 3)
//!
//! All integers are unsigned LEB128 varints unless noted; `bytes` is a varint length
//! followed by that many bytes.
//!
//! ```text
//! file     = "KILNPROF" version:u8(=2) count profile*count
//! profile  = event_name:bytes unit:u8 period_ns+1        (period: version 2; 0 = unknown)
//!            nstrings (bytes)*nstrings
//!            nframes  (name:strid kind:u8)*nframes
//!            nstacks  (parent+1 frame)*nstacks         parent+1 = 0 for a root; parent < index
//!            nthreads (pid+1 tid+1 name:strid)*nthreads  0 = unknown
//!            nsamples stack*n weight*n timedelta*n thread+1*n
//!            extras                                      (version 3 only)
//! extras   = nsources (frame file:strid line)*nsources  frames with a source location
//!            nsets (nlabels label*nlabels)*nsets         label sets after the empty one
//!            haslabels:u8 (set*nsamples if haslabels=1)  0 = no label
//! label    = key:strid 0 value:strid | key:strid 1 zigzag(value) unit+1
//! ```
//!
//! Version 3 adds source locations and sample labels (pprof input keeps both); a file
//! whose profiles have neither is written as version 2, byte for byte as before.
//!
//! `timedelta` is the zig-zag encoded wrapping difference from the previous sample's time
//! (starting at 0), so `NO_TIME` round-trips. Units: 0 samples, 1 period, 2 ns, 3 us,
//! 4 bytes, 5 events. `period_ns` is [`EventInfo::sample_period_ns`]: the CPU time one
//! sample stands for. Frame kinds: 0 unknown, 1 user, 2 kernel, 3 JIT, 4 inline, 5 root,
//! 6 Python (an older reader rejects a file with Python frames for its kind 6).
//! Version 1 files (no period) are read too; readers reject anything else (a newer
//! version says so in the error).
use crate::{
    EventInfo, Frame, FrameId, FrameKind, Label, LabelSetId, LabelValue, ModelError, Profile,
    Source, StackId, StrId, Thread, ThreadId, WeightUnit,
};
use std::io::Write;
use std::path::Path;

/// The first bytes of every native profile file.
pub const MAGIC: &[u8; 8] = b"KILNPROF";
/// The newest version this code writes (profiles without sources or labels are written
/// as version 2).
pub const VERSION: u8 = 3;

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn unit_code(u: WeightUnit) -> u8 {
    match u {
        WeightUnit::Samples => 0,
        WeightUnit::Period => 1,
        WeightUnit::Nanoseconds => 2,
        WeightUnit::Microseconds => 3,
        WeightUnit::Bytes => 4,
        WeightUnit::Events => 5,
    }
}

fn kind_code(k: FrameKind) -> u8 {
    match k {
        FrameKind::Unknown => 0,
        FrameKind::User => 1,
        FrameKind::Kernel => 2,
        FrameKind::Jit => 3,
        FrameKind::Inline => 4,
        FrameKind::Root => 5,
        FrameKind::Python => 6,
    }
}

/// Encodes profiles into bytes.
pub fn encode(profiles: &[Profile]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    let extras = profiles
        .iter()
        .any(|p| p.frames.has_sources() || p.samples.has_labels());
    out.push(if extras { 3 } else { 2 });
    put(&mut out, profiles.len() as u64);
    for p in profiles {
        put_bytes(&mut out, p.event.name.as_bytes());
        out.push(unit_code(p.event.unit));
        put(
            &mut out,
            p.event.sample_period_ns.map_or(0, |x| x.saturating_add(1)),
        );
        put(&mut out, p.strings.len() as u64);
        for (_, s) in p.strings.iter() {
            put_bytes(&mut out, s);
        }
        put(&mut out, p.frames.len() as u64);
        for (_, f) in p.frames.iter() {
            put(&mut out, u64::from(f.name.0));
            out.push(kind_code(f.kind));
        }
        put(&mut out, p.stacks.len() as u64);
        for (&parent, f) in p.stacks.raw_parents().iter().zip(p.stacks.raw_frames()) {
            put(
                &mut out,
                if parent == u32::MAX {
                    0
                } else {
                    u64::from(parent) + 1
                },
            );
            put(&mut out, u64::from(f.0));
        }
        put(&mut out, p.threads.len() as u64);
        for (_, t) in p.threads.iter() {
            put(&mut out, t.pid.map_or(0, |x| u64::from(x) + 1));
            put(&mut out, t.tid.map_or(0, |x| u64::from(x) + 1));
            put(&mut out, u64::from(t.name.0));
        }
        let s = &p.samples;
        put(&mut out, s.len() as u64);
        for x in &s.stack {
            put(&mut out, u64::from(x.0));
        }
        for &w in &s.weight {
            put(&mut out, w);
        }
        let mut prev = 0u64;
        for &t in &s.time {
            let d = t.wrapping_sub(prev) as i64;
            put(&mut out, ((d << 1) ^ (d >> 63)) as u64);
            prev = t;
        }
        for x in &s.thread {
            put(
                &mut out,
                if *x == ThreadId::NONE {
                    0
                } else {
                    u64::from(x.0) + 1
                },
            );
        }
        if extras {
            encode_extras(p, &mut out);
        }
    }
    out
}

fn encode_extras(p: &Profile, out: &mut Vec<u8>) {
    let sources: Vec<(FrameId, Source)> = p
        .frames
        .iter()
        .filter_map(|(id, _)| p.frames.source(id).map(|s| (id, s)))
        .collect();
    put(out, sources.len() as u64);
    for (id, src) in sources {
        put(out, u64::from(id.0));
        put(out, u64::from(src.file.0));
        put(out, u64::from(src.line));
    }
    let sets = &p.samples.label_sets;
    put(out, sets.len().saturating_sub(1) as u64);
    for (_, set) in sets.iter().skip(1) {
        put(out, set.len() as u64);
        for l in set {
            put(out, u64::from(l.key.0));
            match l.value {
                LabelValue::Str(v) => {
                    out.push(0);
                    put(out, u64::from(v.0));
                }
                LabelValue::Num { value, unit } => {
                    out.push(1);
                    put(out, ((value << 1) ^ (value >> 63)) as u64);
                    put(out, unit.map_or(0, |u| u64::from(u.0) + 1));
                }
            }
        }
    }
    if p.samples.has_labels() {
        out.push(1);
        for l in &p.samples.labels {
            put(out, u64::from(l.0));
        }
    } else {
        out.push(0);
    }
}

/// Writes profiles to `out`.
pub fn write(profiles: &[Profile], out: &mut dyn Write) -> std::io::Result<()> {
    out.write_all(&encode(profiles))
}

/// Whether `bytes` start like a native profile (content sniffing).
pub fn is_native(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl Reader<'_> {
    fn err(&self, why: impl Into<String>) -> ModelError {
        ModelError::Native {
            path: self.path.to_path_buf(),
            offset: self.pos as u64,
            why: why.into(),
        }
    }

    fn u8(&mut self) -> Result<u8, ModelError> {
        let v = *self
            .b
            .get(self.pos)
            .ok_or_else(|| self.err("unexpected end of file"))?;
        self.pos += 1;
        Ok(v)
    }

    fn var(&mut self) -> Result<u64, ModelError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("integer longer than 64 bits"))
    }

    fn count(&mut self, what: &str, min_bytes_each: usize) -> Result<usize, ModelError> {
        let n = self.var()?;
        let left = (self.b.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes_each as u64) > left {
            return Err(self.err(format!("{what} count {n} exceeds the file size")));
        }
        Ok(n as usize)
    }

    fn index(&mut self, what: &str, len: usize) -> Result<u32, ModelError> {
        let v = self.var()?;
        if v >= len as u64 {
            return Err(self.err(format!("{what} index {v} out of range (have {len})")));
        }
        Ok(v as u32)
    }

    /// Room for `n` items (a count already checked against the file's size), or an error
    /// when the memory cannot be had: never an abort.
    fn vec<T>(&self, n: usize, what: &'static str) -> Result<Vec<T>, ModelError> {
        crate::input::vec_with_capacity(n, &self.path.display().to_string(), what)
            .map_err(|e| self.err(e.to_string()))
    }

    fn bytes(&mut self) -> Result<&[u8], ModelError> {
        let n = self.var()? as usize;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| self.err(format!("string of {n} bytes runs past the end")))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
}

/// A profile's event: name, unit and (version 2 on) sample period.
fn decode_event(r: &mut Reader<'_>, version: u8) -> Result<EventInfo, ModelError> {
    let name = String::from_utf8_lossy(r.bytes()?).into_owned();
    let unit = match r.u8()? {
        0 => WeightUnit::Samples,
        1 => WeightUnit::Period,
        2 => WeightUnit::Nanoseconds,
        3 => WeightUnit::Microseconds,
        4 => WeightUnit::Bytes,
        5 => WeightUnit::Events,
        u => return Err(r.err(format!("unknown weight unit {u}"))),
    };
    let mut event = EventInfo::new(name, unit);
    if version >= 2 {
        event.sample_period_ns = r.var()?.checked_sub(1);
    }
    Ok(event)
}

/// The sizes of a profile's tables, for the indexes that follow them.
struct Tables {
    strings: usize,
    frames: usize,
    stacks: usize,
    threads: usize,
}

/// A profile's strings, frames, stacks and threads, each entry new (a duplicate is an
/// error: the file was not written by kiln).
fn decode_tables(r: &mut Reader<'_>, p: &mut Profile) -> Result<Tables, ModelError> {
    let ns = r.count("string", 1)?;
    for i in 0..ns {
        let s = r.bytes()?.to_vec();
        if p.strings.intern(&s).0 as usize != i {
            return Err(r.err("duplicate string in the string table"));
        }
    }
    let nf = r.count("frame", 2)?;
    for i in 0..nf {
        let name = StrId(r.index("string", ns)?);
        let kind = match r.u8()? {
            0 => FrameKind::Unknown,
            1 => FrameKind::User,
            2 => FrameKind::Kernel,
            3 => FrameKind::Jit,
            4 => FrameKind::Inline,
            5 => FrameKind::Root,
            6 => FrameKind::Python,
            k => return Err(r.err(format!("unknown frame kind {k}"))),
        };
        if p.frames.intern(Frame { name, kind }).0 as usize != i {
            return Err(r.err("duplicate frame in the frame table"));
        }
    }
    let nst = r.count("stack", 2)?;
    for i in 0..nst {
        let parent = r.index("parent stack", i + 1)?;
        let frame = crate::FrameId(r.index("frame", nf)?);
        let parent = (parent > 0).then(|| StackId(parent - 1));
        if p.stacks.intern(parent, frame).0 as usize != i {
            return Err(r.err("duplicate node in the stack table"));
        }
    }
    let nt = r.count("thread", 3)?;
    for i in 0..nt {
        let pid = r.var()?;
        let tid = r.var()?;
        let name = StrId(r.index("string", ns)?);
        let conv = |v: u64| (v > 0).then(|| (v - 1) as u32);
        let t = Thread {
            pid: conv(pid),
            tid: conv(tid),
            name,
        };
        if p.threads.intern(t).0 as usize != i {
            return Err(r.err("duplicate thread in the thread table"));
        }
    }
    Ok(Tables {
        strings: ns,
        frames: nf,
        stacks: nst,
        threads: nt,
    })
}

/// A profile's samples, column by column; returns their count.
fn decode_samples(r: &mut Reader<'_>, p: &mut Profile, t: &Tables) -> Result<usize, ModelError> {
    let (nst, nt) = (t.stacks, t.threads);
    let nsm = r.count("sample", 4)?;
    let mut stacks = r.vec(nsm, "the samples' stacks")?;
    for _ in 0..nsm {
        stacks.push(StackId(r.index("stack", nst)?));
    }
    let mut weights = r.vec(nsm, "the samples' weights")?;
    for _ in 0..nsm {
        weights.push(r.var()?);
    }
    let mut times = r.vec(nsm, "the samples' times")?;
    let mut prev = 0u64;
    for _ in 0..nsm {
        let z = r.var()?;
        let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
        prev = prev.wrapping_add(d as u64);
        times.push(prev);
    }
    let mut threads = r.vec(nsm, "the samples' threads")?;
    for _ in 0..nsm {
        let t = r.index("thread", nt + 1)?;
        threads.push(if t == 0 {
            ThreadId::NONE
        } else {
            ThreadId(t - 1)
        });
    }
    // The columns as read: no table grows sample by sample.
    p.samples.stack = stacks;
    p.samples.weight = weights;
    p.samples.time = times;
    p.samples.thread = threads;
    Ok(nsm)
}

/// Decodes the profiles of a native file's bytes; `path` names it in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Vec<Profile>, ModelError> {
    let mut r = Reader {
        b: bytes,
        pos: 0,
        path,
    };
    if !bytes.starts_with(MAGIC) {
        return Err(r.err("missing KILNPROF signature"));
    }
    r.pos = MAGIC.len();
    let version = r.u8()?;
    if !(1..=VERSION).contains(&version) {
        return Err(r.err(format!(
            "format version {version}; this kiln reads versions 1 to {VERSION} (a newer kiln wrote it?)"
        )));
    }
    let n = r.count("profile", 1)?;
    let mut out = r.vec(n, "the profiles")?;
    for _ in 0..n {
        let mut p = Profile::new(decode_event(&mut r, version)?);
        let t = decode_tables(&mut r, &mut p)?;
        let nsm = decode_samples(&mut r, &mut p, &t)?;
        if version >= 3 {
            decode_extras(&mut r, &mut p, t.strings, t.frames, nsm)?;
        }
        out.push(p);
    }
    if r.pos != bytes.len() {
        return Err(r.err("trailing bytes after the last profile"));
    }
    Ok(out)
}

fn decode_extras(
    r: &mut Reader<'_>,
    p: &mut Profile,
    ns: usize,
    nf: usize,
    nsm: usize,
) -> Result<(), ModelError> {
    let nsrc = r.count("source", 3)?;
    for _ in 0..nsrc {
        let f = FrameId(r.index("frame", nf)?);
        let file = StrId(r.index("string", ns)?);
        let line = u32::try_from(r.var()?).map_err(|_| r.err("line number above 2^32"))?;
        p.frames.set_source(f, Source { file, line });
    }
    let nsets = r.count("label set", 1)?;
    let mut labels = Vec::new();
    for i in 0..nsets {
        let n = r.count("label", 3)?;
        labels.clear();
        for _ in 0..n {
            let key = StrId(r.index("string", ns)?);
            let value = match r.u8()? {
                0 => LabelValue::Str(StrId(r.index("string", ns)?)),
                1 => {
                    let z = r.var()?;
                    let value = ((z >> 1) as i64) ^ -((z & 1) as i64);
                    let unit = r.index("string", ns + 1)?;
                    LabelValue::Num {
                        value,
                        unit: (unit > 0).then(|| StrId(unit - 1)),
                    }
                }
                t => return Err(r.err(format!("unknown label value type {t}"))),
            };
            labels.push(Label { key, value });
        }
        if p.samples.label_sets.intern(&labels).0 as usize != i + 1 {
            return Err(r.err("duplicate set in the label table"));
        }
    }
    match r.u8()? {
        0 => {}
        1 => {
            let mut col = r.vec(nsm, "the samples' labels")?;
            for _ in 0..nsm {
                col.push(LabelSetId(r.index("label set", nsets + 1)?));
            }
            p.samples.labels = col;
        }
        t => return Err(r.err(format!("unknown label column flag {t}"))),
    }
    Ok(())
}

/// Reads a native profile file.
pub fn read_file(path: &Path) -> Result<Vec<Profile>, ModelError> {
    let bytes = std::fs::read(path).map_err(|source| ModelError::File {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FoldedOptions, FoldedWriter, NO_TIME};

    fn sample_profile() -> Profile {
        let mut p = Profile::new(EventInfo {
            name: "cpu-clock".into(),
            unit: WeightUnit::Samples,
            sample_period_ns: Some(1_001_001),
        });
        let root = p.frame(b"1_scheduler", FrameKind::Root);
        let f = p.frame(b"$lists:foldl/3", FrameKind::Jit);
        let k = p.frame(b"\xffbytes", FrameKind::Kernel);
        let t = p.thread(Some(10), Some(11), b"1_scheduler");
        p.add_sample_path(&[root, f], 1, 5_000, t);
        p.add_sample_path(&[root, f, k], 3, 4_000, t);
        p.add_sample_path(&[root], 2, NO_TIME, ThreadId::NONE);
        p
    }

    fn folded(p: &Profile) -> Vec<u8> {
        let mut v = Vec::new();
        FoldedWriter::new(FoldedOptions::default())
            .write(p, &mut v)
            .unwrap();
        v
    }

    #[test]
    fn round_trips() {
        let a = sample_profile();
        let mut b = Profile::default();
        b.event.name = "page-faults".into();
        let bytes = encode(&[a.clone(), b]);
        assert!(is_native(&bytes));
        let back = decode(&bytes, Path::new("x")).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(folded(&back[0]), folded(&a));
        assert_eq!(back[0].samples.time, a.samples.time);
        assert_eq!(back[0].samples.thread, a.samples.thread);
        assert_eq!(back[0].event, a.event);
        assert_eq!(back[0].threads.get(ThreadId(0)), a.threads.get(ThreadId(0)));
        assert_eq!(back[1].event.name, "page-faults");
    }

    #[test]
    fn keeps_sources_and_labels() {
        let mut a = sample_profile();
        assert_eq!(
            encode(std::slice::from_ref(&a))[8],
            2,
            "plain profiles stay version 2"
        );
        let f = a.frame(b"$lists:foldl/3", FrameKind::Jit);
        let file = a.strings.intern(b"lists.erl");
        a.frames.set_source(f, Source { file, line: 1263 });
        let k = a.strings.intern(b"handler");
        let v = a.strings.intern(b"query");
        let bytes = a.strings.intern(b"bytes");
        let set = a.samples.label_sets.intern(&[
            Label {
                key: k,
                value: LabelValue::Str(v),
            },
            Label {
                key: bytes,
                value: LabelValue::Num {
                    value: -5,
                    unit: Some(bytes),
                },
            },
        ]);
        let stack = a.samples.stack[0];
        a.samples.push_labeled(stack, 7, 9_000, ThreadId::NONE, set);
        let enc = encode(std::slice::from_ref(&a));
        assert_eq!(enc[8], 3);
        let back = decode(&enc, Path::new("x")).unwrap().remove(0);
        assert_eq!(back.frames.source(f), Some(Source { file, line: 1263 }));
        assert_eq!(back.samples.labels, a.samples.labels);
        assert_eq!(
            back.samples.label_sets.get(set),
            a.samples.label_sets.get(set)
        );
        assert_eq!(folded(&back), folded(&a));
        for n in 0..enc.len() {
            assert!(decode(&enc[..n], Path::new("p")).is_err());
        }
    }

    #[test]
    fn reads_version_1_files() {
        // A version 1 file: one empty `offcpu` profile in ns, no period.
        let mut v1 = MAGIC.to_vec();
        v1.extend_from_slice(&[1, 1, 6]);
        v1.extend_from_slice(b"offcpu");
        v1.extend_from_slice(&[2, 0, 0, 0, 0, 0]);
        let back = decode(&v1, Path::new("old.kiln")).unwrap();
        assert_eq!(
            back[0].event,
            EventInfo::new("offcpu", WeightUnit::Nanoseconds)
        );
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = encode(&[sample_profile()]);
        for n in 0..bytes.len() {
            let e = decode(&bytes[..n], Path::new("p.kiln"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p.kiln: not a valid kiln profile at byte"),
                "{e}"
            );
        }
        let mut bad = bytes.clone();
        bad[8] = 9;
        let e = decode(&bad, Path::new("p")).unwrap_err().to_string();
        assert!(e.contains("version 9"), "{e}");
    }
}
