//! Python frames, as py-spy names them, in place of the interpreter's evaluation loop.
//!
//! A CPython process's native stack says where the interpreter is (`_PyEval_EvalFrameDefault`,
//! `_PyLong_Add`), not which Python function it runs. The interpreter keeps its own frames:
//! per thread, a `PyThreadState` whose current frame links to its callers'. The in-kernel
//! sampler reads that chain at each sample (see kiln-bpf's sampler: the code object and the
//! instruction of each frame, innermost first) with the layout this module gives it for the
//! process's version ([`Layout`], a table of field offsets per minor version, 3.10 to 3.13 on
//! x86-64). Here they are named and merged:
//!
//! * **Naming.** Each code object is read once from the process's memory (cached by address):
//!   its qualified name (`Handler.do_GET`; 3.10 has only the bare name), its file and its
//!   line table. A frame reads `qualname (file:line)`, the line where it stood, the file
//!   shortened as py-spy does (from its outermost package: `http/server.py`), so kiln's and
//!   py-spy's stacks read alike.
//! * **Merging** (py-spy's `--native`): each native frame in the interpreter's evaluation
//!   loop is replaced by the Python frames it was running (3.11 and later run nested
//!   Python calls in one loop: their frames up to the one marked as the loop's entry; 3.12
//!   and 3.13 mark the entries with shim frames), innermost last from the root. The
//!   interpreter's other C functions in such a stack are left out, as py-spy leaves them out,
//!   except those of the modules it keeps (`time_sleep`, `os_read`, `gc_collect_main`,
//!   locks: where a Python program waits or collects); C extensions, libc and the kernel
//!   stay. Python frames the native stack has no loop frame for (its walk ended early)
//!   go at its root side.
//!
//! Everything read from the process is untrusted: lengths are bounded, line tables are
//! decoded within their bytes, and an object that is not a code object (checked against
//! the interpreter's `PyCode_Type`) gives no frame. A process that exec'd, freed a code
//! object or changed under the read gives wrong names at worst, never a panic.
use object::{Object, ObjectSection, ObjectSymbol};
use std::collections::HashMap;
use std::ops::Range;

/// Longest name or file name read from a process, in characters.
const MAX_STRING: u64 = 4096;
/// Longest line table read, in bytes.
const MAX_LINE_TABLE: u64 = 1 << 20;

/// How a version encodes a code object's line numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineTable {
    /// 3.10's `co_linetable`: (bytecode delta, line delta) byte pairs.
    Pairs,
    /// 3.11 and later: the location table (`Objects/locations.md`).
    Locations,
}

/// Where one CPython minor version keeps what kiln reads, in bytes from the start of each
/// structure (x86-64, the default build: no debug, no free threading). The values come
/// from the version's headers (`offsetof` in a program compiled against them, which the
/// python test does for every interpreter it finds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layout {
    /// The version, `(3, minor)`.
    pub version: (u8, u8),
    /// `_PyRuntimeState.interpreters.head`.
    pub runtime_interp_head: u16,
    /// `PyInterpreterState`: its first thread state (`tstate_head`, `threads.head`).
    pub interp_threads: u16,
    /// `PyThreadState.next`.
    pub tstate_next: u16,
    /// `PyThreadState.thread_id`: the thread's `pthread_self()`.
    pub tstate_thread_id: u16,
    /// `PyThreadState`: its frame (3.10's `frame`, 3.13's `current_frame`) or its
    /// `_PyCFrame` (3.11 and 3.12's `cframe`).
    pub tstate_frame: u16,
    /// `_PyCFrame.current_frame` (3.11, 3.12).
    pub cframe_frame: Option<u16>,
    /// The frame's code object (`f_code`; 3.13's `f_executable`).
    pub frame_code: u16,
    /// The caller's frame (`f_back`, `previous`).
    pub frame_previous: u16,
    /// Where the frame stands: `f_lasti` (3.10, an index of 2-byte code units),
    /// `prev_instr` (3.11, 3.12) or `instr_ptr` (3.13), pointers into the code object.
    pub frame_instr: u16,
    /// Whether `frame_instr` is an index (3.10) rather than a pointer.
    pub instr_is_index: bool,
    /// `_PyInterpreterFrame.is_entry` (3.11).
    pub frame_entry: Option<u16>,
    /// `_PyInterpreterFrame.owner` (3.11 and later).
    pub frame_owner: Option<u16>,
    /// The `owner` of the C stack's shim frames that mark where an evaluation loop was
    /// entered (3.12 and later: `FRAME_OWNED_BY_CSTACK`).
    pub shim_owner: Option<u8>,
    /// `PyCodeObject`: its name (`co_qualname`, 3.11 and later; 3.10's `co_name`).
    pub code_name: u16,
    /// `PyCodeObject.co_filename`.
    pub code_filename: u16,
    /// `PyCodeObject.co_firstlineno` (4 bytes).
    pub code_first_line: u16,
    /// `PyCodeObject.co_linetable`.
    pub code_line_table: u16,
    /// `PyCodeObject.co_code_adaptive`: where the bytecode starts (3.11 and later).
    pub code_bytecode: Option<u16>,
    /// The line table's encoding.
    pub line_table: LineTable,
    /// `sizeof(PyASCIIObject)`: where a compact ASCII string's characters start.
    pub ascii_size: u16,
    /// `sizeof(PyCompactUnicodeObject)`: where a compact non-ASCII string's start.
    pub compact_size: u16,
}

/// The versions kiln reads, by minor version.
const LAYOUTS: [Layout; 4] = [
    Layout {
        version: (3, 10),
        runtime_interp_head: 32,
        interp_threads: 8,
        tstate_next: 8,
        tstate_thread_id: 176,
        tstate_frame: 24,
        cframe_frame: None,
        frame_code: 32,
        frame_previous: 24,
        frame_instr: 96,
        instr_is_index: true,
        frame_entry: None,
        frame_owner: None,
        shim_owner: None,
        code_name: 112,
        code_filename: 104,
        code_first_line: 40,
        code_line_table: 120,
        code_bytecode: None,
        line_table: LineTable::Pairs,
        ascii_size: 48,
        compact_size: 72,
    },
    Layout {
        version: (3, 11),
        runtime_interp_head: 40,
        interp_threads: 16,
        tstate_next: 8,
        tstate_thread_id: 152,
        tstate_frame: 56,
        cframe_frame: Some(8),
        frame_code: 32,
        frame_previous: 48,
        frame_instr: 56,
        instr_is_index: false,
        frame_entry: Some(68),
        frame_owner: Some(69),
        shim_owner: None,
        code_name: 128,
        code_filename: 112,
        code_first_line: 72,
        code_line_table: 136,
        code_bytecode: Some(184),
        line_table: LineTable::Locations,
        ascii_size: 48,
        compact_size: 72,
    },
    Layout {
        version: (3, 12),
        runtime_interp_head: 40,
        interp_threads: 72,
        tstate_next: 8,
        tstate_thread_id: 136,
        tstate_frame: 56,
        cframe_frame: Some(0),
        frame_code: 0,
        frame_previous: 8,
        frame_instr: 56,
        instr_is_index: false,
        frame_entry: None,
        frame_owner: Some(70),
        shim_owner: Some(3),
        code_name: 128,
        code_filename: 112,
        code_first_line: 68,
        code_line_table: 136,
        code_bytecode: Some(192),
        line_table: LineTable::Locations,
        ascii_size: 40,
        compact_size: 56,
    },
    Layout {
        version: (3, 13),
        runtime_interp_head: 632,
        interp_threads: 7344,
        tstate_next: 8,
        tstate_thread_id: 152,
        tstate_frame: 72,
        cframe_frame: None,
        frame_code: 0,
        frame_previous: 8,
        frame_instr: 56,
        instr_is_index: false,
        frame_entry: None,
        frame_owner: Some(70),
        shim_owner: Some(3),
        code_name: 128,
        code_filename: 112,
        code_first_line: 68,
        code_line_table: 136,
        code_bytecode: Some(200),
        line_table: LineTable::Locations,
        ascii_size: 40,
        compact_size: 56,
    },
];

/// The layout of CPython `major.minor`, if kiln knows it.
pub fn layout(major: u8, minor: u8) -> Option<&'static Layout> {
    LAYOUTS.iter().find(|l| l.version == (major, minor))
}

/// The versions kiln reads, as `3.10, 3.11, …` for messages.
pub fn known_versions() -> String {
    LAYOUTS
        .iter()
        .map(|l| format!("{}.{}", l.version.0, l.version.1))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A process's memory, or anything that pretends to be (a fuzz target's bytes).
pub trait Memory {
    /// Fills `buf` from `addr`; false when any of it cannot be read.
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool;
}

/// The memory of a live process, through `/proc/PID/mem`.
#[derive(Debug)]
pub struct ProcMemory(std::fs::File);

impl ProcMemory {
    /// Opens process `pid`'s memory (needs the right to ptrace it: root, or the same user
    /// with `kernel.yama.ptrace_scope` 0).
    pub fn open(pid: u32) -> std::io::Result<ProcMemory> {
        std::fs::File::open(format!("/proc/{pid}/mem")).map(ProcMemory)
    }
}

impl Memory for ProcMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, addr).is_ok()
    }
}

fn read_u64(mem: &dyn Memory, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read(addr, &mut b).then(|| u64::from_le_bytes(b))
}

fn read_u32(mem: &dyn Memory, addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    mem.read(addr, &mut b).then(|| u32::from_le_bytes(b))
}

/// A `str` object's characters as UTF-8 (compact strings only: every name a code object
/// holds); `None` when it is not one, or longer than [`MAX_STRING`].
pub fn read_str(mem: &dyn Memory, layout: &Layout, addr: u64) -> Option<String> {
    let len = read_u64(mem, addr.checked_add(16)?)?;
    let state = read_u32(mem, addr.checked_add(32)?)?;
    let (kind, compact, ascii) = (
        (state >> 2) & 7,
        state & (1 << 5) != 0,
        state & (1 << 6) != 0,
    );
    if !compact || len > MAX_STRING {
        return None;
    }
    let width = match kind {
        1 | 2 | 4 => kind as usize,
        _ => return None,
    };
    let data = addr.checked_add(u64::from(if ascii {
        layout.ascii_size
    } else {
        layout.compact_size
    }))?;
    let mut raw = vec![0u8; len as usize * width];
    if !mem.read(data, &mut raw) {
        return None;
    }
    if ascii {
        return String::from_utf8(raw).ok().filter(|s| s.is_ascii());
    }
    raw.chunks_exact(width)
        .map(|c| {
            let mut v = [0u8; 4];
            v[..width].copy_from_slice(c);
            char::from_u32(u32::from_le_bytes(v))
        })
        .collect()
}

/// A `bytes` object's contents; `None` when longer than `max`.
fn read_bytes(mem: &dyn Memory, addr: u64, max: u64) -> Option<Vec<u8>> {
    let len = read_u64(mem, addr.checked_add(16)?)?;
    if len > max {
        return None;
    }
    let mut v = vec![0u8; len as usize];
    mem.read(addr.checked_add(32)?, &mut v).then_some(v)
}

/// What a code object says of itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    /// Its qualified name (3.10: its name).
    pub name: String,
    /// Its file, as the code was compiled from it.
    pub file: String,
    /// The line of its `def` (or of its first statement).
    pub first_line: u32,
    /// Its line table (empty when unreadable or too long: lines are then unknown).
    pub line_table: Vec<u8>,
}

/// Reads the code object at `addr`; `None` when it is not one (its type is not
/// `code_type`, when given) or its names cannot be read.
pub fn read_code(
    mem: &dyn Memory,
    layout: &Layout,
    addr: u64,
    code_type: Option<u64>,
) -> Option<Code> {
    if let Some(t) = code_type {
        if read_u64(mem, addr.checked_add(8)?)? != t {
            return None;
        }
    }
    let field = |off: u16| read_u64(mem, addr.checked_add(u64::from(off))?);
    let name = read_str(mem, layout, field(layout.code_name)?)?;
    let file = read_str(mem, layout, field(layout.code_filename)?)?;
    let first_line = read_u32(mem, addr.checked_add(u64::from(layout.code_first_line))?)?;
    let line_table = field(layout.code_line_table)
        .and_then(|t| read_bytes(mem, t, MAX_LINE_TABLE))
        .unwrap_or_default();
    Some(Code {
        name,
        file,
        first_line: first_line.min(i32::MAX as u32),
        line_table,
    })
}

/// The line a frame of `code` stands at, `instr` being what the sampler read of it
/// ([`FrameRef::instr`]); 0 when unknown.
pub fn line_of(layout: &Layout, code: &Code, instr: u32) -> u32 {
    // The byte offset of the instruction in the bytecode, as CPython computes it for
    // PyFrame_GetLineNumber: 3.10's f_lasti counts code units; 3.11 and later keep a
    // pointer into the code object, whose bytecode starts at co_code_adaptive.
    let offset = match layout.code_bytecode {
        None => i64::from(instr as i32) * 2,
        Some(start) => {
            let from_start = i64::from(instr) - i64::from(start);
            if from_start % 2 != 0 || from_start > i64::from(u32::MAX) {
                return 0;
            }
            from_start
        }
    };
    if offset < 0 {
        return code.first_line;
    }
    let line = match layout.line_table {
        LineTable::Pairs => line_in_pairs(&code.line_table, code.first_line, offset as u64),
        LineTable::Locations => line_in_locations(&code.line_table, code.first_line, offset as u64),
    };
    line.unwrap_or(0)
}

/// 3.10: byte pairs (bytecode bytes, signed line delta; -128 for none).
fn line_in_pairs(table: &[u8], first: u32, offset: u64) -> Option<u32> {
    let (mut end, mut line) = (0u64, i64::from(first));
    for pair in table.chunks_exact(2) {
        let start = end;
        end += u64::from(pair[0]);
        let delta = pair[1] as i8;
        let this = if delta == -128 {
            None
        } else {
            line += i64::from(delta);
            Some(line)
        };
        if start <= offset && offset < end {
            return this.and_then(|l| u32::try_from(l).ok());
        }
    }
    None
}

/// 3.11 and later: the location table, one entry per run of code units.
fn line_in_locations(table: &[u8], first: u32, offset: u64) -> Option<u32> {
    let (mut i, mut end, mut line) = (0usize, 0u64, i64::from(first));
    while i < table.len() {
        let head = table[i];
        if head & 0x80 == 0 {
            return None; // not the start of an entry: a damaged table
        }
        let code = (head >> 3) & 15;
        let start = end;
        end += (u64::from(head & 7) + 1) * 2;
        let delta = match code {
            15 => None,
            13 | 14 => Some(signed_varint(table.get(i + 1..).unwrap_or_default())?),
            10..=12 => Some(i64::from(code - 10)),
            _ => Some(0),
        };
        if let Some(d) = delta {
            // A damaged table's deltas may add past any line: no line, not a wrap.
            line = line.checked_add(d)?;
        }
        if start <= offset && offset < end {
            return delta.and_then(|_| u32::try_from(line).ok());
        }
        i += 1;
        while i < table.len() && table[i] & 0x80 == 0 {
            i += 1;
        }
    }
    None
}

/// A location table's signed varint: 6-bit groups, least significant first, bit 6 set on
/// all but the last; the lowest bit of the value is its sign.
fn signed_varint(b: &[u8]) -> Option<i64> {
    let mut v = 0u64;
    for (k, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 63) << (6 * k);
        if byte & 64 == 0 {
            let mag = (v >> 1) as i64;
            return Some(if v & 1 != 0 { -mag } else { mag });
        }
    }
    None
}

/// One frame as the sampler read it (kiln-bpf's `PythonFrame`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameRef {
    /// The code object's address.
    pub code: u64,
    /// The instruction pointer's offset from the code object's address (3.11 and later),
    /// or the instruction index (3.10).
    pub instr: u32,
    /// The frame's `is_entry` byte (3.11).
    pub entry: u8,
    /// The frame's `owner` byte (3.11 and later).
    pub owner: u8,
}

/// Splits a thread's frames (innermost first) into the runs each native evaluation loop
/// ran, innermost first: the ranges of real frames (3.12's and 3.13's shim frames belong
/// to none). Every frame is in at most one run; at most `frames.len()` runs.
pub fn loop_runs(layout: &Layout, frames: &[FrameRef]) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for (i, f) in frames.iter().enumerate() {
        if layout.shim_owner.is_some_and(|o| f.owner == o) {
            runs.push(start..i);
            start = i + 1;
        } else if layout.frame_entry.is_none() && layout.shim_owner.is_none() {
            // 3.10: one loop per frame.
            runs.push(i..i + 1);
            start = i + 1;
        } else if layout.frame_entry.is_some() && f.entry != 0 {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < frames.len() {
        runs.push(start..frames.len());
    }
    runs
}

/// Whether the shim frames of 3.12 and later mark frame `f` as no Python function's.
pub fn is_shim(layout: &Layout, f: &FrameRef) -> bool {
    layout.shim_owner.is_some_and(|o| f.owner == o)
}

/// Whether py-spy keeps a C function of the interpreter in a merged stack: those of the
/// modules where a program waits or collects (`time_sleep`, `os_read`, `gc_collect_main`,
/// `PyThread_acquire_lock_timed`, `lock_PyThread_acquire_lock`, `_sre_…`), not those of
/// the machinery (`_PyEval_Vector`, `_PyLong_Add`, `take_gil`).
pub fn keeps_interpreter_function(name: &[u8]) -> bool {
    const KEPT: [&[u8]; 11] = [
        b"time",
        b"sys",
        b"gc",
        b"os",
        b"unicode",
        b"thread",
        b"stringio",
        b"sre",
        b"PyGilState",
        b"PyThread",
        b"lock",
    ];
    name.split(|&b| b == b'_' || b == b'.')
        .find(|t| !t.is_empty())
        .is_some_and(|t| KEPT.contains(&t))
}

/// Whether a native function is the interpreter's evaluation loop (or a part the compiler
/// split off it: `_PyEval_EvalFrameDefault.cold`).
pub fn is_eval_loop(name: &[u8]) -> bool {
    name == b"_PyEval_EvalFrameDefault" || name.starts_with(b"_PyEval_EvalFrameDefault.")
}

/// A CPython interpreter image (the `python3.X` executable or `libpython3.X.so`): its
/// version and where its runtime state and code type are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    /// `(major, minor)`, from `Py_Version` or, before 3.11, from the file's name.
    pub version: (u8, u8),
    /// `_PyRuntime`'s stated address.
    pub runtime: u64,
    /// `PyCode_Type`'s stated address, if exported.
    pub code_type: Option<u64>,
    /// The evaluation loop's code, stated addresses.
    pub eval_loop: Vec<Range<u64>>,
}

impl Interpreter {
    /// The interpreter in the ELF file `data` named `file_name`, if it is one.
    pub fn of(file_name: &str, data: &[u8]) -> Option<Interpreter> {
        let named = version_in_name(file_name);
        if named.is_none() && !file_name.contains("python") {
            return None;
        }
        let obj = object::File::parse(data).ok()?;
        let mut runtime = None;
        let mut code_type = None;
        let mut eval_loop = Vec::new();
        let mut version = None;
        for sym in obj.symbols().chain(obj.dynamic_symbols()) {
            let Ok(name) = sym.name_bytes() else { continue };
            match name {
                b"_PyRuntime" => runtime = Some(sym.address()),
                b"PyCode_Type" => code_type = Some(sym.address()),
                b"Py_Version" => version = version.or_else(|| symbol_u32(&obj, &sym)),
                n if is_eval_loop(n) && sym.size() > 0 => {
                    let r = sym.address()..sym.address() + sym.size();
                    if !eval_loop.contains(&r) {
                        eval_loop.push(r);
                    }
                }
                _ => {}
            }
        }
        let version = version
            .map(|hex| ((hex >> 24) as u8, (hex >> 16) as u8))
            .or(named)?;
        Some(Interpreter {
            version,
            runtime: runtime?,
            code_type,
            eval_loop,
        })
    }

    /// Whether a stated address is in the evaluation loop.
    pub fn in_eval_loop(&self, svma: u64) -> bool {
        self.eval_loop.iter().any(|r| r.contains(&svma))
    }
}

/// The low 4 bytes of a data symbol's value in the file (`Py_Version`).
fn symbol_u32(obj: &object::File<'_>, sym: &object::Symbol<'_, '_>) -> Option<u32> {
    let section = obj.section_by_index(sym.section_index()?).ok()?;
    let data = section.data().ok()?;
    let at = usize::try_from(sym.address().checked_sub(section.address())?).ok()?;
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// `(3, 11)` from `python3.11`, `libpython3.11.so.1.0`; `None` for other names, and for
/// debug (`python3.11d`) and free-threaded (`python3.13t`) builds, whose layouts differ.
fn version_in_name(name: &str) -> Option<(u8, u8)> {
    let rest = name
        .strip_prefix("lib")
        .unwrap_or(name)
        .strip_prefix("python")?;
    let (major, rest) = rest.split_once('.')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let tail = &rest[digits..];
    if !(tail.is_empty() || tail.starts_with(".so")) {
        return None;
    }
    Some((major.parse().ok()?, rest[..digits].parse().ok()?))
}

/// `file` as py-spy shows it: from its outermost package's directory (the highest
/// directory up the path with an `__init__.py`), or its base name outside any package.
/// `root` is where the process's files are seen from here (`/proc/PID/root`).
pub fn short_file(file: &str, root: &std::path::Path) -> String {
    let path = std::path::Path::new(file);
    if !path.is_absolute() {
        return file.to_string();
    }
    let mut top = path.parent();
    while let Some(dir) = top {
        let inside = root.join(dir.strip_prefix("/").unwrap_or(dir));
        if !inside.join("__init__.py").is_file() {
            break;
        }
        top = dir.parent();
    }
    match top.and_then(|t| path.strip_prefix(t).ok()) {
        Some(p) if !p.as_os_str().is_empty() => p.to_string_lossy().into_owned(),
        _ => file.to_string(),
    }
}

/// A frame's name: `qualname (file:line)`, or `qualname (file)` when the line is unknown.
pub fn frame_name(name: &str, file: &str, line: u32) -> String {
    if line == 0 {
        format!("{name} ({file})")
    } else {
        format!("{name} ({file}:{line})")
    }
}

/// One recorded CPython process: its interpreter's layout and its code objects, read
/// once each.
pub(crate) struct Process {
    pub layout: &'static Layout,
    /// The interpreter image's id among the recording's images.
    pub image: u32,
    pub interpreter: std::sync::Arc<Interpreter>,
    /// Runtime address minus stated address of the interpreter image.
    pub bias: u64,
    mem: Option<ProcMemory>,
    root: std::path::PathBuf,
    codes: HashMap<u64, Option<std::rc::Rc<Code>>>,
    files: HashMap<String, String>,
    /// Frames whose code object could not be read.
    pub unreadable: u64,
}

impl Process {
    #[cfg_attr(not(feature = "bpf"), allow(dead_code))]
    pub fn new(
        pid: u32,
        layout: &'static Layout,
        image: u32,
        interpreter: std::sync::Arc<Interpreter>,
        bias: u64,
    ) -> Process {
        Process {
            layout,
            image,
            interpreter,
            bias,
            mem: ProcMemory::open(pid).ok(),
            root: std::path::PathBuf::from(format!("/proc/{pid}/root")),
            codes: HashMap::new(),
            files: HashMap::new(),
            unreadable: 0,
        }
    }

    /// The name of a frame; `None` when its code object cannot be read (or it is none).
    pub fn name(&mut self, f: &FrameRef) -> Option<String> {
        let layout = self.layout;
        let code_type = self
            .interpreter
            .code_type
            .map(|t| t.wrapping_add(self.bias));
        let code = match self.codes.get(&f.code) {
            Some(c) => c.clone(),
            None => {
                let c = self
                    .mem
                    .as_ref()
                    .and_then(|m| read_code(m, layout, f.code, code_type))
                    .map(std::rc::Rc::new);
                self.codes.insert(f.code, c.clone());
                c
            }
        };
        let Some(code) = code else {
            self.unreadable += 1;
            return None;
        };
        let line = line_of(layout, &code, f.instr);
        let root = &self.root;
        let file = self
            .files
            .entry(code.file.clone())
            .or_insert_with(|| short_file(&code.file, root));
        Some(frame_name(&code.name, file, line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(u64, Vec<u8>);
    impl Memory for Bytes {
        fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
            let Some(off) = addr.checked_sub(self.0) else {
                return false;
            };
            let off = off as usize;
            match self.1.get(off..off + buf.len()) {
                Some(s) => {
                    buf.copy_from_slice(s);
                    true
                }
                None => false,
            }
        }
    }

    #[test]
    fn versions_from_names() {
        assert_eq!(version_in_name("python3.11"), Some((3, 11)));
        assert_eq!(version_in_name("libpython3.10.so.1.0"), Some((3, 10)));
        assert_eq!(version_in_name("python3.11d"), None);
        assert_eq!(version_in_name("python3.13t"), None);
        assert_eq!(version_in_name("python"), None);
        assert_eq!(version_in_name("pythonista"), None);
    }

    /// CPython 3.11's table for `def f():\n    x = 1\n    return x` compiled at line 1:
    /// RESUME (line 1), then two lines of two instructions each.
    #[test]
    fn location_tables_give_the_line_of_an_offset() {
        // code 10 + delta 0 (one-line form, 2 column bytes), 1 unit; code 11 (line +1),
        // 2 units; code 11 (+1), 2 units; code 15 (no location), 1 unit.
        let t = [
            0x80 | (10 << 3),
            0,
            0,
            0x80 | (11 << 3) | 1,
            4,
            9,
            0x80 | (11 << 3) | 1,
            4,
            12,
            0x80 | (15 << 3),
        ];
        let first = 1;
        assert_eq!(line_in_locations(&t, first, 0), Some(1));
        assert_eq!(line_in_locations(&t, first, 2), Some(2));
        assert_eq!(line_in_locations(&t, first, 4), Some(2));
        assert_eq!(line_in_locations(&t, first, 6), Some(3));
        assert_eq!(line_in_locations(&t, first, 10), None);
        assert_eq!(line_in_locations(&t, first, 12), None);
        // Long form: line delta -3 as a signed varint (7), then three more varints.
        let long = [0x80 | (14 << 3), 7, 0, 1, 1];
        assert_eq!(line_in_locations(&long, 10, 0), Some(7));
        // Damaged: a continuation byte where an entry starts.
        assert_eq!(line_in_locations(&[0x10, 0x80], 1, 0), None);
        // Damaged: entries whose huge deltas would add past any line (a fuzzer's find).
        let huge = [
            0x80 | (14 << 3),
            0x7e,
            0x7f,
            0x7f,
            0x7f,
            0x7f,
            0x7f,
            0x7f,
            0x7f,
            0x7f,
            0x3f,
        ];
        let many: Vec<u8> = huge.iter().copied().cycle().take(huge.len() * 64).collect();
        assert_eq!(line_in_locations(&many, 1, 2 * 64 + 1), None);
    }

    #[test]
    fn pair_tables_give_the_line_of_an_offset() {
        // 6 bytes at +1, 4 bytes without a line, 2 bytes at -2.
        let t = [6, 1, 4, 0x80, 2, (-2i8) as u8];
        assert_eq!(line_in_pairs(&t, 10, 0), Some(11));
        assert_eq!(line_in_pairs(&t, 10, 7), None);
        assert_eq!(line_in_pairs(&t, 10, 10), Some(9));
        assert_eq!(line_in_pairs(&t, 10, 12), None);
    }

    #[test]
    fn runs_of_the_evaluation_loops() {
        let f = |entry: u8, owner: u8| FrameRef {
            code: 1,
            instr: 0,
            entry,
            owner,
        };
        let l311 = layout(3, 11).unwrap();
        // Innermost first: two frames of one loop, then one of the next.
        let frames = [f(0, 0), f(1, 0), f(1, 0), f(0, 0)];
        assert_eq!(loop_runs(l311, &frames), vec![0..2, 2..3, 3..4]);
        let l312 = layout(3, 12).unwrap();
        let frames = [f(0, 0), f(0, 0), f(0, 3), f(0, 0), f(0, 3)];
        assert_eq!(loop_runs(l312, &frames), vec![0..2, 3..4]);
        let l310 = layout(3, 10).unwrap();
        assert_eq!(loop_runs(l310, &frames[..2]), vec![0..1, 1..2]);
    }

    #[test]
    fn interpreter_functions_py_spy_keeps() {
        assert!(keeps_interpreter_function(b"time_sleep"));
        assert!(keeps_interpreter_function(b"_sre_SRE_Pattern_match"));
        assert!(keeps_interpreter_function(b"PyThread_acquire_lock_timed"));
        assert!(!keeps_interpreter_function(b"_PyEval_EvalFrameDefault"));
        assert!(!keeps_interpreter_function(b"take_gil"));
        assert!(!keeps_interpreter_function(b"timer"));
        assert!(is_eval_loop(b"_PyEval_EvalFrameDefault.cold"));
    }

    /// A code object laid out as 3.11 lays it out, named by compact strings.
    #[test]
    fn code_objects_are_read_and_checked() {
        let l = layout(3, 11).unwrap();
        let base = 0x1000u64;
        let mut m = vec![0u8; 0x400];
        let put = |m: &mut Vec<u8>, at: usize, v: &[u8]| m[at..at + v.len()].copy_from_slice(v);
        // The code object at +0: its type, qualname, file, first line, line table.
        put(&mut m, 8, &0xc0de_u64.to_le_bytes());
        put(&mut m, l.code_name as usize, &(base + 0x100).to_le_bytes());
        put(
            &mut m,
            l.code_filename as usize,
            &(base + 0x200).to_le_bytes(),
        );
        put(&mut m, l.code_first_line as usize, &5u32.to_le_bytes());
        put(
            &mut m,
            l.code_line_table as usize,
            &(base + 0x300).to_le_bytes(),
        );
        // "Handler.go", compact ASCII.
        put(&mut m, 0x100 + 16, &10u64.to_le_bytes());
        put(
            &mut m,
            0x100 + 32,
            &(1u32 << 2 | 1 << 5 | 1 << 6).to_le_bytes(),
        );
        put(&mut m, 0x100 + 48, b"Handler.go");
        // "/x/é.py", compact UCS-1 (kind 1, not ASCII).
        let file: Vec<u8> = "/x/é.py".chars().map(|c| c as u32 as u8).collect();
        put(&mut m, 0x200 + 16, &(file.len() as u64).to_le_bytes());
        put(&mut m, 0x200 + 32, &(1u32 << 2 | 1 << 5).to_le_bytes());
        put(&mut m, 0x200 + 72, &file);
        // A line table: one unit on line 5, two on line 6.
        put(&mut m, 0x300 + 16, &5u64.to_le_bytes());
        put(
            &mut m,
            0x300 + 32,
            &[0x80 | (10 << 3), 0, 0, 0x80 | (11 << 3) | 1, 0],
        );
        let mem = Bytes(base, m);
        let code = read_code(&mem, l, base, Some(0xc0de)).unwrap();
        assert_eq!(code.name, "Handler.go");
        assert_eq!(code.file, "/x/é.py");
        assert_eq!(code.first_line, 5);
        let start = u32::from(l.code_bytecode.unwrap());
        assert_eq!(line_of(l, &code, start), 5);
        assert_eq!(line_of(l, &code, start + 2), 6);
        assert_eq!(
            line_of(l, &code, start - 2),
            5,
            "before the first instruction"
        );
        assert_eq!(line_of(l, &code, start + 1), 0, "between code units");
        assert!(
            read_code(&mem, l, base, Some(0xbad)).is_none(),
            "not a code object"
        );
        assert!(read_code(&mem, l, base + 0x3f0, None).is_none());
    }

    /// Garbage memory, garbage line tables and garbage frames: no panic (the fuzz target
    /// python_memory goes further).
    #[test]
    fn garbage_is_read_without_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..200 {
            let bytes: Vec<u8> = (0..2048).map(|_| next() as u8).collect();
            let l = &LAYOUTS[round % LAYOUTS.len()];
            let mem = Bytes(0x1000, bytes.clone());
            for at in [0x1000, 0x1000 + (next() % 2048), next()] {
                if let Some(c) = read_code(&mem, l, at, None) {
                    let _ = line_of(l, &c, next() as u32);
                }
            }
            let code = Code {
                name: String::new(),
                file: String::new(),
                first_line: next() as u32,
                line_table: bytes.clone(),
            };
            for _ in 0..8 {
                let _ = line_of(l, &code, next() as u32);
            }
            let frames: Vec<FrameRef> = bytes
                .chunks_exact(4)
                .map(|c| FrameRef {
                    code: 1,
                    instr: 0,
                    entry: c[0] & 1,
                    owner: c[1] & 3,
                })
                .collect();
            let runs = loop_runs(l, &frames);
            assert!(runs.len() <= frames.len());
            assert!(runs.windows(2).all(|w| w[0].end <= w[1].start));
        }
    }

    #[test]
    fn files_are_shortened_to_their_package() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("lib/http");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("__init__.py"), "").unwrap();
        let server = pkg.join("server.py");
        let root = std::path::Path::new("/");
        assert_eq!(short_file(server.to_str().unwrap(), root), "http/server.py");
        let script = dir.path().join("app.py");
        assert_eq!(short_file(script.to_str().unwrap(), root), "app.py");
        assert_eq!(short_file("<string>", root), "<string>");
        assert_eq!(frame_name("f", "app.py", 3), "f (app.py:3)");
        assert_eq!(frame_name("<module>", "app.py", 0), "<module> (app.py)");
    }
}
