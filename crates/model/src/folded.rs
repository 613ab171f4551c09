use crate::{ModelError, Profile, StackId};
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
    pub fn write<W: Write + ?Sized>(
        &self,
        profile: &Profile,
        out: &mut W,
    ) -> Result<(), ModelError> {
        let weights = profile.self_weights();
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        let mut lines: Vec<(u32, u32, u64)> = Vec::new();
        let mut path: Vec<StackId> = Vec::new();
        for (i, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let start = buf.len();
            path.clear();
            let mut node = Some(StackId(i as u32));
            while let Some(n) = node {
                path.push(n);
                node = profile.stacks.parent(n);
            }
            for (k, n) in path.iter().rev().enumerate() {
                if k > 0 {
                    buf.push(b';');
                }
                buf.extend_from_slice(profile.node_name(*n));
            }
            lines.push((start as u32, (buf.len() - start) as u32, w));
            if buf.len() > u32::MAX as usize / 2 {
                // Flush very large outputs unsorted rather than overflow offsets.
                self.flush(&buf, &mut lines, out)?;
                buf.clear();
            }
        }
        self.flush(&buf, &mut lines, out)
    }

    fn flush<W: Write + ?Sized>(
        &self,
        buf: &[u8],
        lines: &mut Vec<(u32, u32, u64)>,
        out: &mut W,
    ) -> Result<(), ModelError> {
        let key = |&(s, l, _): &(u32, u32, u64)| &buf[s as usize..(s + l) as usize];
        if self.opts.sort {
            lines.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        }
        let mut num = itoa::Buffer::new();
        for l in lines.iter() {
            out.write_all(key(l))?;
            out.write_all(b" ")?;
            out.write_all(num.format(l.2).as_bytes())?;
            out.write_all(b"\n")?;
        }
        lines.clear();
        Ok(())
    }
}
