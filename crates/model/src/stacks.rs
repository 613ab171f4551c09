//! Call stacks as a prefix tree of frames.
use crate::{FastHash, FrameId};
use hashbrown::HashMap;

/// A handle to a node of a [`StackTable`]: a frame and, through its parent, every caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// Call stacks stored as a prefix tree: node `i` is `(frame[i], parent[i])`.
///
/// Why a tree: real profiles repeat their callers endlessly (every sample of a scheduler
/// thread starts with the same ten frames), so storing each stack as a path costs one node
/// per *distinct* prefix instead of one frame per sample. It is also the merged call tree a
/// flame graph draws: the nodes are the rectangles, and a parent always has a smaller index
/// than its children, so totals are one backwards pass over the table.
#[derive(Default, Clone, Debug)]
pub struct StackTable {
    frame: Vec<FrameId>,
    parent: Vec<u32>,
    depth: Vec<u32>,
    /// The child of each node looked up last: most lookups repeat the previous one
    /// (samples of one thread share their callers), and this skips the hash map.
    last_child: Vec<u32>,
    index: HashMap<u64, u32, FastHash>,
    /// Nodes below this many are in `index`; nodes appended by [`Self::push_new`] are
    /// indexed on the next lookup.
    indexed: usize,
}

const NO_PARENT: u32 = u32::MAX;

impl StackTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The node for `frame` called from `parent` (`None` for a root frame), created if new.
    #[inline]
    pub fn intern(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        self.ensure_index();
        let p = parent.map_or(NO_PARENT, |s| s.0);
        if p != NO_PARENT {
            let lc = self.last_child[p as usize];
            if lc != NO_PARENT && self.frame[lc as usize] == frame {
                return StackId(lc);
            }
        }
        let key = (u64::from(p) << 32) | u64::from(frame.0);
        let next = self.frame.len() as u32;
        let id = *self.index.entry(key).or_insert(next);
        if id == next {
            assert!(next != NO_PARENT, "more than 4 billion stacks");
            self.frame.push(frame);
            self.parent.push(p);
            self.last_child.push(NO_PARENT);
            self.depth
                .push(parent.map_or(0, |s| self.depth[s.0 as usize] + 1));
            self.indexed = self.frame.len();
        }
        if p != NO_PARENT {
            self.last_child[p as usize] = id;
        }
        StackId(id)
    }

    /// Appends a node for `frame` under `parent` that the caller knows is new (no node has
    /// this frame under this parent), without a hash lookup. Builders that see stacks in
    /// sorted order use it: a tree of millions of nodes is then built at the cost of
    /// appending to arrays; the lookup index is completed on the next [`Self::intern`] or
    /// [`Self::find`]. Appending a node that exists already breaks the tree (two nodes for
    /// one path), so only call it when sure.
    pub fn push_new(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        let p = parent.map_or(NO_PARENT, |s| s.0);
        let id = self.frame.len() as u32;
        assert!(id != NO_PARENT, "more than 4 billion stacks");
        self.frame.push(frame);
        self.parent.push(p);
        self.last_child.push(NO_PARENT);
        self.depth
            .push(parent.map_or(0, |s| self.depth[s.0 as usize] + 1));
        StackId(id)
    }

    /// Reserves room for `additional` more nodes (builders that know how many nodes
    /// they will append avoid growing the table's arrays step by step).
    pub fn reserve(&mut self, additional: usize) {
        self.frame.reserve_exact(additional);
        self.parent.reserve_exact(additional);
        self.depth.reserve_exact(additional);
        self.last_child.reserve_exact(additional);
    }

    /// Indexes nodes appended by [`Self::push_new`].
    fn ensure_index(&mut self) {
        while self.indexed < self.frame.len() {
            let i = self.indexed;
            let key = (u64::from(self.parent[i]) << 32) | u64::from(self.frame[i].0);
            self.index.insert(key, i as u32);
            self.indexed += 1;
        }
    }

    /// The node for the whole path `frames` (root first); `None` for an empty path.
    pub fn intern_path(&mut self, frames: &[FrameId]) -> Option<StackId> {
        let mut node = None;
        for &f in frames {
            node = Some(self.intern(node, f));
        }
        node
    }

    /// Looks up the node for `frame` under `parent` without creating it.
    pub fn find(&self, parent: Option<StackId>, frame: FrameId) -> Option<StackId> {
        if self.indexed < self.frame.len() {
            // Not indexed yet: a linear scan is correct, if slow; callers that mix
            // push_new and find should intern instead.
            let p = parent.map_or(NO_PARENT, |s| s.0);
            return (0..self.frame.len())
                .find(|&i| self.parent[i] == p && self.frame[i] == frame)
                .map(|i| StackId(i as u32));
        }
        let p = parent.map_or(NO_PARENT, |s| s.0);
        let key = (u64::from(p) << 32) | u64::from(frame.0);
        self.index.get(&key).map(|&i| StackId(i))
    }

    /// The frame of a node.
    #[inline]
    pub fn frame(&self, id: StackId) -> FrameId {
        self.frame[id.0 as usize]
    }

    /// The parent of a node (`None` for a root).
    #[inline]
    pub fn parent(&self, id: StackId) -> Option<StackId> {
        let p = self.parent[id.0 as usize];
        (p != NO_PARENT).then_some(StackId(p))
    }

    /// Depth of a node: 0 for a root.
    #[inline]
    pub fn depth(&self, id: StackId) -> u32 {
        self.depth[id.0 as usize]
    }

    /// The frames of a node's path, root first, appended to `out`.
    pub fn path_into(&self, id: StackId, out: &mut Vec<FrameId>) {
        let start = out.len();
        let mut node = Some(id);
        while let Some(n) = node {
            out.push(self.frame(n));
            node = self.parent(n);
        }
        out[start..].reverse();
    }

    /// The frames of a node's path, root first.
    pub fn path(&self, id: StackId) -> Vec<FrameId> {
        let mut v = Vec::with_capacity(self.depth(id) as usize + 1);
        self.path_into(id, &mut v);
        v
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }

    /// All node handles; every parent comes before its children.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = StackId> + ExactSizeIterator {
        (0..self.frame.len() as u32).map(StackId)
    }

    /// Parent indices as raw `u32` (`u32::MAX` for roots), for renderers and encoders.
    pub fn raw_parents(&self) -> &[u32] {
        &self.parent
    }

    /// Frame indices as a slice, for renderers and encoders.
    pub fn raw_frames(&self) -> &[FrameId] {
        &self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_shared() {
        let mut t = StackTable::new();
        let a = t
            .intern_path(&[FrameId(0), FrameId(1), FrameId(2)])
            .unwrap();
        let b = t
            .intern_path(&[FrameId(0), FrameId(1), FrameId(3)])
            .unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.parent(a), t.parent(b));
        assert_eq!(t.path(b), vec![FrameId(0), FrameId(1), FrameId(3)]);
        assert_eq!(t.depth(b), 2);
        assert!(t.intern_path(&[]).is_none());
    }
}
