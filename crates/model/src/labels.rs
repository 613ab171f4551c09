//! Interned sets of labels (pprof's labels, a sample's host or goroutine), each set stored once.
use crate::{FastHash, StrId};
use std::collections::HashMap;

/// A handle to a set of labels of a [`LabelTable`]; [`LabelSetId::EMPTY`] is the set
/// with no label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LabelSetId(pub u32);

impl LabelSetId {
    /// No label.
    pub const EMPTY: LabelSetId = LabelSetId(0);
}

/// A label's value: text, or a number with an optional unit (pprof's `num_label`, such
/// as a heap sample's `bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelValue {
    /// Text (Go's `pprof.Labels("handler", "query")`).
    Str(StrId),
    /// A number, with its unit when the input names one.
    Num {
        /// The value.
        value: i64,
        /// Its unit (`bytes`), if any.
        unit: Option<StrId>,
    },
}

/// One `key=value` label of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The key.
    pub key: StrId,
    /// The value.
    pub value: LabelValue,
}

/// Interned label sets: the labels a sample carries, as pprof profiles give them (Go's
/// `pprof.Do` labels on CPU samples, `bytes` on heap samples). Most profiles have none;
/// a profile's samples then carry no label column at all.
#[derive(Clone, Debug)]
pub struct LabelTable {
    sets: Vec<Box<[Label]>>,
    index: HashMap<Box<[Label]>, LabelSetId, FastHash>,
}

impl Default for LabelTable {
    fn default() -> Self {
        let mut t = LabelTable {
            sets: Vec::new(),
            index: HashMap::default(),
        };
        t.sets.push(Box::new([]));
        t.index.insert(Box::new([]), LabelSetId::EMPTY);
        t
    }
}

impl LabelTable {
    /// A table holding only the empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a set of labels (kept in the order given).
    pub fn intern(&mut self, labels: &[Label]) -> LabelSetId {
        if let Some(&id) = self.index.get(labels) {
            return id;
        }
        let id =
            LabelSetId(u32::try_from(self.sets.len()).expect("more than 4 billion label sets"));
        self.sets.push(labels.into());
        self.index.insert(labels.into(), id);
        id
    }

    /// The labels of `id` (empty for an unknown id).
    pub fn get(&self, id: LabelSetId) -> &[Label] {
        self.sets.get(id.0 as usize).map_or(&[], |s| s)
    }

    /// Number of sets, the empty one included.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether the table holds only the empty set.
    pub fn is_empty(&self) -> bool {
        self.sets.len() <= 1
    }

    /// All sets in handle order, the empty one first.
    pub fn iter(&self) -> impl Iterator<Item = (LabelSetId, &[Label])> + '_ {
        self.sets
            .iter()
            .enumerate()
            .map(|(i, s)| (LabelSetId(i as u32), &**s))
    }
}

/// A `KEY=VALUE` condition on labels (`--focus-label handler=query`): a sample matches
/// when it has a label `KEY` whose value is `VALUE` (numbers compare as written in
/// decimal, with or without their unit: `bytes=1024`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelMatch {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

impl LabelMatch {
    /// Parses `KEY=VALUE` (the first `=` splits).
    pub fn parse(spec: &str) -> Option<Self> {
        let (k, v) = spec.split_once('=')?;
        if k.is_empty() {
            return None;
        }
        Some(LabelMatch {
            key: k.as_bytes().to_vec(),
            value: v.as_bytes().to_vec(),
        })
    }

    /// Whether `labels` (whose names are in `strings`) satisfy the condition.
    pub fn matches(&self, strings: &crate::StringTable, labels: &[Label]) -> bool {
        labels.iter().any(|l| {
            strings.get(l.key) == self.key.as_slice()
                && match l.value {
                    LabelValue::Str(s) => strings.get(s) == self.value.as_slice(),
                    LabelValue::Num { value, unit } => {
                        let n = value.to_string();
                        self.value == n.as_bytes()
                            || unit.is_some_and(|u| {
                                let mut with = n.into_bytes();
                                with.extend_from_slice(strings.get(u));
                                self.value == with
                            })
                    }
                }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StringTable;

    #[test]
    fn interns_and_matches() {
        let mut s = StringTable::new();
        let mut t = LabelTable::new();
        assert!(t.is_empty());
        let k = s.intern(b"handler");
        let v = s.intern(b"query");
        let bytes = s.intern(b"bytes");
        let a = [
            Label {
                key: k,
                value: LabelValue::Str(v),
            },
            Label {
                key: bytes,
                value: LabelValue::Num {
                    value: 1024,
                    unit: Some(bytes),
                },
            },
        ];
        let id = t.intern(&a);
        assert_eq!(t.intern(&a), id);
        assert_ne!(id, LabelSetId::EMPTY);
        assert_eq!(t.intern(&[]), LabelSetId::EMPTY);
        assert_eq!(t.get(id), &a);
        let m = |spec: &str| LabelMatch::parse(spec).unwrap().matches(&s, t.get(id));
        assert!(m("handler=query"));
        assert!(!m("handler=put"));
        assert!(m("bytes=1024"));
        assert!(m("bytes=1024bytes"));
        assert!(!m("other=query"));
        assert!(LabelMatch::parse("=x").is_none());
        assert!(LabelMatch::parse("novalue").is_none());
    }
}
