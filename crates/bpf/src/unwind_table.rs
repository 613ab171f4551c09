//! Unwind tables for the in-kernel unwinder ([`crate::sampler`]), built from an ELF
//! image's `.eh_frame`.
//!
//! ## Why tables
//! The eBPF program cannot interpret DWARF call frame programs, but it can binary-search
//! a sorted array. Each FDE's CFI program is evaluated once, here, into rows: from
//! address `pc` on (until the next row), the canonical frame address (CFA) is `rsp + n`
//! or `rbp + n`, the caller's `rbp` is saved at `CFA + m` (or is unchanged), and the
//! return address is at `CFA - 8` (the x86-64 ABI; every compiler emits that rule). A row
//! marks the outermost frame (the return address is undefined: `_start`, `clone3`), or an
//! address range without usable rules, where the program falls back to frame pointers.
//!
//! Only the rules the kernel side can follow are kept: CFA from `rsp` or `rbp`, and the
//! one expression every linker emits for PLT stubs. Anything else (signal trampolines,
//! hand-written expressions) becomes a "no rule" row, counted in [`UnwindTable::unusual_rows`].
//!
//! The builder does no I/O: it takes the bytes of an ELF file (as mapped by the caller).
use gimli::{
    BaseAddresses, CfaRule, CieOrFde, EhFrame, LittleEndian, RegisterRule, UnwindContext,
    UnwindSection, X86_64,
};
use object::{Object, ObjectSection};

/// What a row says about frames whose pc is at or after [`UnwindRow::pc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RowKind {
    /// No usable rule (a gap between functions, or a rule the kernel side cannot
    /// follow): the unwinder falls back to frame pointers.
    None = 0,
    /// CFA = `rsp` + [`UnwindRow::cfa_offset`].
    CfaRsp = 1,
    /// CFA = `rbp` + [`UnwindRow::cfa_offset`].
    CfaRbp = 2,
    /// A PLT stub: CFA = `rsp + 8`, plus 8 when `(pc & 15) >= `[`UnwindRow::arg`].
    Plt = 3,
    /// The outermost frame: the return address is undefined, the stack ends here.
    End = 4,
}

/// One row of an unwind table. Layout shared with `struct row` in `sampler.bpf.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnwindRow {
    /// First address (as stated in the ELF file) the row applies to.
    pub pc: u64,
    /// Offset added to the CFA's base register.
    pub cfa_offset: i32,
    /// Where the caller's `rbp` is saved, relative to the CFA; 0: `rbp` is unchanged.
    pub rbp_offset: i16,
    /// The rule.
    pub kind: RowKind,
    /// Rule argument ([`RowKind::Plt`]: the pc threshold).
    pub arg: u8,
}

/// Size of one row in the kernel's table.
pub(crate) const ROW_BYTES: usize = 16;

impl UnwindRow {
    /// The row as the kernel program reads it.
    pub fn to_bytes(&self) -> [u8; ROW_BYTES] {
        let mut b = [0u8; ROW_BYTES];
        b[0..8].copy_from_slice(&self.pc.to_ne_bytes());
        b[8..12].copy_from_slice(&self.cfa_offset.to_ne_bytes());
        b[12..14].copy_from_slice(&self.rbp_offset.to_ne_bytes());
        b[14] = self.kind as u8;
        b[15] = self.arg;
        b
    }

    fn same_rule(&self, o: &UnwindRow) -> bool {
        self.kind == o.kind
            && self.cfa_offset == o.cfa_offset
            && self.rbp_offset == o.rbp_offset
            && self.arg == o.arg
    }
}

/// The unwind table of one ELF image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnwindTable {
    /// Rows sorted by `pc`, no two with the same `pc`, no two neighbours with the same rule.
    pub rows: Vec<UnwindRow>,
    /// Function ranges `(start, end)` of the FDEs, sorted (for naming code without symbols).
    pub functions: Vec<(u64, u64)>,
    /// FDEs that could not be parsed or evaluated (their code gets no rows).
    pub bad_fdes: u64,
    /// Rows whose rules the kernel side cannot follow (kept as [`RowKind::None`]).
    pub unusual_rows: u64,
}

/// Why no table could be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The bytes are not an ELF file `object` can read.
    #[error("not an ELF file: {0}")]
    NotElf(String),
    /// The file has no `.eh_frame` section.
    #[error("no .eh_frame section")]
    NoEhFrame,
    /// Not an x86-64 image.
    #[error("not an x86-64 image ({0:?})")]
    Architecture(object::Architecture),
}

/// The PLT CFA expression binutils and lld emit:
/// `DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit<K>; DW_OP_ge;
/// DW_OP_lit3; DW_OP_shl; DW_OP_plus`, i.e. `rsp + 8 + (((rip & 15) >= K) << 3)`.
fn plt_threshold(expr: &[u8]) -> Option<u8> {
    match expr {
        [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, k, 0x2a, 0x33, 0x24, 0x22]
            if (0x30..=0x4f).contains(k) =>
        {
            Some(k - 0x30)
        }
        _ => None,
    }
}

/// Builds the unwind table of the ELF image in `elf`.
pub fn build(elf: &[u8]) -> Result<UnwindTable, TableError> {
    let file = object::File::parse(elf).map_err(|e| TableError::NotElf(e.to_string()))?;
    if file.architecture() != object::Architecture::X86_64 {
        return Err(TableError::Architecture(file.architecture()));
    }
    let section = file
        .section_by_name(".eh_frame")
        .ok_or(TableError::NoEhFrame)?;
    let data = section
        .data()
        .map_err(|e| TableError::NotElf(e.to_string()))?;
    let mut bases = BaseAddresses::default().set_eh_frame(section.address());
    if let Some(t) = file.section_by_name(".text") {
        bases = bases.set_text(t.address());
    }
    if let Some(g) = file.section_by_name(".got") {
        bases = bases.set_got(g.address());
    }
    Ok(from_eh_frame(data, &bases))
}

/// Builds a table from the bytes of an `.eh_frame` section.
pub fn from_eh_frame(data: &[u8], bases: &BaseAddresses) -> UnwindTable {
    let eh = EhFrame::new(data, LittleEndian);
    let mut ctx = Box::new(UnwindContext::new());
    let mut out = UnwindTable::default();
    let mut raw: Vec<UnwindRow> = Vec::new();
    let mut entries = eh.entries(bases);
    loop {
        let entry = match entries.next() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            // The iterator cannot resynchronise after a malformed length.
            Err(_) => {
                out.bad_fdes += 1;
                break;
            }
        };
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else {
            out.bad_fdes += 1;
            continue;
        };
        let (start, end) = (fde.initial_address(), fde.end_address());
        if end <= start {
            continue;
        }
        let before = raw.len();
        let ok = (|| -> gimli::Result<()> {
            let mut table = fde.rows(&eh, bases, &mut ctx)?;
            while let Some(row) = table.next_row()? {
                let r = convert(&eh, row, &mut out.unusual_rows);
                raw.push(UnwindRow {
                    pc: row.start_address(),
                    ..r
                });
            }
            Ok(())
        })();
        if ok.is_err() {
            raw.truncate(before);
            out.bad_fdes += 1;
            continue;
        }
        out.functions.push((start, end));
        // Past the function: no rule, unless another FDE starts right there.
        raw.push(UnwindRow {
            pc: end,
            cfa_offset: 0,
            rbp_offset: 0,
            kind: RowKind::None,
            arg: 0,
        });
    }
    // Stable sort by pc, then for equal pcs keep the last real rule (a function that
    // starts where the previous one ended wins over that one's terminator).
    raw.sort_by_key(|r| r.pc);
    let mut rows: Vec<UnwindRow> = Vec::with_capacity(raw.len());
    for r in raw {
        match rows.last_mut() {
            Some(last) if last.pc == r.pc => {
                if r.kind != RowKind::None || last.kind == RowKind::None {
                    *last = r;
                }
            }
            _ => rows.push(r),
        }
    }
    rows.dedup_by(|next, prev| next.same_rule(prev));
    out.rows = rows;
    out.functions.sort_unstable();
    out
}

fn convert<R: gimli::Reader<Offset = usize>>(
    eh: &EhFrame<R>,
    row: &gimli::UnwindTableRow<usize>,
    unusual: &mut u64,
) -> UnwindRow {
    let mut r = UnwindRow {
        pc: 0,
        cfa_offset: 0,
        rbp_offset: 0,
        kind: RowKind::None,
        arg: 0,
    };
    if matches!(row.register(X86_64::RA), Some(RegisterRule::Undefined)) {
        r.kind = RowKind::End;
        return r;
    }
    match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            let Ok(off) = i32::try_from(*offset) else {
                *unusual += 1;
                return r;
            };
            r.cfa_offset = off;
            r.kind = if *register == X86_64::RSP {
                RowKind::CfaRsp
            } else if *register == X86_64::RBP {
                RowKind::CfaRbp
            } else {
                *unusual += 1;
                return r;
            };
        }
        CfaRule::Expression(e) => {
            let bytes = e
                .get(eh)
                .ok()
                .and_then(|e| e.0.to_slice().ok().map(|s| s.to_vec()));
            match bytes.as_deref().and_then(plt_threshold) {
                Some(k) => {
                    r.kind = RowKind::Plt;
                    r.arg = k;
                    return r;
                }
                None => {
                    *unusual += 1;
                    return r;
                }
            }
        }
    }
    match row.register(X86_64::RBP) {
        Some(RegisterRule::Offset(n)) => match i16::try_from(n) {
            Ok(n) if n != 0 => r.rbp_offset = n,
            _ => {
                *unusual += 1;
                r.kind = RowKind::None;
            }
        },
        None | Some(RegisterRule::SameValue) | Some(RegisterRule::Undefined) => {}
        Some(_) => {
            *unusual += 1;
            r.kind = RowKind::None;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plt_expression_is_recognised() {
        assert_eq!(
            plt_threshold(&[0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22]),
            Some(11)
        );
        assert_eq!(plt_threshold(&[0x77, 0x08]), None);
    }

    #[test]
    fn libc_table_is_sorted_and_ends_at_clone() {
        let bytes = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").expect("Debian's libc");
        let t = build(&bytes).unwrap();
        assert!(t.rows.len() > 1000, "{} rows", t.rows.len());
        assert!(t.rows.windows(2).all(|w| w[0].pc < w[1].pc));
        assert_eq!(t.bad_fdes, 0);
        // clone3's CFI marks the return address undefined in the child.
        assert!(t.rows.iter().any(|r| r.kind == RowKind::End));
        // Nearly every row is one the kernel can follow.
        let none = t.rows.iter().filter(|r| r.kind == RowKind::None).count();
        assert!(none * 4 < t.rows.len(), "{none} of {}", t.rows.len());
        assert!(t.rows.iter().any(|r| r.kind == RowKind::Plt));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(build(b"not an elf"), Err(TableError::NotElf(_))));
        let t = from_eh_frame(&[0xff; 64], &BaseAddresses::default());
        assert!(t.rows.is_empty());
    }
}
