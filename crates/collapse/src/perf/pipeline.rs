//! The parallel pipeline: the input cut into blocks at sample boundaries, blocks parsed
//! by several threads (each with its own [`Folder`]), and the results joined in input
//! order.
use super::fold::Folder;
use super::tokenize::first_event;
use super::tree::{into_stack_table, NONE};
use super::{PerfWeight, ReadError};
use crate::blocks::{Block, BlockReader, BLOCK};
use crate::{CollapseError, Collapsed, Options, Stats, Warning, Warnings};
use kiln_model::{FrameId, Profile, StackId, ThreadId, WeightUnit, NO_TIME};
use std::io::Read;

/// Where a block may end: after the last newline that starts a sample header (a line
/// that starts with neither a tab nor a newline). `None` if the buffer holds no such line.
fn block_cut(buf: &[u8]) -> Option<usize> {
    let mut end = buf.len();
    while let Some(p) = memchr::memrchr(b'\n', &buf[..end]) {
        if p + 1 < buf.len() && buf[p + 1] != b'\t' && buf[p + 1] != b'\n' {
            return Some(p + 1);
        }
        end = p;
    }
    None
}

/// What parsing one block gave, apart from the samples (which stay in the worker's
/// profile, in `samples`).
struct BlockInfo {
    idx: usize,
    lines: u64,
    stats: Stats,
    warnings: Vec<Warning>,
    samples: std::ops::Range<usize>,
}

/// A parser thread's work: its profile and tree (with caches kept across blocks, so each
/// distinct frame is tidied and interned once per thread, not once per block), what each
/// of its blocks gave, and the first error it met.
struct WorkerOut<'a> {
    folder: Folder<'a>,
    blocks: Vec<BlockInfo>,
    error: Option<(usize, CollapseError)>,
}

/// Parses one block into a worker's state (false: the block had an error, kept).
fn parse_block(
    out: &mut WorkerOut<'_>,
    name: &str,
    opts: &Options,
    idx: usize,
    data: &[u8],
) -> bool {
    let mut w = Warnings::new(name, opts);
    let start = out.folder.profile.samples.len();
    match out.folder.run(data, &mut w) {
        Ok(lines) => {
            let mut stats = std::mem::take(&mut out.folder.stats);
            stats.warnings = w.count;
            let end = out.folder.profile.samples.len();
            out.blocks.push(BlockInfo {
                idx,
                lines,
                stats,
                warnings: w.list,
                samples: start..end,
            });
            true
        }
        Err(e) => {
            out.error = Some((idx, e));
            false
        }
    }
}

/// Collapses `perf script` text from a reader, in blocks: memory stays bounded by a few
/// blocks whatever the size of the input, and with `threads > 1` blocks are parsed in
/// parallel while the next ones are read. Samples are joined in input order, so the
/// profile is the same whatever the thread count.
pub fn collapse_reader(
    name: &str,
    reader: &mut dyn Read,
    opts: &Options,
) -> Result<Collapsed, ReadError> {
    let popts = &opts.perf;
    let threads = match popts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut blocks = BlockReader::new(
        reader,
        if popts.block_bytes == 0 {
            BLOCK
        } else {
            popts.block_bytes
        },
        block_cut,
    );
    let Some(first) = blocks.next_block(Block::default())? else {
        return Ok(Collapsed::default());
    };
    let filter: Option<Vec<u8>> = match &popts.event_filter {
        Some(f) => Some(f.as_bytes().to_vec()),
        None => first_event(first.data()).map(<[u8]>::to_vec),
    };
    let filter = filter.as_deref();
    let make = || WorkerOut {
        folder: Folder::new(&opts.perf, filter),
        blocks: Vec::new(),
        error: None,
    };
    let parse =
        |out: &mut WorkerOut<'_>, idx: usize, data: &[u8]| parse_block(out, name, opts, idx, data);
    let (outs, read_error) = crate::blocks::drive(&mut blocks, first, threads, &make, &parse);
    if let Some(e) = read_error {
        return Err(ReadError::Io(e));
    }
    assemble(outs, opts, filter, name).map_err(ReadError::from)
}

/// Joins the workers' results: line numbers fixed up in input order, trees merged,
/// samples in input order (or, aggregated, one row per stack).
fn assemble(
    mut outs: Vec<WorkerOut<'_>>,
    opts: &Options,
    filter: Option<&[u8]>,
    name: &str,
) -> Result<Collapsed, CollapseError> {
    let input = crate::blocks::InputOrder::new(outs.iter().map(|o| {
        o.blocks
            .iter()
            .map(|b| (b.idx, b.lines))
            .collect::<Vec<_>>()
    }));
    let first_error = outs
        .iter_mut()
        .filter_map(|o| o.error.take())
        .min_by_key(|(i, _)| *i);
    if let Some((idx, e)) = first_error {
        return Err(input.in_input(idx, e));
    }
    let mut out = Collapsed::default();
    let ranges = join_block_stats(&mut outs, &input, opts, &mut out);
    let with_period = check_total_weight(&outs, name)?;
    let mut folders = outs.into_iter().map(|o| o.folder);
    let Some(mut main) = folders.next() else {
        return Ok(out);
    };
    let aggregate = opts.perf.aggregate;
    let (maps, others) = merge_into_first(&mut main, folders, aggregate, name)?;
    let Folder {
        tree,
        agg,
        mut profile,
        ..
    } = main;
    profile.stacks = into_stack_table(tree);
    if aggregate {
        for (i, &w) in agg.iter().enumerate() {
            if w > 0 {
                profile
                    .samples
                    .push(StackId(i as u32), w, NO_TIME, ThreadId::NONE);
            }
        }
    } else if !others.is_empty() {
        let mine = std::mem::take(&mut profile.samples);
        profile.samples = samples_in_input_order(&mine, &others, &maps, ranges);
    }
    out.stats.event = filter.map(|f| String::from_utf8_lossy(f).into_owned());
    if let Some(e) = &out.stats.event {
        profile.event.name.clone_from(e);
    }
    profile.event.unit = match opts.perf.weight {
        PerfWeight::Period if with_period > 0 => WeightUnit::of_period(&profile.event.name),
        _ => WeightUnit::Samples,
    };
    out.profile = profile;
    Ok(out)
}

/// Where a worker's nodes and threads landed in the first worker's tables (empty for the
/// first worker, and when aggregating: aggregated weights are merged as they are mapped).
type WorkerMap = (Vec<u32>, Vec<ThreadId>);

/// Adds every block's counts and warnings to `out` in input order (warnings' lines
/// relative to the whole input); returns, in input order, each block's worker and the
/// range of its samples in that worker's table.
fn join_block_stats(
    outs: &mut [WorkerOut<'_>],
    input: &crate::blocks::InputOrder,
    opts: &Options,
    out: &mut Collapsed,
) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut ranges = Vec::with_capacity(input.blocks.len());
    for &(idx, wi, bi) in &input.blocks {
        let b = &mut outs[wi].blocks[bi];
        out.stats.add(&b.stats);
        input.warnings(
            idx,
            std::mem::take(&mut b.warnings),
            &mut out.warnings,
            opts.max_warnings,
        );
        ranges.push((wi, b.samples.clone()));
    }
    ranges
}

/// Checks that the weights of all the workers' samples add up to a 64-bit total; returns
/// how many samples gave a period.
fn check_total_weight(outs: &[WorkerOut<'_>], name: &str) -> Result<u64, CollapseError> {
    let mut total = 0u64;
    let mut with_period = 0u64;
    for o in outs {
        total = total.checked_add(o.folder.total).ok_or_else(|| {
            CollapseError::WeightOverflow(Warning::new(
                name,
                0,
                "the weights of the samples add up to more than 2^64-1",
                b"",
            ))
        })?;
        with_period += o.folder.with_period;
    }
    Ok(with_period)
}

/// Merges the other workers' frames, threads and call trees into `main`'s (and their
/// aggregated weights, when aggregating); returns each worker's [`WorkerMap`] and the
/// other workers' profiles, whose samples are still to be mapped.
fn merge_into_first<'a>(
    main: &mut Folder<'a>,
    folders: impl Iterator<Item = Folder<'a>>,
    aggregate: bool,
    name: &str,
) -> Result<(Vec<WorkerMap>, Vec<Profile>), CollapseError> {
    if aggregate {
        main.agg.resize(main.tree.nodes.len(), 0);
    }
    let mut maps: Vec<WorkerMap> = vec![(Vec::new(), Vec::new())];
    let mut others: Vec<Profile> = Vec::new();
    for f in folders {
        let fmap: Vec<FrameId> = f
            .profile
            .frames
            .iter()
            .map(|(_, fr)| main.profile.frame(f.profile.strings.get(fr.name), fr.kind))
            .collect();
        let tmap: Vec<ThreadId> = f
            .profile
            .threads
            .iter()
            .map(|(_, t)| {
                main.profile
                    .thread(t.pid, t.tid, f.profile.strings.get(t.name))
            })
            .collect();
        let mut nmap: Vec<u32> = Vec::with_capacity(f.tree.nodes.len());
        for &(parent, frame) in &f.tree.nodes {
            let parent = if parent == NONE {
                NONE
            } else {
                nmap[parent as usize]
            };
            nmap.push(main.tree.intern(parent, fmap[frame as usize]));
        }
        if main.tree.full {
            return Err(CollapseError::TooManyStacks(Warning::new(
                name,
                0,
                "more distinct stack prefixes than kiln can index (2^32-1)",
                b"",
            )));
        }
        if aggregate {
            main.agg.resize(main.tree.nodes.len(), 0);
            for (i, &w) in f.agg.iter().enumerate() {
                if w > 0 {
                    // Cannot overflow: the total did not.
                    main.agg[nmap[i] as usize] += w;
                }
            }
            maps.push((Vec::new(), Vec::new()));
        } else {
            maps.push((nmap, tmap));
        }
        others.push(f.profile);
    }
    Ok((maps, others))
}

/// Every worker's samples in input order: the first worker's (`mine`) as they are, the
/// others' with their stacks and threads mapped into the first one's tables.
fn samples_in_input_order(
    mine: &kiln_model::SampleTable,
    others: &[Profile],
    maps: &[WorkerMap],
    ranges: Vec<(usize, std::ops::Range<usize>)>,
) -> kiln_model::SampleTable {
    let mut samples = kiln_model::SampleTable::default();
    for (wi, r) in ranges {
        let src = if wi == 0 {
            mine
        } else {
            &others[wi - 1].samples
        };
        let (nmap, tmap) = &maps[wi];
        for i in r {
            let (stack, thread) = if wi == 0 {
                (src.stack[i], src.thread[i])
            } else {
                let th = src.thread[i];
                (
                    StackId(nmap[src.stack[i].0 as usize]),
                    if th == ThreadId::NONE {
                        th
                    } else {
                        tmap[th.0 as usize]
                    },
                )
            };
            samples.push(stack, src.weight[i], src.time[i], thread);
        }
    }
    samples
}
