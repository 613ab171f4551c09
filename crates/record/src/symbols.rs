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
    pub(crate) fn from_elf(file: &object::File<'_>) -> SymbolTable {
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
}

/// The kernel's code symbols, from `/proc/kallsyms`, each with where it ends.
///
/// kallsyms gives start addresses only. A symbol ends where the next symbol begins, but
/// only within its own section: the core kernel's text ends at `_etext` and its init text
/// at `_einittext`; a module's symbols (listed with `[NAME]`) end inside the module
/// (`/proc/modules` gives its extent); the eBPF JIT's (`[bpf]`) inside their own group.
/// An address with no symbol is never given a neighbour's name: it reads `[unknown
/// kernel]`, or `[module NAME]`/`[bpf]` when it lies in a range known to belong to one.
#[derive(Debug, Default)]
pub struct KernelSymbols {
    table: SymbolTable,
    /// Address ranges known to belong to a section without a symbol there: `(start, end,
    /// label)` sorted by start.
    areas: Vec<(u64, u64, Box<[u8]>)>,
}

/// How far the last symbol of a module or eBPF group reaches when nothing says where it
/// ends: past any function the JIT writes, short of claiming unrelated memory.
const LAST_SYMBOL_REACH: u64 = 64 << 10;
/// The eBPF JIT packs programs into chunks of this size (x86-64's `bpf_prog_pack`).
const BPF_PACK: u64 = 2 << 20;

impl KernelSymbols {
    /// Reads `/proc/kallsyms` and `/proc/modules`. Empty when kallsyms is unreadable or
    /// its addresses are hidden (`kptr_restrict`).
    pub fn read() -> KernelSymbols {
        let text = std::fs::read("/proc/kallsyms").unwrap_or_default();
        let modules = std::fs::read("/proc/modules").unwrap_or_default();
        KernelSymbols::parse(&text, &modules)
    }

    /// Parses the text of `/proc/kallsyms` and of `/proc/modules`.
    pub fn parse(kallsyms: &[u8], modules: &[u8]) -> KernelSymbols {
        // (address, section, name, is code): every symbol bounds the one before it.
        let mut all: Vec<(u64, &[u8], &[u8], bool)> = Vec::new();
        for line in kallsyms.split(|&b| b == b'\n') {
            let mut it = line.splitn(3, |&b| b == b' ');
            let (Some(addr), Some(kind), Some(rest)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let Some(addr) = parse_hex(addr).filter(|&a| a != 0) else {
                continue;
            };
            let (name, section) = match rest.iter().position(|&b| b == b'\t') {
                Some(t) => {
                    let sec = rest[t + 1..].trim_ascii();
                    let sec = sec.strip_prefix(b"[").unwrap_or(sec);
                    (&rest[..t], sec.strip_suffix(b"]").unwrap_or(sec))
                }
                None => (rest.trim_ascii_end(), &b""[..]),
            };
            let code = matches!(kind, b"t" | b"T" | b"w" | b"W") && !is_text_end(name);
            all.push((addr, section, name, code));
        }
        all.sort_by_key(|e| e.0);
        let mut k = KernelSymbols::default();
        let module_ranges = parse_modules(modules);
        for (i, &(start, section, name, code)) in all.iter().enumerate() {
            if !code {
                continue;
            }
            // The next symbol at a higher address bounds this one; one of another section
            // does too, but then, outside the core kernel, the symbol reaches no further
            // than its section is known to.
            let next = all[i + 1..].iter().find(|e| e.0 > start);
            let end = match next {
                Some(n) if n.1 == section || section.is_empty() => n.0,
                _ if section.is_empty() => continue, // the last core symbol: no end known
                other => {
                    let cap = match module_ranges.iter().find(|m| m.0 <= start && start < m.1) {
                        Some(m) => m.1,
                        None => start.saturating_add(LAST_SYMBOL_REACH),
                    };
                    other.map_or(cap, |n| n.0.min(cap))
                }
            };
            if end > start {
                let name: &[u8] = if name.starts_with(b"bpf_trampoline_") {
                    b"[bpf trampoline]"
                } else {
                    name
                };
                k.table.push(start, end - start, name);
            }
            // Memory of the eBPF JIT's pack around a program is the JIT's.
            if section == b"bpf" {
                let pack = start & !(BPF_PACK - 1);
                k.areas
                    .push((pack, pack + BPF_PACK, b"[bpf]".as_slice().into()));
            }
        }
        for (s, e, name) in module_ranges {
            let mut label = b"[module ".to_vec();
            label.extend_from_slice(&name);
            label.push(b']');
            k.areas.push((s, e, label.into()));
        }
        k.table.finish();
        k.areas.sort_by_key(|a| a.0);
        k.areas.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        k
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether there are no symbols (kallsyms unreadable or hidden).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&[u8]> {
        self.table.lookup(addr)
    }

    /// The name of the code at `addr`: its symbol, else the section it is known to lie in
    /// (`[bpf]`, `[module NAME]`), else `[unknown kernel]`.
    pub fn name(&self, addr: u64) -> &[u8] {
        if let Some(n) = self.lookup(addr) {
            return n;
        }
        let i = self.areas.partition_point(|a| a.0 <= addr);
        self.areas[..i]
            .iter()
            .rev()
            .find(|a| addr < a.1)
            .map_or(b"[unknown kernel]", |a| &a.2)
    }
}

/// Markers kallsyms lists as text symbols that end a section rather than begin code
/// (`_etext`, `_einittext`, `__entry_text_end`, `__end_*`...).
fn is_text_end(name: &[u8]) -> bool {
    name == b"_etext"
        || name == b"_einittext"
        || name == b"_end"
        || name.starts_with(b"__end_")
        || name.starts_with(b"__stop_")
        || (name.starts_with(b"__") && name.ends_with(b"_text_end"))
}

/// Module extents from `/proc/modules` (`NAME SIZE REFS DEPS STATE ADDRESS`): `(start,
/// end, name)`.
fn parse_modules(text: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let f: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let name = f.first()?;
            let size: u64 = std::str::from_utf8(f.get(1)?).ok()?.parse().ok()?;
            let start = parse_hex(f.get(5)?).filter(|&a| a != 0)?;
            Some((start, start.checked_add(size)?, name.to_vec()))
        })
        .collect()
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
    pub(crate) fn for_pid(pid: u32) -> Option<PerfMap> {
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
pub(crate) fn demangle(name: &[u8]) -> Vec<u8> {
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
    fn kernel_symbols_end_within_their_section() {
        let kallsyms = b"ffffffff81000000 T _stext\n\
ffffffff81000000 T _text\n\
ffffffff81000100 T do_syscall_64\n\
ffffffff81000200 t read_zero\n\
ffffffff81000300 T __entry_text_end\n\
ffffffff81000400 T vfs_read\n\
ffffffff81000500 T _etext\n\
ffffffff81000600 R some_data\n\
ffffffff81001000 T _sinittext\n\
ffffffff81001100 t init_fn\n\
ffffffff81001200 T _einittext\n\
ffffffffc0001000 t ext4_read\t[ext4]\n\
ffffffffc0001800 t ext4_write\t[ext4]\n\
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\
ffffffffc0400000 t bpf_prog_0123456789abcdef_kiln_sample0\t[bpf]\n\
ffffffffc0400800 t bpf_prog_fedcba9876543210_step\t[bpf]\n\
ffffffffc0401000 t bpf_trampoline_6442491234\t[bpf]\n\
0000000000000000 A fixed_percpu_data\n";
        let modules = b"ext4 8192 1 - Live 0xffffffffc0001000\n";
        let k = KernelSymbols::parse(kallsyms, modules);
        let name = |a: u64| String::from_utf8_lossy(k.name(a)).into_owned();
        assert_eq!(name(0xffffffff81000180), "do_syscall_64");
        assert_eq!(name(0xffffffff81000250), "read_zero");
        // Past an end marker and past the end of text: no borrowed name.
        assert_eq!(name(0xffffffff81000350), "[unknown kernel]");
        assert_eq!(name(0xffffffff810004ff), "vfs_read");
        assert_eq!(name(0xffffffff81000510), "[unknown kernel]");
        assert_eq!(name(0xffffffff81000700), "[unknown kernel]");
        assert_eq!(name(0xffffffff81001150), "init_fn");
        assert_eq!(name(0xffffffff81001300), "[unknown kernel]");
        // A module's last symbol ends with the module; past it, nothing is known.
        assert_eq!(name(0xffffffffc0001900), "ext4_write");
        assert_eq!(name(0xffffffffc0003100), "[unknown kernel]");
        assert_eq!(name(0xffffffffc0201010), "ftrace_trampoline");
        assert_eq!(
            name(0xffffffffc0400010),
            "bpf_prog_0123456789abcdef_kiln_sample0"
        );
        assert_eq!(name(0xffffffffc0400900), "bpf_prog_fedcba9876543210_step");
        assert_eq!(name(0xffffffffc0401004), "[bpf trampoline]");
        // In the eBPF JIT's pack, past its last program's reach.
        assert_eq!(name(0xffffffffc0480000), "[bpf]");
        // perf's context markers and the top of the address space: no code there.
        assert_eq!(name(-128i64 as u64), "[unknown kernel]");
        assert_eq!(name(0xffffffff80000000), "[unknown kernel]");
        assert!(k.lookup(0xffffffff81000350).is_none());
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
