//! Writing profiles as folded stacks (`a;b;c 42` lines).
use crate::{FrameId, ModelError, Profile, StackId};
use std::io::Write;

/// Options for writing a profile as folded stacks (`a;b;c 42` lines).
#[derive(Clone, Debug)]
pub struct FoldedOptions {
    /// Sort lines by stack bytes, as inferno and `stackcollapse-perf.pl` do. Default: true.
    /// When false, stacks come in order of first appearance.
    pub sort: bool,
}

impl Default for FoldedOptions {
    fn default() -> Self {
        FoldedOptions { sort: true }
    }
}

/// Writes profiles as folded stacks.
#[derive(Debug, Default)]
pub struct FoldedWriter {
    opts: FoldedOptions,
}

impl FoldedWriter {
    /// A writer with `opts`.
    pub fn new(opts: FoldedOptions) -> Self {
        FoldedWriter { opts }
    }

    /// Writes one line per distinct stack with a non-zero weight.
    ///
    /// Sorted lines come from a walk of the stack tree (see [`write_sorted`]): no line
    /// is built or compared as a string. A `;` inside a name (Go generics:
    /// `go.shape.struct { key string; values []string }`) would read back as a frame
    /// boundary: it is written as `:`, as stackcollapse-perf.pl and kiln's perf reader
    /// write it, and such profiles take a slower path that compares the joined strings.
    pub fn write<W: Write + ?Sized>(
        &self,
        profile: &Profile,
        out: &mut W,
    ) -> Result<(), ModelError> {
        let weights = profile.self_weights();
        let semicolons = profile
            .frames
            .iter()
            .any(|(_, f)| memchr::memchr(b';', profile.strings.get(f.name)).is_some());
        if self.opts.sort && !semicolons {
            return write_sorted(profile, &weights, out);
        }
        let mut frames: Vec<FrameId> = Vec::new();
        let mut lines: Vec<(u32, u32, u64)> = Vec::new();
        for (i, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let start = frames.len();
            profile.stacks.path_into(StackId(i as u32), &mut frames);
            lines.push((start as u32, (frames.len() - start) as u32, w));
        }
        let path = |&(s, l, _): &(u32, u32, u64)| &frames[s as usize..(s + l) as usize];
        if self.opts.sort {
            lines.sort_unstable_by(|a, b| compare_paths(profile, path(a), path(b)));
        }
        let mut num = itoa::Buffer::new();
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        for l in &lines {
            for (k, f) in path(l).iter().enumerate() {
                if k > 0 {
                    buf.push(b';');
                }
                let name = profile.frame_name(*f);
                if semicolons {
                    buf.extend(name.iter().map(|&c| if c == b';' { b':' } else { c }));
                } else {
                    buf.extend_from_slice(name);
                }
            }
            buf.push(b' ');
            buf.extend_from_slice(num.format(l.2).as_bytes());
            buf.push(b'\n');
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        Ok(())
    }
}

/// Sort ranks of every frame's name followed by what follows it in a line: index
/// `2*frame` is the rank of the name ending the line, `2*frame+1` of the name followed
/// by `;`. The end of a line sorts before any byte, as the shorter of two strings does.
fn name_ranks(p: &Profile) -> Vec<u32> {
    let n = p.frames.len();
    // (name, terminator): terminator 0 is the end of the line, else the byte + 1.
    let term = |k: u32| {
        if k & 1 == 0 {
            0u16
        } else {
            u16::from(b';') + 1
        }
    };
    let name = |k: u32| p.frame_name(FrameId(k >> 1));
    let cmp = |a: u32, b: u32| {
        let (x, y) = (name(a), name(b));
        let l = x.len().min(y.len());
        x[..l].cmp(&y[..l]).then_with(|| {
            let tx = x.get(l).map_or(term(a), |&c| u16::from(c) + 1);
            let ty = y.get(l).map_or(term(b), |&c| u16::from(c) + 1);
            tx.cmp(&ty).then(x.len().cmp(&y.len()))
        })
    };
    let mut keys: Vec<u32> = (0..2 * n as u32).collect();
    keys.sort_unstable_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    let mut rank = vec![0u32; 2 * n];
    let mut r = 0u32;
    for (i, &k) in keys.iter().enumerate() {
        if i > 0 && cmp(keys[i - 1], k) != std::cmp::Ordering::Equal {
            r += 1;
        }
        rank[k as usize] = r;
    }
    rank
}

/// The nodes with weight at or below them, as child lists: `kids[start[s]..start[s + 1]]`
/// are the live children of slot `s` (0: the roots; node `g`: `g + 1`).
struct LiveTree {
    /// Whether a node has a live child.
    kids_live: Vec<bool>,
    start: Vec<u32>,
    kids: Vec<u32>,
}

fn live_tree(parents: &[u32], weights: &[u64]) -> LiveTree {
    const NONE: u32 = u32::MAX;
    let n = parents.len();
    // Nodes with weight at or below them; children lists of those.
    let mut live: Vec<bool> = weights.iter().map(|&w| w > 0).collect();
    let mut kids_live = vec![false; n];
    for i in (0..n).rev() {
        let p = parents[i];
        if live[i] && p != NONE {
            live[p as usize] = true;
            kids_live[p as usize] = true;
        }
    }
    let mut start = vec![0u32; n + 2];
    for i in 0..n {
        if live[i] {
            let slot = if parents[i] == NONE {
                0
            } else {
                parents[i] as usize + 1
            };
            start[slot + 1] += 1;
        }
    }
    for i in 0..=n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut kids = vec![0u32; start[n + 1] as usize];
    for i in 0..n {
        if live[i] {
            let slot = if parents[i] == NONE {
                0
            } else {
                parents[i] as usize + 1
            };
            kids[fill[slot] as usize] = i as u32;
            fill[slot] += 1;
        }
    }
    LiveTree {
        kids_live,
        start,
        kids,
    }
}

/// Writes the lines of `profile` in the byte order of their text (as `sort` would put
/// them) by walking the stack tree: the children of a node are ordered by the rank of
/// their name followed by what comes next in the line (`;` for a child with callees,
/// the end of the line for one with self weight), so comparing two lines is comparing
/// integers at the first node where they part. Siblings with the same name (frames of
/// different kinds) have the same text: their subtrees are walked together as one.
fn write_sorted<W: Write + ?Sized>(
    profile: &Profile,
    weights: &[u64],
    out: &mut W,
) -> Result<(), ModelError> {
    let parents = profile.stacks.raw_parents();
    let frames = profile.stacks.raw_frames();
    let LiveTree {
        kids_live,
        start,
        kids,
    } = live_tree(parents, weights);
    let rank = name_ranks(profile);
    // Items of the groups being walked: (rank, node, is a line end). A level's items are
    // sorted, then consumed in order; descending into a group pushes its items on top.
    let mut items: Vec<(u32, u32, bool)> = Vec::new();
    // `slots`: the child-list slots of a group (0: the roots; node g: g + 1).
    let push_items = |items: &mut Vec<(u32, u32, bool)>, slots: &[u32]| {
        let first = items.len();
        for &slot in slots {
            let list = &kids[start[slot as usize] as usize..start[slot as usize + 1] as usize];
            for &c in list {
                let f = frames[c as usize].0 as usize;
                if weights[c as usize] > 0 {
                    items.push((rank[2 * f], c, true));
                }
                if kids_live[c as usize] {
                    items.push((rank[2 * f + 1], c, false));
                }
            }
        }
        items[first..].sort_unstable();
        first
    };
    // Per level: (its first item, its next item, prefix length before its name).
    let mut levels: Vec<(usize, usize, usize)> = Vec::new();
    let mut prefix: Vec<u8> = Vec::new();
    let mut group: Vec<u32> = Vec::new();
    let first = push_items(&mut items, &[0]);
    levels.push((first, first, 0));
    let mut num = itoa::Buffer::new();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    while let Some(top) = levels.len().checked_sub(1) {
        let (lo, mut next, plen) = levels[top];
        if next >= items.len() {
            levels.pop();
            items.truncate(lo);
            prefix.truncate(plen);
            continue;
        }
        let (r, c, end) = items[next];
        let name = profile.frame_name(frames[c as usize]);
        if end {
            levels[top].1 = next + 1;
            buf.extend_from_slice(&prefix);
            // By depth, not by the prefix's length: a frame may have an empty name.
            if top > 0 {
                buf.push(b';');
            }
            buf.extend_from_slice(name);
            buf.push(b' ');
            buf.extend_from_slice(num.format(weights[c as usize]).as_bytes());
            buf.push(b'\n');
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
            continue;
        }
        // Descend into every caller item of this rank at once (same text).
        group.clear();
        while next < items.len() && items[next].0 == r && !items[next].2 {
            group.push(items[next].1 + 1);
            next += 1;
        }
        levels[top].1 = next;
        let before = prefix.len();
        if top > 0 {
            prefix.push(b';');
        }
        prefix.extend_from_slice(name);
        let first = push_items(&mut items, &group);
        levels.push((first, first, before));
    }
    out.write_all(&buf)?;
    Ok(())
}

/// The bytes of a path as written, lazily: names (a `;` in one as `:`) joined by `;`.
fn path_bytes<'a>(p: &'a Profile, path: &'a [FrameId]) -> impl Iterator<Item = u8> + 'a {
    path.iter().enumerate().flat_map(move |(k, f)| {
        let sep: &[u8] = if k > 0 { b";" } else { b"" };
        sep.iter().copied().chain(
            p.frame_name(*f)
                .iter()
                .map(|&c| if c == b';' { b':' } else { c }),
        )
    })
}

/// Compares two paths as their joined `a;b;c` byte strings would compare.
fn compare_paths(p: &Profile, a: &[FrameId], b: &[FrameId]) -> std::cmp::Ordering {
    // Skip the common frames quickly, then compare the rest byte by byte.
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return a.len().cmp(&b.len());
    }
    let (ra, rb) = (&a[common..], &b[common..]);
    path_bytes(p, ra).cmp(path_bytes(p, rb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FrameKind, ThreadId, NO_TIME};
    use proptest::prelude::*;

    /// The lines as `sort` orders them: joined stacks compared as bytes, identical
    /// stacks in the order of their nodes.
    fn reference(p: &Profile) -> String {
        let w = p.self_weights();
        let mut lines: Vec<(Vec<u8>, u64)> = Vec::new();
        for (i, &x) in w.iter().enumerate() {
            if x == 0 {
                continue;
            }
            let path = p.stacks.path(StackId(i as u32));
            let mut s = Vec::new();
            for (k, f) in path.iter().enumerate() {
                if k > 0 {
                    s.push(b';');
                }
                s.extend(
                    p.frame_name(*f)
                        .iter()
                        .map(|&c| if c == b';' { b':' } else { c }),
                );
            }
            lines.push((s, x));
        }
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = String::new();
        for (s, x) in lines {
            out.push_str(&format!("{} {x}\n", String::from_utf8(s).unwrap()));
        }
        out
    }

    fn written(p: &Profile) -> String {
        let mut v = Vec::new();
        FoldedWriter::new(FoldedOptions::default())
            .write(p, &mut v)
            .unwrap();
        String::from_utf8(v).unwrap()
    }

    proptest! {
        /// Names that are prefixes of each other (`a`, `a1`, `ab`), bytes below and above
        /// `;`, the same name as frames of different kinds, empty names, stacks that are
        /// prefixes of others: the tree walk orders and writes lines exactly as sorting
        /// their text does.
        #[test]
        fn sorted_like_the_text(
            stacks in prop::collection::vec(
                (prop::collection::vec((0usize..8, 0usize..2), 1..6), 1u64..50),
                1..40,
            )
        ) {
            const NAMES: [&str; 8] = ["a", "a1", "ab", "a!", "b", "a~", "0", ""];
            let mut p = Profile::default();
            for (path, w) in &stacks {
                let frames: Vec<_> = path
                    .iter()
                    .map(|&(n, k)| {
                        let kind = if k == 0 { FrameKind::User } else { FrameKind::Kernel };
                        p.frame(NAMES[n].as_bytes(), kind)
                    })
                    .collect();
                p.add_sample_path(&frames, *w, NO_TIME, ThreadId::NONE);
            }
            prop_assert_eq!(written(&p), reference(&p));
        }
    }

    #[test]
    fn semicolons_in_names_are_written_as_colons_and_sort_as_written() {
        let mut p = Profile::default();
        for (path, w) in [
            (&["a;b", "c"][..], 1),
            (&["a", "b"][..], 2),
            (&["a"][..], 3),
        ] {
            let f: Vec<_> = path
                .iter()
                .map(|n| p.frame(n.as_bytes(), FrameKind::Unknown))
                .collect();
            p.add_sample_path(&f, w, NO_TIME, ThreadId::NONE);
        }
        assert_eq!(written(&p), reference(&p));
        assert_eq!(written(&p), "a 3\na:b;c 1\na;b 2\n");
        let mut unsorted = Vec::new();
        FoldedWriter::new(FoldedOptions { sort: false })
            .write(&p, &mut unsorted)
            .unwrap();
        assert_eq!(unsorted, b"a:b;c 1\na 3\na;b 2\n");
    }
}
