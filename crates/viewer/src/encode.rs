//! The binary encoding of a profile inside the HTML file.
//!
//! Why binary: a million frames written as JSON objects costs tens of megabytes and seconds
//! of `JSON.parse`; as typed arrays the browser maps them without parsing. The layout
//! (little-endian, every section starting at a multiple of 8 so the browser can view it as
//! a typed array in place) is read by `web/src/import/decode.ts`; keep the two in step and
//! bump [`VERSION`] on any change.
//!
//! Columns that mostly count up are stored as differences (marked Δ below): deflate
//! cannot see that 1000, 1001, 1002 are alike, but compresses 1, 1, 1 to almost nothing.
//! At a million frames this makes the embedded data a fifth smaller, and the browser's
//! parse and inflate time shrinks with it.
//!
//! ```text
//! header   u32 magic "KNV1", u32 version, u32 flags (1 = times, 2 = threads, 4 = counts,
//!          8 = stacks in name order, 16 = counts are the weights, 32 = u32 weights,
//!          64 = depths instead of parents, 128 = frames and names in name order),
//!          u32 strings, frames, stacks, samples, threads, text bytes, reserved; f64 time origin
//! text     UTF-8 of every name (invalid UTF-8 already replaced by U+FFFD), joined
//! u32[strings]  length of each name in UTF-16 units of the decoded text
//! u32[frames] name Δ · u8[frames] kind · u32[frames] rank in byte order of names
//!              (kinds: 0 unknown, 1 user, 2 kernel, 3 JIT, 4 inline, 5 root, 6 Python)
//!              (flag 128: names and frames are numbered in byte order of names, so a
//!              frame's rank is its index and the column is left out; sorted names
//!              also compress better, shared prefixes side by side)
//! u32[stacks] index minus parent (0 for a root) · u32[stacks] frame
//!              (flag 64: u8[stacks] depth instead of the parents, 0 for a root: in
//!              depth-first order a node's parent is the last node before it one level
//!              up, and a byte per stack inflates four times faster than a word)
//! u32[samples] stack Δ · f64[samples] weight (u32[samples] with flag 32: all fit)
//! f64[samples] samples each row stands for (flag 4; absent when every row is one sample,
//!              or with flag 16, when each row's count is its weight: counted samples)
//! f64[samples] time in ns since the origin, -1 if unknown     (flag 1)
//! i32[samples] thread, -1 if unknown                          (flag 2)
//! u32[threads] name · i32[threads] tid (-1 if unknown)
//! ```
//!
//! Without timestamps, samples are aggregated to one row per (stack, thread): the viewer
//! then only needs weights, and a folded file of a million lines stays a million rows.
//!
//! Stacks are renumbered depth first, each node's children in name order (flag 8): the
//! viewer's first layout (alphabetical, as flamegraph.pl draws) then needs no sorting and
//! walks its arrays front to back, which at a million frames is the difference between
//! a few passes over memory and a sort per parent.
use crate::ViewerError;
use kiln_model::{FrameKind, Profile, StackId, ThreadId, WeightUnit, NO_TIME};
use std::collections::HashMap;

/// `KNV1` read as a little-endian `u32`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"KNV1");
/// Version of the layout.
pub const VERSION: u32 = 2;
const FLAG_TIME: u32 = 1;
const FLAG_THREADS: u32 = 2;
const FLAG_COUNTS: u32 = 4;
const FLAG_NAME_ORDER: u32 = 8;
const FLAG_COUNTS_ARE_WEIGHTS: u32 = 16;
const FLAG_U32_WEIGHTS: u32 = 32;
const FLAG_DEPTHS: u32 = 64;
const FLAG_SORTED_FRAMES: u32 = 128;

fn count(what: &'static str, n: usize) -> Result<u32, ViewerError> {
    // Keep one value free so `n + 1` offsets and `-1` markers always fit.
    let max = i32::MAX as usize - 1;
    if n > max {
        return Err(ViewerError::TooLarge {
            what,
            count: n,
            max,
        });
    }
    Ok(n as u32)
}

struct Blob(Vec<u8>);

impl Blob {
    fn pad(&mut self) {
        while !self.0.len().is_multiple_of(8) {
            self.0.push(0);
        }
    }
    fn u32s(&mut self, it: impl IntoIterator<Item = u32>) {
        for v in it {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        self.pad();
    }
    fn i32s(&mut self, it: impl IntoIterator<Item = i32>) {
        for v in it {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        self.pad();
    }
    fn f64s(&mut self, it: impl IntoIterator<Item = f64>) {
        for v in it {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        self.pad();
    }
}

fn kind_code(k: FrameKind) -> u8 {
    match k {
        FrameKind::User => 1,
        FrameKind::Kernel => 2,
        FrameKind::Jit => 3,
        FrameKind::Inline => 4,
        FrameKind::Root => 5,
        FrameKind::Python => 6,
        _ => 0,
    }
}

/// One row of the samples section: a sample (timed profiles) or the sum of a
/// (stack, thread)'s samples.
struct Row {
    /// The stack, renumbered in name order.
    stack: StackId,
    /// Weight.
    weight: f64,
    /// ns after the profile's first sample, or -1 when unknown or summed.
    time: f64,
    /// The thread's index, -1 for none.
    thread: i32,
    /// How many samples the row stands for.
    samples: f64,
}

/// Names and frames in byte order of names (flamegraph.pl's order): a frame's id is then
/// its alphabetical rank.
struct NameOrder {
    /// String ids in byte order.
    strings: Vec<u32>,
    /// Each string's rank.
    string_rank: Vec<u32>,
    /// Frame ids in order of their names.
    frames: Vec<u32>,
    /// Each frame's rank.
    frame_rank: Vec<u32>,
}

fn name_order(p: &Profile, n_strings: u32, n_frames: u32) -> NameOrder {
    let mut strings: Vec<u32> = (0..n_strings).collect();
    strings.sort_by(|&a, &b| {
        p.strings
            .get(kiln_model::StrId(a))
            .cmp(p.strings.get(kiln_model::StrId(b)))
            .then(a.cmp(&b))
    });
    let string_rank = ranks(&strings);
    let mut frames: Vec<u32> = (0..n_frames).collect();
    frames.sort_by_key(|&f| {
        (
            string_rank[p.frames.get(kiln_model::FrameId(f)).name.0 as usize],
            f,
        )
    });
    let frame_rank = ranks(&frames);
    NameOrder {
        strings,
        string_rank,
        frames,
        frame_rank,
    }
}

/// The rank of each id of an ordering.
fn ranks(order: &[u32]) -> Vec<u32> {
    let mut rank = vec![0u32; order.len()];
    for (r, &x) in order.iter().enumerate() {
        rank[x as usize] = r as u32;
    }
    rank
}

/// The depth of each stack (parents come first), when every one fits in a byte.
fn byte_depths(parents: &[u32]) -> Option<Vec<u32>> {
    let mut depth = vec![0u32; parents.len()];
    for (i, &x) in parents.iter().enumerate() {
        if x != u32::MAX {
            depth[i] = depth[x as usize] + 1;
        }
    }
    depth
        .iter()
        .all(|&d| d <= u32::from(u8::MAX))
        .then_some(depth)
}

/// A thread id as the samples section stores it.
fn thread_index(t: ThreadId) -> i32 {
    if t == ThreadId::NONE {
        -1
    } else {
        t.0 as i32
    }
}

/// The samples section's rows: per sample when timed, else summed per (stack, thread)
/// in stack order (the differences between rows' stacks stay small).
fn rows(p: &Profile, new_id: &[u32]) -> Vec<Row> {
    // How many samples a row of the model stands for: folded input keeps one row per
    // stack with the sample count as weight; recordings keep one row per sample.
    let samples_in = |w: u64| -> u64 {
        if p.event.unit == WeightUnit::Samples {
            w
        } else {
            1
        }
    };
    if p.samples.has_time() {
        let origin = p.samples.time_range().map_or(0, |r| r.0);
        return (0..p.samples.len())
            .map(|i| {
                let t = p.samples.time[i];
                let w = p.samples.weight[i];
                Row {
                    stack: StackId(new_id[p.samples.stack[i].0 as usize]),
                    weight: w as f64,
                    time: if t == NO_TIME {
                        -1.0
                    } else {
                        (t - origin) as f64
                    },
                    thread: thread_index(p.samples.thread[i]),
                    samples: samples_in(w) as f64,
                }
            })
            .collect();
    }
    let mut sums: HashMap<(u32, u32), (u64, u64)> = HashMap::new();
    let mut order = Vec::new();
    for i in 0..p.samples.len() {
        let key = (p.samples.stack[i].0, p.samples.thread[i].0);
        let e = sums.entry(key).or_insert_with(|| {
            order.push(key);
            (0, 0)
        });
        let w = p.samples.weight[i];
        e.0 = e.0.saturating_add(w);
        e.1 = e.1.saturating_add(samples_in(w));
    }
    order.sort_unstable_by_key(|k| (new_id[k.0 as usize], k.1));
    order
        .into_iter()
        .map(|k| {
            let (w, n) = sums[&k];
            Row {
                stack: StackId(new_id[k.0 as usize]),
                weight: w as f64,
                time: -1.0,
                thread: thread_index(ThreadId(k.1)),
                samples: n as f64,
            }
        })
        .collect()
}

/// Names as one lossy UTF-8 text with each name's length in UTF-16 units, so the viewer
/// decodes the text once and slices it instead of running a decoder per name.
fn names_text(p: &Profile, order: &[u32]) -> Result<(String, Vec<u32>), ViewerError> {
    let mut text = String::new();
    let mut lengths = Vec::with_capacity(order.len());
    let mut units: u64 = 0;
    for &x in order {
        let s = String::from_utf8_lossy(p.strings.get(kiln_model::StrId(x)));
        let n = s.encode_utf16().count();
        units += n as u64;
        if units > u64::from(u32::MAX) {
            return Err(ViewerError::TooLarge {
                what: "UTF-16 units of names",
                count: units as usize,
                max: u32::MAX as usize,
            });
        }
        lengths.push(n as u32);
        text.push_str(&s);
    }
    Ok((text, lengths))
}

/// Encodes `p` in the layout described in the module docs.
pub fn encode(p: &Profile) -> Result<Vec<u8>, ViewerError> {
    let n_strings = count("strings", p.strings.len())?;
    let n_frames = count("frames", p.frames.len())?;
    let n_stacks = count("stacks", p.stacks.len())?;
    let n_threads = count("threads", p.threads.len())?;
    let timed = p.samples.has_time();
    let threaded = p.samples.thread.iter().any(|&t| t != ThreadId::NONE);

    let names = name_order(p, n_strings, n_frames);
    let parents = p.stacks.raw_parents();
    let (new_id, old_of) = name_preorder(parents, p.stacks.raw_frames(), &names.frame_rank);
    let depths = byte_depths(parents);
    let rows = rows(p, &new_id);
    let n_samples = count("samples", rows.len())?;
    let (text, lengths) = names_text(p, &names.strings)?;
    let text_bytes = count("bytes of names", text.len())?;

    let origin = p.samples.time_range().map_or(0, |r| r.0);
    let mut b = Blob(Vec::with_capacity(64 + text.len() + rows.len() * 24));
    // Recordings are one sample per row: their count column would be all ones.
    let counted = rows.iter().any(|r| r.samples != 1.0);
    // Folded samples: each row's count is its weight; do not store it twice.
    let counts_are_weights = counted && rows.iter().all(|r| r.samples == r.weight);
    let small = rows.iter().all(|r| r.weight <= f64::from(u32::MAX));
    let flags = if timed { FLAG_TIME } else { 0 }
        | if threaded { FLAG_THREADS } else { 0 }
        | if counted { FLAG_COUNTS } else { 0 }
        | if counts_are_weights {
            FLAG_COUNTS_ARE_WEIGHTS
        } else {
            0
        }
        | if small { FLAG_U32_WEIGHTS } else { 0 }
        | if depths.is_some() { FLAG_DEPTHS } else { 0 }
        | FLAG_NAME_ORDER
        | FLAG_SORTED_FRAMES;
    b.u32s([
        MAGIC, VERSION, flags, n_strings, n_frames, n_stacks, n_samples, n_threads, text_bytes, 0,
    ]);
    b.f64s([origin as f64]);
    b.0.extend_from_slice(text.as_bytes());
    b.pad();
    b.u32s(lengths);
    let frame = |f: u32| p.frames.get(kiln_model::FrameId(f));
    b.u32s(deltas(
        names
            .frames
            .iter()
            .map(|&f| names.string_rank[frame(f).name.0 as usize]),
    ));
    b.0.extend(names.frames.iter().map(|&f| kind_code(frame(f).kind)));
    b.pad();
    let frames = p.stacks.raw_frames();
    if let Some(depth) = &depths {
        b.0.extend(old_of.iter().map(|&o| depth[o as usize] as u8));
        b.pad();
    } else {
        b.u32s(old_of.iter().enumerate().map(|(i, &o)| {
            let x = parents[o as usize];
            if x == u32::MAX {
                0
            } else {
                i as u32 - new_id[x as usize]
            }
        }));
    }
    b.u32s(
        old_of
            .iter()
            .map(|&o| names.frame_rank[frames[o as usize].0 as usize]),
    );
    b.u32s(deltas(rows.iter().map(|r| r.stack.0)));
    if small {
        b.u32s(rows.iter().map(|r| r.weight as u32));
    } else {
        b.f64s(rows.iter().map(|r| r.weight));
    }
    if counted && !counts_are_weights {
        b.f64s(rows.iter().map(|r| r.samples));
    }
    if timed {
        b.f64s(rows.iter().map(|r| r.time));
    }
    if threaded {
        b.i32s(rows.iter().map(|r| r.thread));
    }
    b.u32s(
        p.threads
            .iter()
            .map(|(_, t)| names.string_rank[t.name.0 as usize]),
    );
    b.i32s(
        p.threads
            .iter()
            .map(|(_, t)| t.tid.map_or(-1, |x| x.min(i32::MAX as u32) as i32)),
    );
    Ok(b.0)
}

/// Depth-first order of a stack table (parents before children), each node's children
/// by the rank of their frame's name: `(new id of each stack, old id of each new id)`.
fn name_preorder(
    parents: &[u32],
    frames: &[kiln_model::FrameId],
    rank: &[u32],
) -> (Vec<u32>, Vec<u32>) {
    let n = parents.len();
    // Children lists (roots under a virtual node n), sorted by name rank.
    let mut count = vec![0u32; n + 2];
    for &p in parents {
        let p = if p == u32::MAX { n } else { p as usize };
        count[p + 1] += 1;
    }
    for i in 0..=n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut children = vec![0u32; n];
    for (i, &p) in parents.iter().enumerate() {
        let p = if p == u32::MAX { n } else { p as usize };
        children[fill[p] as usize] = i as u32;
        fill[p] += 1;
    }
    let key = |c: &u32| rank[frames[*c as usize].0 as usize];
    for p in 0..=n {
        children[count[p] as usize..count[p + 1] as usize].sort_unstable_by_key(key);
    }
    let mut new_id = vec![0u32; n];
    let mut old_of = Vec::with_capacity(n);
    let mut stack: Vec<u32> = children[count[n] as usize..count[n + 1] as usize]
        .iter()
        .rev()
        .copied()
        .collect();
    while let Some(v) = stack.pop() {
        new_id[v as usize] = old_of.len() as u32;
        old_of.push(v);
        let (a, e) = (count[v as usize] as usize, count[v as usize + 1] as usize);
        stack.extend(children[a..e].iter().rev());
    }
    (new_id, old_of)
}

/// Differences from the previous value (wrapping), the first from 0.
fn deltas(it: impl Iterator<Item = u32>) -> impl Iterator<Item = u32> {
    let mut prev = 0u32;
    it.map(move |v| {
        let d = v.wrapping_sub(prev);
        prev = v;
        d
    })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding. Its alphabet has no `<`, so the embedded data can never
/// close the `<script>` element that holds it.
pub fn base64_into(data: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(64 * 1024);
    for chunk in data.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        buf.push(B64[(v >> 18) as usize & 63]);
        buf.push(B64[(v >> 12) as usize & 63]);
        buf.push(if n > 1 {
            B64[(v >> 6) as usize & 63]
        } else {
            b'='
        });
        buf.push(if n > 2 { B64[v as usize & 63] } else { b'=' });
        if buf.len() >= 64 * 1024 - 4 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut v = Vec::new();
            base64_into(i.as_bytes(), &mut v).unwrap();
            assert_eq!(String::from_utf8(v).unwrap(), o);
        }
    }

    #[test]
    fn stacks_are_renumbered_depth_first_in_name_order() {
        let rank = [2, 0, 1]; // frames c, a, b by name: a < b < c
        let f = |i| kiln_model::FrameId(i);
        // 0 c (root), 1 a under 0, 2 b (root), 3 b under 0, 4 a (root), 5 c under 1
        let parents = [u32::MAX, 0, u32::MAX, 0, u32::MAX, 1];
        let frames = [f(0), f(1), f(2), f(2), f(1), f(0)];
        let (new_id, old_of) = name_preorder(&parents, &frames, &rank);
        // a(4); b(2); c(0) > a(1) > c(5), c(0) > b(3)
        assert_eq!(old_of, [4, 2, 0, 1, 5, 3]);
        for (n, &o) in old_of.iter().enumerate() {
            assert_eq!(new_id[o as usize] as usize, n);
        }
    }

    #[test]
    fn layout_is_aligned_and_counts_match() {
        let mut p = Profile::default();
        let a = p.frame(b"main", FrameKind::User);
        let b = p.frame(b"\xffbad", FrameKind::Kernel);
        p.add_sample_path(&[a, b], 3, NO_TIME, ThreadId::NONE);
        p.add_sample_path(&[a, b], 2, NO_TIME, ThreadId::NONE);
        p.add_sample_path(&[a], 1, NO_TIME, ThreadId::NONE);
        let blob = encode(&p).unwrap();
        assert_eq!(blob.len() % 8, 0);
        let word = |i: usize| u32::from_le_bytes(blob[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(word(0), MAGIC);
        assert_eq!(
            word(2),
            FLAG_COUNTS
                | FLAG_NAME_ORDER
                | FLAG_COUNTS_ARE_WEIGHTS
                | FLAG_U32_WEIGHTS
                | FLAG_DEPTHS
                | FLAG_SORTED_FRAMES,
            "no times, no threads, rows of several samples"
        );
        assert_eq!(word(5), 2, "two stacks");
        assert_eq!(word(6), 2, "two aggregated rows");
        // "main" + U+FFFD + "bad": the invalid byte became one replacement character.
        assert_eq!(word(8) as usize, "main\u{fffd}bad".len());
    }
}
