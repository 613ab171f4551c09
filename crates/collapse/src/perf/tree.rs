//! The call tree a parser thread builds, and the model's stack table made from it.
use hashbrown::HashTable;
use kiln_model::{FrameId, StackId};

/// "No node": the parent of a root.
pub(super) const NONE: u32 = u32::MAX;

/// The call tree a parser thread builds: node `i` is `(parent, frame)`, every parent
/// before its children. Eight bytes a node and a four-byte index slot: with several
/// parser threads, each building the tree of what it read, the trees are most of the
/// memory a collapse needs, so they are kept smaller than the model's stack table (which
/// is built once, at the end, without an index).
pub(super) struct Tree {
    pub(super) nodes: Vec<(u32, u32)>,
    pub(super) index: HashTable<u32>,
    /// How many nodes it may hold: every id below [`NONE`] by default (smaller in tests).
    pub(super) cap: u32,
    /// A node was asked for past `cap`: the sample being read cannot be kept, and its
    /// parse ends with [`CollapseError::TooManyStacks`] (until then the parent stands in,
    /// so nothing indexes past the table).
    pub(super) full: bool,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            index: HashTable::new(),
            cap: NONE,
            full: false,
        }
    }
}

#[inline]
fn node_hash(parent: u32, frame: u32) -> u64 {
    let k = (u64::from(parent) << 32) | u64::from(frame);
    let m = u128::from(k ^ 0x243f_6a88_85a3_08d3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Tree {
    /// The node for `frame` under `parent` ([`NONE`] for a root), created if new.
    #[inline]
    pub(super) fn intern(&mut self, parent: u32, frame: FrameId) -> u32 {
        let key = (parent, frame.0);
        let h = node_hash(key.0, key.1);
        let nodes = &self.nodes;
        if let Some(&i) = self.index.find(h, |&i| nodes[i as usize] == key) {
            return i;
        }
        let Some(id) = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&i| i < self.cap)
        else {
            self.full = true;
            // A stand-in the caller may index with; the parse ends at the sample's end.
            return if parent == NONE { 0 } else { parent };
        };
        self.nodes.push(key);
        let nodes = &self.nodes;
        self.index.insert_unique(h, id, |&i| {
            node_hash(nodes[i as usize].0, nodes[i as usize].1)
        });
        id
    }
}

/// The model's stack table from the merged call tree, built by appending: the tree has
/// no duplicates and every parent comes before its children.
pub(super) fn into_stack_table(tree: Tree) -> kiln_model::StackTable {
    let Tree { nodes, index, .. } = tree;
    drop(index);
    let mut stacks = kiln_model::StackTable::new();
    for &(parent, frame) in &nodes {
        let parent = (parent != NONE).then_some(StackId(parent));
        stacks.push_new(parent, FrameId(frame));
    }
    stacks
}
