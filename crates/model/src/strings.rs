//! Interned byte strings: every distinct name stored once.
use crate::FastHash;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// A handle to an interned string of a [`StringTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// Interned byte strings: every distinct name is stored once and named by a [`StrId`].
///
/// Strings are bytes because symbol names are bytes (see the crate docs).
#[derive(Default, Clone)]
pub struct StringTable {
    strings: Vec<Box<[u8]>>,
    index: HashTable<u32>,
    hasher: FastHash,
}

impl std::fmt::Debug for StringTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StringTable")
            .field("len", &self.strings.len())
            .finish()
    }
}

impl StringTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns `s`, returning its handle; the same bytes always give the same handle.
    pub fn intern(&mut self, s: &[u8]) -> StrId {
        let hash = self.hasher.hash_one(s);
        let strings = &self.strings;
        if let Some(&id) = self.index.find(hash, |&i| &*strings[i as usize] == s) {
            return StrId(id);
        }
        let id = u32::try_from(self.strings.len()).expect("more than 4 billion strings");
        self.strings.push(s.into());
        let strings = &self.strings;
        let hasher = &self.hasher;
        self.index
            .insert_unique(hash, id, |&i| hasher.hash_one(&*strings[i as usize]));
        StrId(id)
    }

    /// Interns a `&str`.
    pub fn intern_str(&mut self, s: &str) -> StrId {
        self.intern(s.as_bytes())
    }

    /// Looks up `s` without interning it.
    pub fn find(&self, s: &[u8]) -> Option<StrId> {
        let hash = self.hasher.hash_one(s);
        self.index
            .find(hash, |&i| &*self.strings[i as usize] == s)
            .map(|&i| StrId(i))
    }

    /// The bytes of `id`.
    pub fn get(&self, id: StrId) -> &[u8] {
        &self.strings[id.0 as usize]
    }

    /// The string of `id`, with invalid UTF-8 replaced by U+FFFD.
    pub fn get_lossy(&self, id: StrId) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.get(id))
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// All strings in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &[u8])> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (StrId(i as u32), &**s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_byte_exact() {
        let mut t = StringTable::new();
        let a = t.intern(b"main");
        let b = t.intern(b"\xff\xfe(anon)");
        assert_eq!(t.intern(b"main"), a);
        assert_ne!(a, b);
        assert_eq!(t.get(b), b"\xff\xfe(anon)");
        assert_eq!(t.find(b"main"), Some(a));
        assert_eq!(t.find(b"nope"), None);
        assert_eq!(t.len(), 2);
    }
}
