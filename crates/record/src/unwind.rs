//! Processes, their executable mappings, and user-stack unwinding.
//!
//! The unwinder's input is deliberately small: the registers `ip`, `sp`, `bp`, a copy of
//! the user stack from `sp` upwards, and the process's mappings. A perf sample
//! (`PERF_SAMPLE_REGS_USER` + `PERF_SAMPLE_STACK_USER`) and an off-CPU snapshot taken by
//! eBPF both carry exactly that, so one code path unwinds both.
//!
//! Method per piece of code (framehop decides per address): DWARF CFI from `.eh_frame`
//! (present even in stripped binaries such as Debian's `beam.smp`) for code in an ELF
//! image; frame pointers for code outside any image (JIT code in anonymous executable
//! mappings, which the BEAM with `+JPperf true` and Node compile with frame pointers) and
//! wherever CFI is missing.
use crate::symbols::{self, KernelSymbols, SymbolTable};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use memmap2::Mmap;
use object::{Object, ObjectSection, ObjectSegment};
use std::collections::{BTreeMap, HashMap};
use std::ops::{Deref, Range};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Maximum number of user frames followed per stack.
const MAX_USER_FRAMES: usize = 1024;

/// Bytes of a mapped file, shared between the unwinder's modules and the symbolizer.
#[derive(Clone)]
pub(crate) struct Bytes {
    map: Arc<Mmap>,
    range: Range<usize>,
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// One ELF file, mapped once however many processes use it.
pub(crate) struct Image {
    pub path: PathBuf,
    map: Arc<Mmap>,
    /// `(p_offset, p_vaddr, p_filesz)` of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    symbols: OnceLock<(SymbolTable, Option<String>)>,
    /// Where to fetch separate debug files from (see [`crate::debuginfo`]).
    debuginfod: Option<Arc<crate::debuginfo::Debuginfod>>,
    #[cfg(feature = "bpf")]
    table: OnceLock<Option<kiln_bpf::unwind_table::UnwindTable>>,
    python: OnceLock<Option<Arc<crate::python::Interpreter>>>,
}

impl Image {
    fn open(path: &Path) -> Option<Image> {
        // Only regular files: a path read from a recording may name a FIFO or a device.
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let file = std::fs::File::open(path).ok()?;
        // SAFETY: the file is mapped read-only; a binary rewritten while mapped would show
        // torn bytes, which the parsers treat as malformed input, never as memory errors.
        let map = unsafe { Mmap::map(&file) }.ok()?;
        Image::from_map(path.to_path_buf(), map)
    }

    fn from_map(path: PathBuf, map: Mmap) -> Option<Image> {
        let obj = object::File::parse(&*map).ok()?;
        let segments = obj
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, s.address(), size)
            })
            .collect();
        Some(Image {
            path,
            map: Arc::new(map),
            segments,
            symbols: OnceLock::new(),
            debuginfod: None,
            #[cfg(feature = "bpf")]
            table: OnceLock::new(),
            python: OnceLock::new(),
        })
    }

    /// The CPython interpreter this image is (its executable or `libpython`), if it is one.
    pub(crate) fn python(&self) -> Option<&Arc<crate::python::Interpreter>> {
        self.python
            .get_or_init(|| {
                let name = self.path.file_name()?.to_str()?;
                crate::python::Interpreter::of(name, &self.map).map(Arc::new)
            })
            .as_ref()
    }

    /// This kernel's vDSO, the same image in every process: a copy of the one mapped in
    /// this process (its symbols name `clock_gettime`'s code; its CFI unwinds it).
    fn vdso() -> Option<Image> {
        let maps = std::fs::read("/proc/self/maps").ok()?;
        let line = maps
            .split(|&b| b == b'\n')
            .find(|l| l.ends_with(b"[vdso]"))?;
        let dash = line.iter().position(|&b| b == b'-')?;
        let space = line.iter().position(|&b| b == b' ')?;
        let lo = symbols::parse_hex(&line[..dash])?;
        let hi = symbols::parse_hex(line.get(dash + 1..space)?)?;
        let len = usize::try_from(hi.checked_sub(lo)?).ok()?;
        let mut copy = memmap2::MmapMut::map_anon(len).ok()?;
        let mem = std::fs::File::open("/proc/self/mem").ok()?;
        std::os::unix::fs::FileExt::read_exact_at(&mem, &mut copy, lo).ok()?;
        Image::from_map(PathBuf::from("[vdso]"), copy.make_read_only().ok()?)
    }

    /// The image's unwind table (from `.eh_frame`), built on first use; `None` when the
    /// image has no usable `.eh_frame`.
    #[cfg(feature = "bpf")]
    pub fn unwind_table(&self) -> Option<&kiln_bpf::unwind_table::UnwindTable> {
        self.table
            .get_or_init(|| kiln_bpf::unwind_table::build(&self.map).ok())
            .as_ref()
    }

    /// The unwind table if it was built already (by the tables thread, see
    /// [`Images::with_tables_thread`]): `None` while it is not.
    #[cfg(feature = "bpf")]
    pub(crate) fn unwind_table_if_built(
        &self,
    ) -> Option<Option<&kiln_bpf::unwind_table::UnwindTable>> {
        self.table.get().map(Option::as_ref)
    }

    /// The start of the function (FDE) that contains `svma`: code without a symbol is
    /// named after it, so that samples anywhere in one stripped function share a frame.
    pub(crate) fn function_start(&self, svma: u64) -> Option<u64> {
        #[cfg(feature = "bpf")]
        {
            let f = &self.unwind_table()?.functions;
            let i = f.partition_point(|&(start, _)| start <= svma);
            let (start, end) = *f.get(i.checked_sub(1)?)?;
            (svma < end).then_some(start)
        }
        #[cfg(not(feature = "bpf"))]
        {
            let _ = svma;
            None
        }
    }

    /// Converts a file offset into the address the ELF file states for it.
    pub(crate) fn svma_of_offset(&self, off: u64) -> u64 {
        for &(p_off, vaddr, size) in &self.segments {
            if off >= p_off && off < p_off + size.max(1) {
                return off - p_off + vaddr;
            }
        }
        off
    }

    /// `base_avma` for a mapping at `start` of file offset `pgoff`: where the image's
    /// stated address 0 is mapped (runtime address = stated address + base).
    pub(crate) fn base_avma(&self, start: u64, pgoff: u64) -> u64 {
        for &(p_off, vaddr, size) in &self.segments {
            let aligned = p_off & !0xfff;
            if pgoff >= aligned && pgoff < p_off + size.max(1) {
                return (start + p_off).wrapping_sub(pgoff).wrapping_sub(vaddr);
            }
        }
        start.wrapping_sub(pgoff)
    }

    fn section(&self, obj: &object::File<'_>, name: &str) -> Option<(Range<u64>, Bytes)> {
        let s = obj.section_by_name(name)?;
        let (off, size) = s.file_range()?;
        let range = off as usize..(off + size) as usize;
        if range.end > self.map.len() {
            return None;
        }
        Some((
            s.address()..s.address() + s.size(),
            Bytes {
                map: self.map.clone(),
                range,
            },
        ))
    }

    fn module(&self, avma: Range<u64>, pgoff: u64) -> Option<Module<Bytes>> {
        let obj = object::File::parse(&**self.map).ok()?;
        let mut info = ExplicitModuleSectionInfo::<Bytes> {
            base_svma: 0,
            text_svma: None,
            text: None,
            stubs_svma: None,
            stub_helper_svma: None,
            got_svma: None,
            unwind_info: None,
            eh_frame_svma: None,
            eh_frame: None,
            eh_frame_hdr_svma: None,
            eh_frame_hdr: None,
            debug_frame: None,
            text_segment_svma: None,
            text_segment: None,
        };
        if let Some((r, b)) = self.section(&obj, ".text") {
            info.text_svma = Some(r);
            info.text = Some(b);
        }
        if let Some((r, b)) = self.section(&obj, ".eh_frame") {
            info.eh_frame_svma = Some(r);
            info.eh_frame = Some(b);
        }
        if let Some((r, b)) = self.section(&obj, ".eh_frame_hdr") {
            info.eh_frame_hdr_svma = Some(r);
            info.eh_frame_hdr = Some(b);
        }
        if let Some((_, b)) = self.section(&obj, ".debug_frame") {
            info.debug_frame = Some(b);
        }
        if let Some(s) = obj.section_by_name(".got") {
            info.got_svma = Some(s.address()..s.address() + s.size());
        }
        let base = self.base_avma(avma.start, pgoff);
        Some(Module::new(
            self.path.to_string_lossy().into_owned(),
            avma,
            base,
            info,
        ))
    }

    /// The symbol table, from the file itself or, when it is stripped, from a separate
    /// debug file (see [`crate::debuginfo`]).
    pub fn symbols(&self) -> &SymbolTable {
        &self.symbols_and_note().0
    }

    /// Why a stripped image has no more symbols than its own (no debug file found,
    /// what debuginfod answered), if it has not.
    pub(crate) fn symbols_note(&self) -> Option<&str> {
        self.symbols_and_note().1.as_deref()
    }

    /// The image's build id in hexadecimal, if it has one.
    pub fn build_id(&self) -> Option<String> {
        let obj = object::File::parse(&**self.map).ok()?;
        crate::debuginfo::build_id_hex(&obj)
    }

    fn symbols_and_note(&self) -> &(SymbolTable, Option<String>) {
        self.symbols.get_or_init(|| {
            let Ok(obj) = object::File::parse(&**self.map) else {
                return (SymbolTable::default(), None);
            };
            let own = SymbolTable::from_elf(&obj);
            if symbols::has_symtab(&obj) {
                return (own, None);
            }
            for (cand, crc) in crate::debuginfo::local_candidates(&self.path, &obj) {
                if let Some(t) = debug_symbols(&cand, crc) {
                    if t.len() > own.len() {
                        return (t, None);
                    }
                }
            }
            let hex = crate::debuginfo::build_id_hex(&obj);
            let note = match (&self.debuginfod, &hex) {
                (Some(d), Some(hex)) => match d.debuginfo(hex) {
                    Ok(p) => match debug_symbols(&p, None) {
                        Some(t) if t.len() > own.len() => return (t, None),
                        _ => format!("debuginfod's file {} adds no symbols", p.display()),
                    },
                    Err(e) => format!("debuginfod: {e}"),
                },
                (Some(_), None) => "no build id to ask debuginfod for".to_string(),
                (None, _) => "stripped; no debug file found".to_string(),
            };
            (own, Some(note))
        })
    }
}

/// The symbols of a separate debug file, if it is one (and has the CRC asked for).
fn debug_symbols(path: &Path, crc: Option<u32>) -> Option<SymbolTable> {
    let dbg = Image::open(path)?;
    if crc.is_some_and(|c| !crate::debuginfo::crc_matches(&dbg.map, c)) {
        return None;
    }
    let o = object::File::parse(&**dbg.map).ok()?;
    Some(SymbolTable::from_elf(&o))
}

/// All ELF images seen, indexed by a small id.
#[derive(Default)]
pub(crate) struct Images {
    by_path: HashMap<PathBuf, Option<u32>>,
    pub list: Vec<Arc<Image>>,
    /// Whether `[vdso]` mappings are this kernel's vDSO (live processes, not a
    /// perf.data file from who knows where).
    pub live_vdso: bool,
    vdso: Option<Option<u32>>,
    /// Where new images go to have their tables built (see [`Images::with_tables_thread`]).
    tables: Option<std::sync::mpsc::Sender<Arc<Image>>>,
    /// The debuginfod client new images use, if any.
    pub debuginfod: Option<Arc<crate::debuginfo::Debuginfod>>,
}

impl Images {
    /// No images yet; `live_vdso` as the field says.
    pub fn new(live_vdso: bool) -> Images {
        Images {
            live_vdso,
            ..Images::default()
        }
    }

    /// Like [`Images::new`], with a second thread that builds each new image's tables
    /// as soon as it is seen: first its unwind table (which the in-kernel unwinder
    /// needs before it can walk the image's code), then, when no unwind table is
    /// waiting, its symbol table (which naming needs when the recording ends). The
    /// thread that reads the ring buffers then never stops to parse an ELF file, and
    /// the names are ready, or nearly, when sampling stops. The thread also parses
    /// `kallsyms` first thing, into the returned cell.
    pub(crate) fn with_tables_thread(live_vdso: bool) -> (Images, Arc<OnceLock<KernelSymbols>>) {
        let (tx, rx) = std::sync::mpsc::channel::<Arc<Image>>();
        let kallsyms = Arc::new(OnceLock::new());
        let k = kallsyms.clone();
        let spawned = std::thread::Builder::new()
            .name("kiln-tables".into())
            .spawn(move || {
                k.get_or_init(KernelSymbols::read);
                let mut named: Vec<Arc<Image>> = Vec::new();
                loop {
                    let img = match rx.try_recv() {
                        Ok(img) => img,
                        Err(std::sync::mpsc::TryRecvError::Empty) => match named.pop() {
                            Some(img) => {
                                img.symbols();
                                continue;
                            }
                            None => match rx.recv() {
                                Ok(img) => img,
                                Err(_) => break,
                            },
                        },
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                    };
                    #[cfg(feature = "bpf")]
                    img.unwind_table();
                    named.push(img);
                }
                // The recording is over: names are built where they are needed.
            });
        let images = Images {
            live_vdso,
            tables: spawned.ok().map(|_| tx),
            ..Images::default()
        };
        (images, kallsyms)
    }

    fn added(&mut self, mut img: Image) -> u32 {
        img.debuginfod = self.debuginfod.clone();
        let img = Arc::new(img);
        if let Some(tx) = &self.tables {
            let _ = tx.send(img.clone());
        }
        self.list.push(img);
        (self.list.len() - 1) as u32
    }

    /// Whether a tables thread builds the images' tables (otherwise whoever needs a table
    /// builds it).
    #[cfg(feature = "bpf")]
    pub(crate) fn tables_thread(&self) -> bool {
        self.tables.is_some()
    }

    /// The id of this kernel's vDSO image, if it can be read.
    pub(crate) fn vdso(&mut self) -> Option<u32> {
        if !self.live_vdso {
            return None;
        }
        if let Some(id) = self.vdso {
            return id;
        }
        let id = Image::vdso().map(|img| self.added(img));
        self.vdso = Some(id);
        id
    }

    pub fn get(&mut self, path: &Path) -> Option<u32> {
        if let Some(&id) = self.by_path.get(path) {
            return id;
        }
        let id = Image::open(path).map(|img| self.added(img));
        self.by_path.insert(path.to_path_buf(), id);
        id
    }
}

/// What is mapped at an address range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MapKind {
    /// A file we could open as ELF (image id).
    Elf(u32),
    /// Anonymous or unreadable: JIT code, or a file that is gone.
    Anon,
    /// A kernel-provided or unreadable named mapping (`[vdso]`, a deleted file).
    Named(Box<[u8]>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub end: u64,
    pub pgoff: u64,
    pub kind: MapKind,
}

/// Where a user address points, resolved at sample time (mappings change later).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum UserLoc {
    /// In an ELF image, at a stated address.
    Elf { image: u32, svma: u64 },
    /// Outside any image: JIT code of `pid`.
    Jit { pid: u32, addr: u64 },
    /// In a named mapping with no symbols.
    Named { name: Box<[u8]> },
}

/// A process: its executable mappings and an unwinder built from them.
pub(crate) struct Process {
    maps: BTreeMap<u64, Mapping>,
    unwinder: UnwinderX86_64<Bytes>,
    cache: CacheX86_64,
}

impl Process {
    pub fn empty() -> Process {
        Process {
            maps: BTreeMap::new(),
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
        }
    }

    /// A process known from `/proc/<pid>/maps` (empty if it is gone).
    pub(crate) fn from_proc(pid: u32, images: &mut Images) -> Process {
        let text = std::fs::read(format!("/proc/{pid}/maps")).unwrap_or_default();
        Process::from_maps(&text, images)
    }

    /// A process known from the text of its `/proc/<pid>/maps`.
    pub(crate) fn from_maps(text: &[u8], images: &mut Images) -> Process {
        let mut p = Process::empty();
        for line in text.split(|&b| b == b'\n') {
            if let Some((start, end, pgoff, path)) = parse_maps_line(line) {
                p.add_mapping(start, end, pgoff, path, images);
            }
        }
        p
    }

    /// Whether both list the same executable mappings.
    #[cfg(feature = "bpf")]
    pub(crate) fn same_mappings(&self, other: &Process) -> bool {
        self.maps == other.maps
    }

    /// A copy for a forked child (same mappings, fresh unwinder cache).
    pub fn fork(&self) -> Process {
        Process {
            maps: self.maps.clone(),
            unwinder: self.unwinder.clone(),
            cache: CacheX86_64::new(),
        }
    }

    /// Adds an executable mapping (from `/proc/<pid>/maps` or an `MMAP2` record).
    pub(crate) fn add_mapping(
        &mut self,
        start: u64,
        end: u64,
        pgoff: u64,
        path: &[u8],
        images: &mut Images,
    ) {
        if end <= start {
            return;
        }
        // Remove what the new mapping replaces.
        let overlapping: Vec<u64> = self
            .maps
            .range(..end)
            .rev()
            .take_while(|(_, m)| m.end > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            if let Some(m) = self.maps.remove(&s) {
                if matches!(m.kind, MapKind::Elf(_)) {
                    self.unwinder.remove_module(s);
                }
            }
        }
        let kind = if path.is_empty() || path.starts_with(b"//anon") || path.starts_with(b"[anon") {
            MapKind::Anon
        } else if path.starts_with(b"/") && !path.ends_with(b" (deleted)") {
            let p = Path::new(std::ffi::OsStr::from_bytes(path));
            match images.get(p) {
                Some(id) => MapKind::Elf(id),
                None => MapKind::Named(path.into()),
            }
        } else if path.starts_with(b"/memfd:") || path.starts_with(b"/dev/zero") {
            MapKind::Anon
        } else if path == b"[vdso]" {
            match images.vdso() {
                Some(id) => MapKind::Elf(id),
                None => MapKind::Named(path.into()),
            }
        } else {
            MapKind::Named(path.into())
        };
        if let MapKind::Elf(id) = kind {
            if let Some(m) = images.list[id as usize].module(start..end, pgoff) {
                self.unwinder.add_module(m);
            }
        }
        self.maps.insert(start, Mapping { end, pgoff, kind });
    }

    /// The executable mappings, by start address.
    pub fn mappings(&self) -> impl Iterator<Item = (u64, &Mapping)> {
        self.maps.iter().map(|(&s, m)| (s, m))
    }

    /// Where `addr` points.
    pub(crate) fn locate(&self, addr: u64, pid: u32, images: &Images) -> UserLoc {
        match self.maps.range(..=addr).next_back() {
            Some((&start, m)) if addr < m.end => match &m.kind {
                MapKind::Elf(id) => UserLoc::Elf {
                    image: *id,
                    svma: images.list[*id as usize].svma_of_offset(addr - start + m.pgoff),
                },
                MapKind::Anon => UserLoc::Jit { pid, addr },
                MapKind::Named(n) => UserLoc::Named { name: n.clone() },
            },
            _ => UserLoc::Jit { pid, addr },
        }
    }

    /// Unwinds a user stack: `stack` holds the memory from `sp` upwards. Calls `f` with
    /// each frame's lookup address (the instruction pointer, then return address - 1),
    /// leaf first. `fp_chain` is the kernel's frame-pointer walk taken with the same
    /// sample (instruction pointer first, then return addresses), or empty. Returns the
    /// number of frames.
    pub fn unwind(
        &mut self,
        ip: u64,
        sp: u64,
        bp: u64,
        stack: &[u8],
        fp_chain: &[u64],
        mut f: impl FnMut(u64),
    ) -> usize {
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = addr.checked_sub(sp).ok_or(())? as usize;
            let b = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
        };
        let in_copy = |a: u64| a >= sp && a.saturating_add(16) <= sp + stack.len() as u64;
        let mut regs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut addr = FrameAddress::InstructionPointer(ip);
        let mut frames = 0;
        loop {
            f(addr.address_for_lookup());
            frames += 1;
            if frames >= MAX_USER_FRAMES {
                break;
            }
            let frame_bp = regs.bp();
            match self
                .unwinder
                .unwind_frame(addr, &mut regs, &mut self.cache, &mut read)
            {
                Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                    Some(a) => addr = a,
                    None => break,
                },
                Ok(None) => break,
                Err(_) => {
                    let jit = !matches!(
                        self.maps.range(..=addr.address()).next_back(),
                        Some((_, m)) if addr.address() < m.end && matches!(m.kind, MapKind::Elf(_))
                    );
                    // The copy ends where a JIT frame's frame pointer leads out of it.
                    // When no frame in between changed rbp, the kernel's frame-pointer
                    // walk of this sample started from the same frame: go on with it.
                    if jit && !in_copy(frame_bp) && frame_bp == bp && fp_chain.len() > 1 {
                        for &ra in &fp_chain[1..] {
                            f(ra.saturating_sub(1));
                            frames += 1;
                        }
                    }
                    break;
                }
            }
        }
        frames
    }
}

/// Splits a `/proc/<pid>/maps` line into `(start, end, offset, path)`, executable ones only.
pub(crate) fn parse_maps_line(line: &[u8]) -> Option<(u64, u64, u64, &[u8])> {
    let mut fields = line.splitn(6, |&b| b == b' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let off = fields.next()?;
    let _dev = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next().unwrap_or(b"");
    if perms.get(2) != Some(&b'x') {
        return None;
    }
    let dash = range.iter().position(|&b| b == b'-')?;
    let start = symbols::parse_hex(&range[..dash])?;
    let end = symbols::parse_hex(&range[dash + 1..])?;
    let off = symbols::parse_hex(off)?;
    let path = trim_start(path);
    Some((start, end, off, path))
}

fn trim_start(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|&c| c != b' ').unwrap_or(b.len());
    &b[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let l = b"7f12a000-7f12b000 r-xp 00002000 08:01 1234      /usr/lib/libc.so.6";
        assert_eq!(
            parse_maps_line(l),
            Some((0x7f12a000, 0x7f12b000, 0x2000, &b"/usr/lib/libc.so.6"[..]))
        );
        assert_eq!(
            parse_maps_line(b"7f12a000-7f12b000 rw-p 00000000 00:00 0"),
            None
        );
        assert_eq!(
            parse_maps_line(b"7f12a000-7f12b000 rwxp 00000000 00:00 0 "),
            Some((0x7f12a000, 0x7f12b000, 0, &b""[..]))
        );
    }
}
