//! Reading text inputs in blocks cut at record boundaries, and parsing the blocks in
//! parallel while the next ones are read: `perf script` text (cut between samples) and
//! folded stacks (cut between lines) share this.
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

/// Size of the blocks text is read and parsed in. Small enough that the few in flight
/// cost little memory (inferno streams too), large enough that handing one to a parser
/// thread is rare. Parser threads keep their caches from block to block.
pub(crate) const BLOCK: usize = 256 << 10;

/// A buffer of input: `buf[..len]` is the text; the rest is spare room, initialised once,
/// that the next read reuses (buffers go back and forth between the reader and the parser
/// threads, so the input is read without allocating or zeroing).
#[derive(Default)]
pub(crate) struct Block {
    buf: Vec<u8>,
    len: usize,
}

impl Block {
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Reads an input in blocks that end where `cut` says a record may end.
pub(crate) struct BlockReader<'r> {
    reader: &'r mut dyn Read,
    carry: Vec<u8>,
    eof: bool,
    block: usize,
    /// Where a block may end: the length of its complete records, `None` if it holds no
    /// complete record (the block then grows until it does).
    cut: fn(&[u8]) -> Option<usize>,
}

impl<'r> BlockReader<'r> {
    pub(crate) fn new(
        reader: &'r mut dyn Read,
        block: usize,
        cut: fn(&[u8]) -> Option<usize>,
    ) -> Self {
        BlockReader {
            reader,
            carry: Vec::new(),
            eof: false,
            block: block.max(1),
            cut,
        }
    }

    /// The next block, read into `b` (whose contents are discarded); `None` at the end.
    pub(crate) fn next_block(&mut self, mut b: Block) -> std::io::Result<Option<Block>> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut target = self.block;
        if b.buf.len() < self.carry.len() {
            b.buf.resize(self.carry.len(), 0);
        }
        b.buf[..self.carry.len()].copy_from_slice(&self.carry);
        b.len = self.carry.len();
        self.carry.clear();
        loop {
            // Fill to at least one block (more when a record is longer than that).
            while !self.eof && b.len < target {
                if b.buf.len() < target {
                    b.buf.resize(target, 0);
                }
                let n = loop {
                    match self.reader.read(&mut b.buf[b.len..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                };
                if n == 0 {
                    self.eof = true;
                }
                b.len += n;
            }
            if self.eof {
                return Ok((b.len > 0).then_some(b));
            }
            // Cut after the last complete record; a record longer than the block makes the
            // block grow until it ends.
            if let Some(cut) = (self.cut)(b.data()).filter(|&c| c > 0) {
                self.carry.extend_from_slice(&b.buf[cut..b.len]);
                b.len = cut;
                return Ok(Some(b));
            }
            // Doubling: a record of 100 MB is searched for its end a few dozen times,
            // not once per block-sized step (hundreds of passes over a growing buffer).
            target = b.len + self.block.max(b.len);
        }
    }
}

/// Parses `first` and the blocks after it with `threads` workers (made by `make`), each
/// block given to `parse` with its index in the input; `parse` returns false to stop (an
/// error it keeps), which stops the reading. Returns the workers and a read error.
pub(crate) fn drive<W: Send>(
    blocks: &mut BlockReader<'_>,
    first: Block,
    threads: usize,
    make: &(dyn Fn() -> W + Sync),
    parse: &(dyn Fn(&mut W, usize, &[u8]) -> bool + Sync),
) -> (Vec<W>, Option<std::io::Error>) {
    let mut read_error = None;
    if threads <= 1 {
        // One buffer, parsed, then read into again.
        let mut w = make();
        let mut next = Some(first);
        let mut idx = 0;
        while let Some(b) = next.take() {
            if !parse(&mut w, idx, b.data()) {
                break;
            }
            idx += 1;
            match blocks.next_block(b) {
                Ok(n) => next = n,
                Err(e) => read_error = Some(e),
            }
        }
        return (vec![w], read_error);
    }
    let failed = AtomicBool::new(false);
    let workers = std::thread::scope(|s| {
        let (job_tx, job_rx) = crossbeam_channel::bounded::<(usize, Block)>(1);
        let (free_tx, free_rx) = crossbeam_channel::unbounded::<Block>();
        let failed = &failed;
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let job_rx = job_rx.clone();
                let free_tx = free_tx.clone();
                s.spawn(move || {
                    let mut w = make();
                    for (idx, b) in job_rx {
                        let ok = parse(&mut w, idx, b.data());
                        let _ = free_tx.send(b);
                        if !ok {
                            failed.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                    w
                })
            })
            .collect();
        drop(job_rx);
        drop(free_tx);
        let mut block = Some(first);
        let mut idx = 0;
        while let Some(b) = block {
            if failed.load(Ordering::Relaxed) || job_tx.send((idx, b)).is_err() {
                break;
            }
            idx += 1;
            let buf = free_rx.try_recv().unwrap_or_default();
            block = match blocks.next_block(buf) {
                Ok(b) => b,
                Err(e) => {
                    read_error = Some(e);
                    None
                }
            };
        }
        drop(job_tx);
        handles
            .into_iter()
            .map(|h| h.join().expect("collapse thread panicked"))
            .collect()
    });
    (workers, read_error)
}

/// Where the workers' blocks fall in the input, to join what they read in input order
/// with line numbers relative to the whole input.
pub(crate) struct InputOrder {
    /// (block index in the input, worker, position in the worker's list), in input order.
    pub(crate) blocks: Vec<(usize, usize, usize)>,
    /// Lines before each block of `blocks`, then the input's total.
    bases: Vec<u64>,
}

impl InputOrder {
    /// From each worker's blocks as (index in the input, lines), in the worker's order.
    pub(crate) fn new<W, B>(workers: W) -> Self
    where
        W: IntoIterator<Item = B>,
        B: IntoIterator<Item = (usize, u64)>,
    {
        let mut all: Vec<(usize, usize, usize, u64)> = Vec::new();
        for (wi, w) in workers.into_iter().enumerate() {
            for (bi, (idx, lines)) in w.into_iter().enumerate() {
                all.push((idx, wi, bi, lines));
            }
        }
        all.sort_unstable_by_key(|b| b.0);
        let mut bases = Vec::with_capacity(all.len() + 1);
        let mut sum = 0u64;
        for b in &all {
            bases.push(sum);
            sum += b.3;
        }
        bases.push(sum);
        InputOrder {
            blocks: all.into_iter().map(|(i, w, b, _)| (i, w, b)).collect(),
            bases,
        }
    }

    /// Lines of the input before block `idx`.
    pub(crate) fn base(&self, idx: usize) -> u64 {
        self.bases[self.blocks.partition_point(|b| b.0 < idx)]
    }

    /// A worker's error with its line made relative to the whole input (it was relative
    /// to its block `idx`).
    pub(crate) fn in_input(&self, idx: usize, e: crate::CollapseError) -> crate::CollapseError {
        use crate::CollapseError;
        let base = self.base(idx);
        match e {
            CollapseError::Malformed(mut w) => {
                w.line += base;
                CollapseError::Malformed(w)
            }
            CollapseError::WeightOverflow(mut w) => {
                w.line += base;
                CollapseError::WeightOverflow(w)
            }
            CollapseError::TooManyStacks(mut w) => {
                w.line += base;
                CollapseError::TooManyStacks(w)
            }
            e => e,
        }
    }

    /// Adds a block's warnings to `out` (at most `max` in all), lines relative to the
    /// whole input.
    pub(crate) fn warnings(
        &self,
        idx: usize,
        block: Vec<crate::Warning>,
        out: &mut Vec<crate::Warning>,
        max: usize,
    ) {
        let base = self.base(idx);
        for mut w in block {
            if out.len() >= max {
                break;
            }
            w.line += base;
            out.push(w);
        }
    }
}
