//! Interned threads: a process's threads as the input names them.
use crate::{FastHash, StrId};
use std::collections::HashMap;

/// A handle to a thread of a [`ThreadTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(pub u32);

impl ThreadId {
    /// "No thread known" (folded input, for instance).
    pub const NONE: ThreadId = ThreadId(u32::MAX);
}

/// A process's thread as the input names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    /// Process id, where known.
    pub pid: Option<u32>,
    /// Thread id, where known.
    pub tid: Option<u32>,
    /// The thread's name (`comm`).
    pub name: StrId,
}

/// Interned threads.
#[derive(Default, Clone, Debug)]
pub struct ThreadTable {
    threads: Vec<Thread>,
    index: HashMap<Thread, ThreadId, FastHash>,
}

impl ThreadTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a thread.
    pub fn intern(&mut self, t: Thread) -> ThreadId {
        let next = ThreadId(self.threads.len() as u32);
        *self.index.entry(t).or_insert_with(|| {
            self.threads.push(t);
            next
        })
    }

    /// The thread of `id`; `None` for [`ThreadId::NONE`].
    pub fn get(&self, id: ThreadId) -> Option<Thread> {
        self.threads.get(id.0 as usize).copied()
    }

    /// Number of threads.
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    /// All threads in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (ThreadId, Thread)> + '_ {
        self.threads
            .iter()
            .enumerate()
            .map(|(i, t)| (ThreadId(i as u32), *t))
    }
}
