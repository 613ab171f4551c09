//! Where each rectangle goes.
//!
//! The profile's stack table already is the merged call tree a flame graph draws (see
//! `kiln_model::StackTable`), so the classic layout never sorts or merges stack lines as
//! flamegraph.pl and inferno do: it orders each node's children once and walks the tree.
//! Narrow subtrees are pruned while building the child lists, so with the default minimum
//! width most of a large profile's nodes are never sorted or visited.
use kiln_model::{FrameId, Profile, StackId};
use std::cmp::Ordering;

const NONE: u32 = u32::MAX;

/// Per-node weights of the profile being drawn.
pub(crate) struct Weights {
    /// Total weight (self plus descendants): the rectangle's width.
    pub total: Vec<u64>,
    /// Whether the node has a child with weight (in folded lines its name is followed by
    /// `;`). A node's self weight is its total minus its children's, computed for the
    /// drawn nodes only: a self-weight array for every node of a large profile cost as
    /// much memory (and page faults) as the totals.
    pub has_kids: Vec<bool>,
    /// For differential graphs: the node's self weight after minus before.
    pub delta: Option<Vec<i64>>,
    /// Largest |delta| (at least 1).
    pub max_delta: u64,
}

impl Weights {
    pub(crate) fn of(p: &Profile) -> Weights {
        let mut total = vec![0u64; p.stacks.len()];
        for (s, &x) in p.samples.stack.iter().zip(&p.samples.weight) {
            let slot = &mut total[s.0 as usize];
            *slot = slot.saturating_add(x);
        }
        let has_kids = accumulate(p, &mut total);
        Weights {
            total,
            has_kids,
            delta: None,
            max_delta: 1,
        }
    }
}

/// Turns self weights into totals (a parent always comes before its children), returning
/// which nodes have a child with weight.
fn accumulate(p: &Profile, total: &mut [u64]) -> Vec<bool> {
    let parents = p.stacks.raw_parents();
    let mut has_kids = vec![false; total.len()];
    for i in (0..total.len()).rev() {
        let par = parents[i];
        if par != NONE && total[i] > 0 {
            total[par as usize] = total[par as usize].saturating_add(total[i]);
            has_kids[par as usize] = true;
        }
    }
    has_kids
}

/// How siblings are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// By name, as flamegraph.pl's sorted lines order them; self weight to the left.
    Name,
    /// Heaviest first; self weight to the right.
    Heavy,
}

/// A rectangle of a flame chart.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rect {
    pub node: u32,
    pub x: u64,
    pub w: u64,
}

/// A layout ready to be walked.
pub(crate) enum Plan {
    /// A merged call tree.
    Tree {
        order: Order,
        /// Child lists of the drawn nodes (CSR over the drawn nodes only: with the
        /// default minimum width a few thousand of millions): drawn node `k` (its number
        /// in `drawn_id`) has children `kids[start[k]..start[k + 1]]`.
        start: Vec<u32>,
        kids: Vec<u32>,
        roots: Vec<u32>,
        /// Each node's number among the drawn nodes, or `NONE` if it is not drawn.
        drawn_id: Vec<u32>,
    },
    /// A flame chart: rectangles in sample order.
    Chart(Vec<Rect>),
}

/// Summary of a plan.
pub(crate) struct PlanInfo {
    /// Deepest drawn level ("all" is level 0).
    pub depth_max: u32,
    /// Rectangles drawn, "all" included.
    pub drawn: u64,
    /// Nodes (or chart rectangles) too narrow to draw.
    pub pruned: u64,
}

/// Compares `a` followed by `ta` with `b` followed by `tb`.
fn cmp_term(a: &[u8], ta: u8, b: &[u8], tb: u8) -> Ordering {
    let l = a.len().min(b.len());
    a[..l].cmp(&b[..l]).then_with(|| {
        let x = a.get(l).copied().unwrap_or(ta);
        let y = b.get(l).copied().unwrap_or(tb);
        x.cmp(&y).then(a.len().cmp(&b.len()))
    })
}

/// Sort ranks of the names of the frames of `nodes` as flamegraph.pl's line sort orders
/// siblings: a frame with callees is followed by `;` in its lines, a leaf by a space.
/// Index `2*frame` is the rank as a leaf, `2*frame+1` as a caller. Only the frames of
/// the nodes given are ranked (with the default minimum width, those of the children
/// of drawn nodes: a fraction of a large profile's frames); the others' ranks are 0.
fn name_ranks(p: &Profile, nodes: impl Iterator<Item = u32>) -> Vec<u32> {
    let n = p.frames.len();
    let frames = p.stacks.raw_frames();
    let mut needed = vec![false; n];
    let mut keys: Vec<u32> = Vec::new();
    for c in nodes {
        let f = frames[c as usize].0;
        if !needed[f as usize] {
            needed[f as usize] = true;
            keys.push(2 * f);
            keys.push(2 * f + 1);
        }
    }
    drop(needed);
    let term = |k: u32| if k & 1 == 0 { b' ' } else { b';' };
    let name = |k: u32| p.frame_name(kiln_model::FrameId(k >> 1));
    keys.sort_unstable_by(|&a, &b| cmp_term(name(a), term(a), name(b), term(b)).then(a.cmp(&b)));
    let mut rank = vec![0u32; 2 * n];
    let mut r = 0u32;
    for (i, &k) in keys.iter().enumerate() {
        if i > 0
            && cmp_term(name(keys[i - 1]), term(keys[i - 1]), name(k), term(k)) != Ordering::Equal
        {
            r += 1;
        }
        rank[k as usize] = r;
    }
    rank
}

impl Plan {
    /// Plans the merged call tree, dropping nodes narrower than `min_w` weight units.
    pub(crate) fn tree(p: &Profile, w: &Weights, order: Order, min_w: f64) -> (Plan, PlanInfo) {
        let parents = p.stacks.raw_parents();
        let mut drawn_id: Vec<u32> = Vec::with_capacity(w.total.len());
        let mut kept_count = 0u32;
        for &t in &w.total {
            if t > 0 && (t as f64) >= min_w {
                drawn_id.push(kept_count);
                kept_count += 1;
            } else {
                drawn_id.push(NONE);
            }
        }
        // Child lists of drawn nodes (the children may be pruned themselves, but still
        // take their place on the x axis).
        let mut start = vec![0u32; kept_count as usize + 1];
        let mut roots = Vec::new();
        let mut depth_max = 0u32;
        for (i, &par) in parents.iter().enumerate() {
            if par == NONE {
                roots.push(i as u32);
            } else if drawn_id[par as usize] != NONE {
                start[drawn_id[par as usize] as usize + 1] += 1;
            }
            if drawn_id[i] != NONE {
                depth_max = depth_max.max(p.stacks.depth(StackId(i as u32)) + 1);
            }
        }
        for k in 0..kept_count as usize {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut kids = vec![0u32; start[kept_count as usize] as usize];
        for (i, &par) in parents.iter().enumerate() {
            if par != NONE && drawn_id[par as usize] != NONE {
                let slot = &mut fill[drawn_id[par as usize] as usize];
                kids[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        drop(fill);
        let drawn = 1 + u64::from(kept_count);
        let frames = p.stacks.raw_frames();
        match order {
            Order::Name => {
                let rank = name_ranks(p, roots.iter().chain(&kids).copied());
                let has_kids = |c: u32| w.has_kids[c as usize];
                let key = |c: u32| {
                    let r = rank[2 * frames[c as usize].0 as usize + usize::from(has_kids(c))];
                    (u64::from(r) << 32) | u64::from(c)
                };
                roots.sort_unstable_by_key(|&c| key(c));
                for k in 0..kept_count as usize {
                    let (a, b) = (start[k] as usize, start[k + 1] as usize);
                    if b - a > 1 {
                        kids[a..b].sort_unstable_by_key(|&c| key(c));
                    }
                }
            }
            Order::Heavy => {
                let rank = name_ranks(p, roots.iter().chain(&kids).copied());
                let key = |c: u32| {
                    (
                        std::cmp::Reverse(w.total[c as usize]),
                        rank[2 * frames[c as usize].0 as usize + 1],
                        c,
                    )
                };
                roots.sort_unstable_by_key(|&c| key(c));
                for k in 0..kept_count as usize {
                    let (a, b) = (start[k] as usize, start[k + 1] as usize);
                    if b - a > 1 {
                        kids[a..b].sort_unstable_by_key(|&c| key(c));
                    }
                }
            }
        }
        let pruned = (drawn_id.len() - kept_count as usize) as u64;
        (
            Plan::Tree {
                order,
                start,
                kids,
                roots,
                drawn_id,
            },
            PlanInfo {
                depth_max,
                drawn,
                pruned,
            },
        )
    }

    /// Plans a flame chart: samples in time order (input order when times are unknown),
    /// consecutive samples merged where their stacks share a prefix.
    pub(crate) fn chart(p: &Profile, min_w: f64) -> (Plan, PlanInfo) {
        let s = &p.samples;
        let mut idx: Vec<u32> = (0..s.len() as u32).collect();
        let sorted = s.time.windows(2).all(|t| t[0] <= t[1]);
        if !sorted && s.time.iter().all(|&t| t != kiln_model::NO_TIME) {
            idx.sort_by_key(|&i| s.time[i as usize]);
        }
        let mut rects = Vec::new();
        let mut open: Vec<(u32, u64)> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        let mut time = 0u64;
        let mut prev = NONE;
        let depth = |v: u32| p.stacks.depth(StackId(v));
        let parent = |v: u32| p.stacks.parent(StackId(v)).map_or(NONE, |s| s.0);
        for &i in &idx {
            let wgt = s.weight[i as usize];
            if wgt == 0 {
                continue;
            }
            let v = s.stack[i as usize].0;
            if v != prev {
                // Common ancestor of the previous and this stack.
                let (mut a, mut b) = (prev, v);
                if a != NONE {
                    while depth(a) > depth(b) {
                        a = parent(a);
                    }
                    while depth(b) > depth(a) {
                        b = parent(b);
                    }
                    while a != b {
                        a = parent(a);
                        b = parent(b);
                    }
                } else {
                    a = NONE;
                }
                let keep = if a == NONE { 0 } else { depth(a) as usize + 1 };
                while open.len() > keep {
                    if let Some((node, x)) = open.pop() {
                        rects.push(Rect {
                            node,
                            x,
                            w: time - x,
                        });
                    }
                }
                path.clear();
                let mut c = v;
                while c != NONE && depth(c) as usize >= keep {
                    path.push(c);
                    c = parent(c);
                }
                open.extend(path.iter().rev().map(|&node| (node, time)));
                prev = v;
            }
            time = time.saturating_add(wgt);
        }
        while let Some((node, x)) = open.pop() {
            rects.push(Rect {
                node,
                x,
                w: time - x,
            });
        }
        let before = rects.len();
        rects.retain(|r| (r.w as f64) >= min_w && r.w > 0);
        rects.sort_by_key(|r| (r.x, depth(r.node)));
        let depth_max = rects.iter().map(|r| depth(r.node) + 1).max().unwrap_or(0);
        let info = PlanInfo {
            depth_max,
            drawn: rects.len() as u64 + 1,
            pruned: (before - rects.len()) as u64,
        };
        (Plan::Chart(rects), info)
    }

    /// Calls `emit(node, frame, x, width, level)` for every rectangle, parents before
    /// children; `node` and `frame` are `None` for the "all" rectangle at level 0.
    ///
    /// The walk visits nodes in an order unrelated to their index, so every per-node
    /// array read is a likely cache miss on large profiles: a child's frame, width and
    /// level are read while its parent's child list is scanned (independent loads the
    /// CPU overlaps) and carried on the stack, rather than read one by one later.
    pub(crate) fn walk<E>(
        &self,
        p: &Profile,
        w: &Weights,
        time: u64,
        mut emit: impl FnMut(Option<u32>, Option<FrameId>, u64, u64, u32) -> Result<(), E>,
    ) -> Result<(), E> {
        emit(None, None, 0, time, 0)?;
        match self {
            Plan::Chart(rects) => {
                for r in rects {
                    let v = StackId(r.node);
                    emit(
                        Some(r.node),
                        Some(p.stacks.frame(v)),
                        r.x,
                        r.w,
                        p.stacks.depth(v) + 1,
                    )?;
                }
            }
            Plan::Tree {
                order,
                start,
                kids,
                roots,
                drawn_id,
            } => {
                #[derive(Clone, Copy)]
                struct Item {
                    node: u32,
                    frame: FrameId,
                    level: u32,
                    x: u64,
                    w: u64,
                }
                let frames = p.stacks.raw_frames();
                let mut stack: Vec<Item> = Vec::new();
                let push_children =
                    |stack: &mut Vec<Item>, list: &[u32], mut x: u64, level: u32| {
                        let mark = stack.len();
                        for &c in list {
                            let width = w.total[c as usize];
                            if drawn_id[c as usize] != NONE {
                                stack.push(Item {
                                    node: c,
                                    frame: frames[c as usize],
                                    level,
                                    x,
                                    w: width,
                                });
                            }
                            x += width;
                        }
                        stack[mark..].reverse();
                    };
                push_children(&mut stack, roots, 0, 1);
                while let Some(it) = stack.pop() {
                    let i = it.node as usize;
                    emit(Some(it.node), Some(it.frame), it.x, it.w, it.level)?;
                    let k = drawn_id[i] as usize;
                    let list = &kids[start[k] as usize..start[k + 1] as usize];
                    let first = match order {
                        // Self weight first: the total less the children's.
                        Order::Name => {
                            let children: u64 = list.iter().map(|&c| w.total[c as usize]).sum();
                            it.x + (it.w - children)
                        }
                        Order::Heavy => it.x,
                    };
                    push_children(&mut stack, list, first, it.level + 1);
                }
            }
        }
        Ok(())
    }
}

/// The profile with every stack reversed (leaf first), samples kept in order.
pub(crate) fn reversed(p: &Profile) -> Profile {
    let mut out = Profile {
        strings: p.strings.clone(),
        frames: p.frames.clone(),
        stacks: Default::default(),
        threads: p.threads.clone(),
        samples: Default::default(),
        event: p.event.clone(),
    };
    let mut memo = vec![NONE; p.stacks.len()];
    let mut path = Vec::new();
    let s = &p.samples;
    for k in 0..s.len() {
        let v = s.stack[k].0 as usize;
        if memo[v] == NONE {
            path.clear();
            p.stacks.path_into(StackId(v as u32), &mut path);
            path.reverse();
            memo[v] = out.stacks.intern_path(&path).map_or(NONE, |s| s.0);
        }
        if memo[v] != NONE {
            out.samples
                .push(StackId(memo[v]), s.weight[k], s.time[k], s.thread[k]);
        }
    }
    out
}

/// One tree holding the stacks of both profiles, with differential weights: widths are
/// the `after` weights, deltas `after − before` self weights, as flamegraph.pl draws
/// two-count input.
pub(crate) fn merged_diff(before: &Profile, after: &Profile) -> (Profile, Weights) {
    let mut m = after.clone();
    let n_after = m.stacks.len();
    let str_map: Vec<_> = before
        .strings
        .iter()
        .map(|(_, s)| m.strings.intern(s))
        .collect();
    let frame_map: Vec<_> = before
        .frames
        .iter()
        .map(|(_, f)| {
            m.frames.intern(kiln_model::Frame {
                name: str_map[f.name.0 as usize],
                kind: f.kind,
            })
        })
        .collect();
    let mut node_map: Vec<StackId> = Vec::with_capacity(before.stacks.len());
    for id in before.stacks.ids() {
        let parent = before.stacks.parent(id).map(|q| node_map[q.0 as usize]);
        let f = frame_map[before.stacks.frame(id).0 as usize];
        node_map.push(m.stacks.intern(parent, f));
    }
    let n = m.stacks.len();
    let mut selfw = after.self_weights();
    selfw.resize(n, 0);
    let mut total = selfw.clone();
    let has_kids = accumulate(&m, &mut total);
    let mut before_self = vec![0u64; n];
    for (i, &x) in before.self_weights().iter().enumerate() {
        let j = node_map[i].0 as usize;
        before_self[j] = before_self[j].saturating_add(x);
    }
    let mut delta = vec![0i64; n];
    let mut max_delta = 1u64;
    for i in 0..n {
        let d = i128::from(selfw[i]) - i128::from(before_self[i]);
        let d = d.clamp(i128::from(i64::MIN + 1), i128::from(i64::MAX)) as i64;
        delta[i] = d;
        max_delta = max_delta.max(d.unsigned_abs());
    }
    debug_assert!(n >= n_after);
    (
        m,
        Weights {
            total,
            has_kids,
            delta: Some(delta),
            max_delta,
        },
    )
}
