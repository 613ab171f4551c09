//! Symbolication without perf: ELF symbol tables (and separate debug files), the kernel's
//! `/proc/kallsyms`, and JIT perf maps (`/tmp/perf-<pid>.map`).
//!
//! Why hand-written over `object` rather than a symbolication framework: a profile needs
//! one name per distinct address, and the recorder already has every binary mapped for
//! unwinding; a sorted `(address, size, name)` table per binary answers each lookup with a
//! binary search, and the JIT maps need rules of their own (see [`PerfMap`]).
use object::{Object, ObjectSymbol, SymbolKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A sorted table of function symbols: `(start, size, name)` with names in one arena.
#[derive(Debug, Default)]
pub struct SymbolTable {
    entries: Vec<(u64, u64, u32, u32)>,
    names: Vec<u8>,
}

impl SymbolTable {
    fn push(&mut self, start: u64, size: u64, name: &[u8]) {
        let off = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.entries.push((start, size, off, name.len() as u32));
    }

    fn finish(&mut self) {
        // Sort by start; for equal starts keep the sized entry (aliases share addresses).
        self.entries
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        self.entries.dedup_by_key(|e| e.0);
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The symbol containing `addr`. Zero-sized symbols (hand-written assembly) cover up
    /// to the next symbol, as perf does.
    pub fn lookup(&self, addr: u64) -> Option<&[u8]> {
        let i = self.entries.partition_point(|e| e.0 <= addr);
        if i == 0 {
            return None;
        }
        let (start, size, off, len) = self.entries[i - 1];
        let inside = if size > 0 {
            addr < start + size
        } else {
            self.entries.get(i).is_none_or(|n| addr < n.0)
        };
        inside.then(|| &self.names[off as usize..(off + len) as usize])
    }

    /// Function symbols of an ELF image (`.symtab` and `.dynsym`).
    pub fn from_elf(file: &object::File<'_>) -> SymbolTable {
        let mut t = SymbolTable::default();
        for sym in file.symbols().chain(file.dynamic_symbols()) {
            if sym.kind() != SymbolKind::Text || sym.address() == 0 {
                continue;
            }
            if let Ok(name) = sym.name_bytes() {
                if !name.is_empty() {
                    t.push(sym.address(), sym.size(), name);
                }
            }
        }
        t.finish();
        t
    }

    /// The kernel's symbols from `/proc/kallsyms` (text symbols only). Empty when the
    /// file is unreadable or addresses are hidden (`kptr_restrict`).
    pub fn kallsyms() -> SymbolTable {
        let text = std::fs::read("/proc/kallsyms").unwrap_or_default();
        let mut t = SymbolTable::default();
        for line in text.split(|&b| b == b'\n') {
            let mut it = line.split(|&b| b == b' ');
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, b"t" | b"T" | b"w" | b"W") {
                continue;
            }
            let Some(addr) = parse_hex(addr) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            // Module symbols end with "\t[module]"; keep the bare name.
            let name = name.split(|&b| b == b'\t').next().unwrap_or(name);
            t.push(addr, 0, name);
        }
        t.finish();
        t
    }
}

/// Parses hexadecimal with or without `0x`.
pub(crate) fn parse_hex(s: &[u8]) -> Option<u64> {
    let s = s.strip_prefix(b"0x").unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        v = (v << 4) | (c as char).to_digit(16)? as u64;
    }
    Some(v)
}

/// A JIT perf map (`/tmp/perf-<pid>.map`: `START SIZE NAME` per line, hexadecimal).
///
/// Rules, from what the BEAM and Node write:
/// * a later entry for an address wins over an earlier one: the BEAM writes a module again
///   each time it is reloaded, and Node rewrites moved code;
/// * `-CodeInfoPrologue` entries (the BEAM's function header before the code) are named
///   after their function, so samples there join it;
/// * `codeHeader`/`codeFooter` entries stay as they are (module-level stubs).
#[derive(Debug, Default)]
pub struct PerfMap {
    // start -> (end, name)
    ranges: BTreeMap<u64, (u64, Box<[u8]>)>,
    /// Lines that did not parse.
    pub bad_lines: u64,
}

impl PerfMap {
    /// Reads `/tmp/perf-<pid>.map`; `None` if there is no such file.
    pub fn for_pid(pid: u32) -> Option<PerfMap> {
        let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
        let text = std::fs::read(path).ok()?;
        Some(PerfMap::parse(&text))
    }

    /// Parses the text of a perf map.
    pub fn parse(text: &[u8]) -> PerfMap {
        let mut m = PerfMap::default();
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let mut it = line.splitn(3, |&b| b == b' ');
            let (Some(start), Some(size), Some(name)) = (it.next(), it.next(), it.next()) else {
                m.bad_lines += 1;
                continue;
            };
            let (Some(start), Some(size)) = (parse_hex(start), parse_hex(size)) else {
                m.bad_lines += 1;
                continue;
            };
            if size == 0 {
                continue;
            }
            let name = name.strip_suffix(b"-CodeInfoPrologue").unwrap_or(name);
            m.insert(start, start.saturating_add(size), name);
        }
        m
    }

    /// Inserts `[start, end)`, cutting away whatever older entries it overlaps.
    fn insert(&mut self, start: u64, end: u64, name: &[u8]) {
        // An older range that begins before `start` and reaches into it is cut (and split
        // if it also reaches past `end`).
        if let Some((&s, (e, n))) = self.ranges.range(..start).next_back() {
            let (e, n) = (*e, n.clone());
            if e > start {
                self.ranges.insert(s, (start, n.clone()));
                if e > end {
                    self.ranges.insert(end, (e, n));
                }
            }
        }
        let inside: Vec<u64> = self.ranges.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((e, n)) = self.ranges.remove(&s) {
                if e > end {
                    self.ranges.insert(end, (e, n));
                }
            }
        }
        self.ranges.insert(start, (end, name.into()));
    }

    /// The name of the code at `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&[u8]> {
        let (_, (end, name)) = self.ranges.range(..=addr).next_back()?;
        (addr < *end).then_some(&**name)
    }

    /// Number of address ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// Demangles Rust (legacy and v0) and C++ (Itanium) names; other names come back as they are.
pub fn demangle(name: &[u8]) -> Vec<u8> {
    let Ok(s) = std::str::from_utf8(name) else {
        return name.to_vec();
    };
    if let Ok(d) = rustc_demangle::try_demangle(s) {
        return format!("{d:#}").into_bytes();
    }
    if s.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(s) {
            let opts = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(d) = sym.demangle_with_options(&opts) {
                return d.into_bytes();
            }
        }
    }
    name.to_vec()
}

/// Whether an ELF image carries a full symbol table (not stripped).
pub(crate) fn has_symtab(file: &object::File<'_>) -> bool {
    file.section_by_name(".symtab").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_map_later_entries_win_and_prologues_join() {
        let m = PerfMap::parse(
            b"0x1000 100 $m:old/1\n0x1100 28 $m:f/2-CodeInfoPrologue\n0x1128 40 $m:f/2\n\
              1040 20 $m:new/1\nbad line\n0x2000 100 $m::codeHeader\n",
        );
        assert_eq!(m.lookup(0x1000), Some(&b"$m:old/1"[..]));
        assert_eq!(m.lookup(0x1045), Some(&b"$m:new/1"[..]));
        assert_eq!(m.lookup(0x1070), Some(&b"$m:old/1"[..]));
        assert_eq!(m.lookup(0x1101), Some(&b"$m:f/2"[..]));
        assert_eq!(m.lookup(0x1130), Some(&b"$m:f/2"[..]));
        assert_eq!(m.lookup(0x2050), Some(&b"$m::codeHeader"[..]));
        assert_eq!(m.lookup(0x3000), None);
        assert_eq!(m.bad_lines, 1);
    }

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(
            demangle(b"_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            b"core::ptr::drop_in_place"
        );
        assert_eq!(demangle(b"_ZN3foo3barEv"), b"foo::bar");
        assert_eq!(demangle(b"main"), b"main");
    }

    #[test]
    fn zero_sized_symbols_reach_the_next() {
        let mut t = SymbolTable::default();
        t.push(0x100, 0, b"asm");
        t.push(0x200, 0x10, b"f");
        t.finish();
        assert_eq!(t.lookup(0x1ff), Some(&b"asm"[..]));
        assert_eq!(t.lookup(0x20f), Some(&b"f"[..]));
        assert_eq!(t.lookup(0x210), None);
        assert_eq!(t.lookup(0x50), None);
    }
}
