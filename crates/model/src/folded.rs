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
    /// Lines are sorted by their bytes without building them all first: each line is kept
    /// as its path of frame ids (a few bytes per frame instead of the name), and compared
    /// name by name as the joined `a;b;c` strings would compare.
    pub fn write<W: Write + ?Sized>(
        &self,
        profile: &Profile,
        out: &mut W,
    ) -> Result<(), ModelError> {
        let weights = profile.self_weights();
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
                buf.extend_from_slice(profile.frame_name(*f));
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

/// The bytes of a path, lazily: names joined by `;`.
fn path_bytes<'a>(p: &'a Profile, path: &'a [FrameId]) -> impl Iterator<Item = u8> + 'a {
    path.iter()
        .enumerate()
        .flat_map(move |(k, f)| {
            let sep: &[u8] = if k > 0 { b";" } else { b"" };
            sep.iter().chain(p.frame_name(*f).iter())
        })
        .copied()
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
