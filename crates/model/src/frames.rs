//! Interned frames: a function name, the code it belongs to and its kind, each stored once.
use crate::{FastHash, StrId, StringTable};
use std::collections::HashMap;

/// A handle to a frame of a [`FrameTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// What kind of code a frame stands for, where the input says it.
///
/// The kind is informational (palettes, the viewer's colouring); annotations that
/// collapsers add to names (`_[k]`, `_[j]`, `_[i]`) stay part of the name so a folded file
/// reads back byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FrameKind {
    /// Not known (folded input, for instance).
    #[default]
    Unknown,
    /// Native user-space code.
    User,
    /// Kernel code.
    Kernel,
    /// Just-in-time compiled code (perf maps).
    Jit,
    /// A function inlined into its caller.
    Inline,
    /// The root pseudo-frame naming a process or thread.
    Root,
    /// A Python function, read from the interpreter's own frames (`qualname (file:line)`).
    Python,
}

/// A function in a stack: its name and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The interned name.
    pub name: StrId,
    /// The kind of code.
    pub kind: FrameKind,
}

/// Where a function's code is: its source file and first line, where the input says
/// (pprof's `Function.filename` and `start_line`, or the line of its first location).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source {
    /// The file name.
    pub file: StrId,
    /// The line, 1-based; 0 when unknown.
    pub line: u32,
}

/// Interned frames, with the source location of those whose input gives one.
#[derive(Default, Clone, Debug)]
pub struct FrameTable {
    frames: Vec<Frame>,
    index: HashMap<Frame, FrameId, FastHash>,
    /// Empty, or one entry per frame.
    sources: Vec<Option<Source>>,
}

impl FrameTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a frame.
    pub fn intern(&mut self, frame: Frame) -> FrameId {
        let next = FrameId(u32::try_from(self.frames.len()).expect("more than 4 billion frames"));
        *self.index.entry(frame).or_insert_with(|| {
            self.frames.push(frame);
            if !self.sources.is_empty() {
                self.sources.push(None);
            }
            next
        })
    }

    /// Records where the code of `id` is (the first source given for a frame stays).
    pub fn set_source(&mut self, id: FrameId, source: Source) {
        let i = id.0 as usize;
        if i >= self.frames.len() {
            return;
        }
        if self.sources.is_empty() {
            self.sources.resize(self.frames.len(), None);
        }
        let slot = &mut self.sources[i];
        if slot.is_none() {
            *slot = Some(source);
        }
    }

    /// Where the code of `id` is, when known.
    #[inline]
    pub fn source(&self, id: FrameId) -> Option<Source> {
        self.sources.get(id.0 as usize).copied().flatten()
    }

    /// Whether any frame has a source location.
    pub fn has_sources(&self) -> bool {
        !self.sources.is_empty()
    }

    /// Interns a frame by name, of kind [`FrameKind::Unknown`].
    pub fn intern_name(&mut self, strings: &mut StringTable, name: &[u8]) -> FrameId {
        let name = strings.intern(name);
        self.intern(Frame {
            name,
            kind: FrameKind::Unknown,
        })
    }

    /// The frame of `id`.
    pub fn get(&self, id: FrameId) -> Frame {
        self.frames[id.0 as usize]
    }

    /// Number of distinct frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// All frames in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (FrameId, Frame)> + '_ {
        self.frames
            .iter()
            .enumerate()
            .map(|(i, f)| (FrameId(i as u32), *f))
    }
}
