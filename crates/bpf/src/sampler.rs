//! Samples with complete stacks, unwound in the kernel at sample time.
//!
//! [`Sampler`] is an eBPF program attached to the caller's perf events: sampling events
//! (cpu-clock, page-faults: any software or hardware sampling event) and tracepoints
//! (`syscalls:sys_enter_mmap`, `sched:sched_switch`…), one program kind for each
//! ([`SlotKind`]). On each sample it walks the kernel stack and the user stack in the
//! sampled thread's context, and hands over the return addresses and the sample's value
//! (its period, or a field of the tracepoint) through a ring buffer; perf itself then
//! writes no sample record. Every event is unwound the same way, so a memory flame graph
//! (`mmap` calls) reaches the same JIT and native callers as a CPU one.
//!
//! ## Why in the kernel
//! Unwinding a copy of the stack after the fact (perf's `--call-graph dwarf`, and
//! `kiln record --unwind copy`) only sees the memory copied from the stack pointer up.
//! Code that keeps its frames elsewhere defeats it: the BEAM's JIT runs Erlang code on
//! each process's own stack (on the process heap) and calls C code on the scheduler's
//! stack, so after the C frames the walk needs memory the copy does not have. Here the
//! walk reads the thread's memory as it is at the sample, wherever the frames are.
//!
//! ## Method per piece of code
//! The caller gives the program, per process, its executable mappings; for ELF images
//! also an unwind table ([`crate::unwind_table`], built from `.eh_frame`, present even in
//! stripped binaries). Code with a table follows its CFI rows; other code (JIT code,
//! images without `.eh_frame`) follows frame pointers, with the first frame's
//! prologue/epilogue recognised from its instruction bytes. A frame-pointer walk stops
//! at a return address outside the process's executable memory (code the caller's
//! mappings do not list is looked up in the process's memory map, and the sample says so:
//! [`KernelSample::unlisted_code`]). Samples of processes the program
//! has no mappings for yet, or whose mappings were stored before the process exec'd (the
//! program ties them to the address space of the first sample that uses them), are left
//! to perf, which writes its own sample record ([`SamplerStats::no_tables`],
//! [`SamplerStats::stale_tables`]): give the events a user stack copy to unwind those.
//!
//! ## Python
//! For a process given a [`PythonLayout`] ([`Sampler::set_python`]), the program also
//! reads the sampled thread's Python frames at the sample: its `PyThreadState` (looked
//! up in the interpreter's list by the thread's `pthread_self()`, which is its fs base,
//! and remembered per thread), then the frames from the innermost out, at most
//! [`MAX_PYTHON_FRAMES`]. Each frame comes as its code object's address and where it
//! stood in its bytecode ([`PythonFrame`]); naming them and putting them in place of the
//! interpreter's frames is user space's part.
//!
//! ## Cost
//! Per sample: a kernel stack walk when the sample is in the kernel, and per user frame
//! two binary searches (mapping, then row) and two or three 8-byte user reads; per Python
//! frame one read of up to 128 bytes. Nothing is copied but the addresses: about 0.3 KiB
//! per sample, against 16 KiB for a stack copy.
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};

use crate::load::{self, map_err};
use crate::ring::{self, RingReader};
use crate::skel::{SamplerSkel, SamplerSkelBuilder};
use crate::unwind_table::{UnwindRow, ROW_BYTES};
use crate::BpfError;

/// Executable mappings per process the kernel side can search (`MAX_MAPS`).
pub(crate) const MAX_MAPPINGS: usize = 256;
/// Events one sampler can tell apart ([`Sampler::attach`]).
pub const SLOTS: u32 = 4;
/// Kernel frames per sample (`MAX_KERNEL`).
pub(crate) const MAX_KERNEL_FRAMES: usize = 127;
/// User frames per sample (`MAX_USER`).
pub const MAX_USER_FRAMES: usize = 128;
/// Python frames per sample (`MAX_PY`).
pub const MAX_PYTHON_FRAMES: usize = 128;
/// Bytes of a Python frame the program reads at once (`PY_BUF`): a layout's fields lie
/// within them.
pub const PYTHON_FRAME_BYTES: u16 = 128;
const MAPPING_BYTES: usize = 32;
/// `struct proc`: mm, n, pad, then the mappings.
const PROC_HDR: usize = 16;
const HDR_BYTES: usize = 48;

/// Sizes of the sampler's kernel memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Unwind rows the kernel table holds, over all images ([`crate::unwind_table`]); 16
    /// bytes each, allocated up front. Default: 2^20 (16 MiB; Debian's `beam.smp` has
    /// about 54,000 rows, libc 24,000).
    pub row_capacity: u32,
    /// Bytes of the ring buffer samples pass through (a power of two). Default: 8 MiB,
    /// seconds of samples at 999 Hz on many CPUs; records that do not fit are counted
    /// in [`SamplerStats::lost`].
    pub ring_bytes: u32,
    /// The slots to load (1 to [`SLOTS`]), one program each, of the kind of event it
    /// will be attached to: the kernel verifies each program it loads, which is most of
    /// the time a start takes, so load only as many as there are events to attach.
    /// Default: [`SLOTS`] sampling slots.
    pub slots: Vec<SlotKind>,
}

/// What a sampler slot is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    /// Sampling perf events (cpu-clock, page-faults); a sample's value is its period.
    Sampling,
    /// A tracepoint's perf event; a sample's value is the 8-byte field at this byte offset
    /// of the tracepoint's data (its tracefs `format`: `mmap`'s `len`), or 1 when `None`.
    Tracepoint {
        /// Offset of the field, at least 8 (the first 8 bytes are the kernel's).
        value_offset: Option<u32>,
    },
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            row_capacity: 1 << 20,
            ring_bytes: 1 << 23,
            slots: vec![SlotKind::Sampling; SLOTS as usize],
        }
    }
}

/// Where an image's rows sit in the kernel table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowRange {
    /// Index of the first row.
    pub start: u32,
    /// Number of rows.
    pub count: u32,
}

/// One executable mapping of a process, as the kernel side sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeMapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Runtime address minus the address stated in the image (what the rows use).
    pub bias: u64,
    /// The image's unwind rows; `None`: frame pointers (JIT code, no table).
    pub rows: Option<RowRange>,
}

/// Why the user part of a sample's stack ended (`enum stack_end` in sampler.bpf.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StackEnd {
    /// The CFI of the last frame marks it outermost (`_start`, `clone3`).
    Root,
    /// A frame-pointer frame with a null frame pointer: the root of frame-pointer
    /// code (the bottom of an Erlang process's stack, the BEAM's scheduler loop).
    FramePointerZero,
    /// A null return address.
    ReturnAddressZero,
    /// Stack memory could not be read (not resident, or unmapped).
    Unreadable,
    /// Code with neither an unwind rule nor a usable frame pointer.
    NoRule,
    /// [`MAX_USER_FRAMES`] frames were taken.
    Depth,
    /// No user stack (a kernel thread, or no user registers).
    NoUser,
    /// A frame-pointer chain that did not move up the stack.
    Loop,
    /// A frame-pointer walk reached a return address outside the process's code.
    BadReturnAddress,
    /// A value this version does not know.
    Unknown(u32),
}

impl StackEnd {
    fn from_raw(v: u32) -> StackEnd {
        match v {
            0 => StackEnd::Root,
            1 => StackEnd::FramePointerZero,
            2 => StackEnd::ReturnAddressZero,
            3 => StackEnd::Unreadable,
            4 => StackEnd::NoRule,
            5 => StackEnd::Depth,
            6 => StackEnd::NoUser,
            7 => StackEnd::Loop,
            8 => StackEnd::BadReturnAddress,
            v => StackEnd::Unknown(v),
        }
    }

    /// Whether the walk reached what the code itself marks as its root.
    pub fn is_root(self) -> bool {
        matches!(
            self,
            StackEnd::Root | StackEnd::FramePointerZero | StackEnd::ReturnAddressZero
        )
    }
}

/// How the Python part of a sample ended (`enum py_end` in sampler.bpf.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PyEnd {
    /// The process has no [`PythonLayout`]: no Python frames were looked for.
    NotPython,
    /// The outermost frame was reached.
    Root,
    /// The runtime has no interpreter (not initialised yet, or finalised).
    NoInterpreter,
    /// The thread has no Python thread state (a thread Python does not know).
    NoThread,
    /// The interpreter's memory could not be read where the layout pointed.
    Unreadable,
    /// [`MAX_PYTHON_FRAMES`] frames were taken: the outermost are missing.
    Depth,
    /// A value this version does not know.
    Unknown(u16),
}

impl PyEnd {
    fn from_raw(v: u16) -> PyEnd {
        match v {
            0 => PyEnd::NotPython,
            1 => PyEnd::Root,
            2 => PyEnd::NoInterpreter,
            3 => PyEnd::NoThread,
            4 => PyEnd::Unreadable,
            5 => PyEnd::Depth,
            v => PyEnd::Unknown(v),
        }
    }
}

/// One Python frame as the kernel side read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PythonFrame {
    /// The address of its code object (3.13's `f_executable`, which may be another object).
    pub code: u64,
    /// Where it stood: the instruction pointer's offset from the code object's address
    /// (3.11 and later), or the instruction index (3.10's `f_lasti`); 32 bits.
    pub instr: u32,
    /// Its `is_entry` byte (3.11: the first frame its evaluation loop ran), or 0.
    pub entry: u8,
    /// Its `owner` byte (3.11 and later; 3 is a C stack's shim frame from 3.12), or 0.
    pub owner: u8,
}

impl PythonFrame {
    fn from_words(code: u64, word: u64) -> PythonFrame {
        PythonFrame {
            code,
            instr: word as u32,
            entry: (word >> 32) as u8,
            owner: (word >> 40) as u8,
        }
    }
}

/// Where a CPython process keeps its threads and frames (`struct py_proc` in
/// sampler.bpf.c): the runtime's address and its version's field offsets, in bytes from
/// the start of the structure named. `None` where the version has no such field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PythonLayout {
    /// The address of `_PyRuntime.interpreters.head` in the process.
    pub head_addr: u64,
    /// `PyInterpreterState`: its first `PyThreadState`.
    pub interp_threads: u16,
    /// `PyThreadState.next`.
    pub tstate_next: u16,
    /// `PyThreadState.thread_id` (the thread's `pthread_self()`).
    pub tstate_thread: u16,
    /// `PyThreadState`: its current frame (3.10's `frame`, 3.13's `current_frame`) or its
    /// `_PyCFrame` (3.11 and 3.12's `cframe`).
    pub tstate_frame: u16,
    /// `_PyCFrame.current_frame` (3.11, 3.12).
    pub cframe_frame: Option<u16>,
    /// Frame: its code object.
    pub frame_code: u16,
    /// Frame: its caller's frame.
    pub frame_previous: u16,
    /// Frame: its instruction pointer, or its instruction index when
    /// [`PythonLayout::instr_is_index`].
    pub frame_instr: u16,
    /// Whether `frame_instr` is a 4-byte index (3.10's `f_lasti`) rather than a pointer.
    pub instr_is_index: bool,
    /// Frame: its `is_entry` byte (3.11).
    pub frame_entry: Option<u16>,
    /// Frame: its `owner` byte (3.11 and later).
    pub frame_owner: Option<u16>,
}

impl PythonLayout {
    /// Bytes to read of a frame: past the last of its fields, which must lie within
    /// [`PYTHON_FRAME_BYTES`]; `None` when one does not.
    fn frame_len(&self) -> Option<u16> {
        let ends = [
            Some(self.frame_code + 8),
            Some(self.frame_previous + 8),
            Some(self.frame_instr + if self.instr_is_index { 4 } else { 8 }),
            self.frame_entry.map(|o| o + 1),
            self.frame_owner.map(|o| o + 1),
        ];
        let len = ends.into_iter().flatten().max()?;
        (len <= PYTHON_FRAME_BYTES).then_some(len)
    }

    /// The value of `struct py_proc`.
    fn to_bytes(self, frame_len: u16) -> [u8; PY_PROC_BYTES] {
        const NONE: u16 = 0xffff;
        let mut v = [0u8; PY_PROC_BYTES];
        v[0..8].copy_from_slice(&self.head_addr.to_ne_bytes());
        let halves = [
            self.interp_threads,
            self.tstate_next,
            self.tstate_thread,
            self.tstate_frame,
            self.cframe_frame.unwrap_or(NONE),
            self.frame_code,
            self.frame_previous,
            self.frame_instr,
            self.frame_entry.unwrap_or(NONE),
            self.frame_owner.unwrap_or(NONE),
            frame_len,
        ];
        for (i, h) in halves.iter().enumerate() {
            v[8 + 2 * i..10 + 2 * i].copy_from_slice(&h.to_ne_bytes());
        }
        v[30] = u8::from(self.instr_is_index);
        v
    }
}

/// `struct py_proc`: head_addr, eleven u16, instr_is_index, pad.
const PY_PROC_BYTES: usize = 32;

/// One sample as the kernel side wrote it.
#[derive(Clone, Copy, Debug)]
pub struct KernelSample<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC nanoseconds.
    pub time: u64,
    /// CPU the sample was taken on.
    pub cpu: u32,
    /// The slot of the event that took it ([`Sampler::attach`]).
    pub slot: u32,
    /// The sample's period (sampling slots) or its tracepoint's field (tracepoint slots).
    pub value: u64,
    /// Kernel frames, innermost first (empty for samples taken in user mode).
    pub kernel: &'a [u64],
    /// User frames, innermost first: the instruction pointer, then return addresses.
    pub user: &'a [u64],
    /// Why the user stack ended.
    pub end: StackEnd,
    /// The walk went through executable code the process's mappings given to
    /// [`Sampler::set_process`] do not list (JIT code made executable by `mprotect`):
    /// they are worth reading again.
    pub unlisted_code: bool,
    /// Python frames, innermost first (empty unless the process has a [`PythonLayout`]).
    pub python: &'a [PythonFrame],
    /// How the Python part ended.
    pub python_end: PyEnd,
}

/// What the kernel side counted since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplerStats {
    /// Samples the program saw.
    pub samples: u64,
    /// Samples written to the ring buffer.
    pub written: u64,
    /// Samples lost because the ring buffer was full.
    pub lost: u64,
    /// Samples of processes whose mappings were not loaded yet: the program left them
    /// to perf, which wrote its own sample (with whatever the event asks for, such as a
    /// copy of the stack).
    pub no_tables: u64,
    /// Frames unwound with CFI rows.
    pub cfi_frames: u64,
    /// Frames unwound with frame pointers.
    pub fp_frames: u64,
    /// First frames found in a JIT function's prologue or epilogue.
    pub jit_edges: u64,
    /// Samples of a process that exec'd after its mappings were stored (left to perf
    /// until new ones are).
    pub stale_tables: u64,
    /// Samples whose walk reached code of a file the stored mappings do not list yet (a
    /// library mapped since): left to perf, like [`SamplerStats::no_tables`].
    pub incomplete_tables: u64,
}

/// The in-kernel sampler: load it, give it tables, attach it to perf events, drain it.
pub struct Sampler {
    skel: SamplerSkel<'static>,
    ring: RingReader,
    rows: memmap2::MmapMut,
    capacity: u32,
    used: u32,
    /// Slots loaded.
    slots: Vec<SlotKind>,
    /// Tracepoint slots already attached (the kernel runs the program on every hit of
    /// the tracepoint once attached to any one of its events).
    tracepoint_attached: [bool; SLOTS as usize],
    links: Vec<Link>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("rows_used", &self.used)
            .field("row_capacity", &self.capacity)
            .field("attached", &self.links.len())
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Loads the program and allocates its maps; nothing is sampled until
    /// [`Sampler::attach`].
    pub fn load(cfg: &SamplerConfig) -> Result<Self, BpfError> {
        if !cfg.ring_bytes.is_power_of_two() || cfg.ring_bytes < 4096 {
            return Err(BpfError::InvalidConfig(format!(
                "the ring buffer size {} is not a power of two of at least 4096",
                cfg.ring_bytes
            )));
        }
        if cfg.slots.is_empty() || cfg.slots.len() > SLOTS as usize {
            return Err(BpfError::InvalidConfig(format!(
                "{} sampler slots: there are 1 to {SLOTS}",
                cfg.slots.len()
            )));
        }
        if let Some(off) = cfg.slots.iter().find_map(|k| match k {
            SlotKind::Tracepoint {
                value_offset: Some(o),
            } if !(8..4096).contains(o) => Some(*o),
            _ => None,
        }) {
            return Err(BpfError::InvalidConfig(format!(
                "a tracepoint field at offset {off}: fields lie from 8 to 4095"
            )));
        }
        if cfg.row_capacity == 0 {
            return Err(BpfError::InvalidConfig("a row capacity of 0".into()));
        }
        crate::require_btf()?;
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let skel = load::capturing_log(|| open_and_load(storage, cfg))?;
        let len = cfg.row_capacity as usize * ROW_BYTES;
        let fd = skel.maps.rows.as_fd().as_raw_fd();
        // SAFETY: the map is BPF_F_MMAPABLE and `len` bytes long; the mapping lives in
        // this struct, beside the skeleton that owns the map, and only this struct
        // writes to it.
        let rows = unsafe { memmap2::MmapOptions::new().len(len).map_mut(fd) }.map_err(|e| {
            BpfError::Map {
                action: "mapping the sampling program's unwind table",
                detail: e.to_string(),
            }
        })?;
        let ring = RingReader::start(&skel.maps.events, "sampling")?;
        Ok(Sampler {
            skel,
            ring,
            rows,
            capacity: cfg.row_capacity,
            used: 0,
            slots: cfg.slots.clone(),
            tracepoint_attached: [false; SLOTS as usize],
            links: Vec::new(),
        })
    }

    /// Runs the program on every sample of the perf event `perf_fd` (and of the events
    /// the kernel inherits from it for new threads); its samples carry `slot` (below
    /// [`SLOTS`]), which tells events apart. A tracepoint slot's program runs on every
    /// hit of the tracepoint once it is attached to one of its events: later calls for
    /// the same slot do nothing (the kernel would run the program once per attachment).
    pub fn attach(
        &mut self,
        perf_fd: std::os::fd::BorrowedFd<'_>,
        slot: u32,
    ) -> Result<(), BpfError> {
        let Some(&kind) = self.slots.get(slot as usize) else {
            return Err(BpfError::InvalidConfig(format!(
                "sampler slot {slot}: only {} were loaded",
                self.slots.len()
            )));
        };
        let progs = &self.skel.progs;
        let (prog, event) = match (kind, slot) {
            (SlotKind::Sampling, 0) => {
                (&progs.kiln_sample0, "a perf event (cpu-clock, page-faults)")
            }
            (SlotKind::Sampling, 1) => {
                (&progs.kiln_sample1, "a perf event (cpu-clock, page-faults)")
            }
            (SlotKind::Sampling, 2) => {
                (&progs.kiln_sample2, "a perf event (cpu-clock, page-faults)")
            }
            (SlotKind::Sampling, 3) => {
                (&progs.kiln_sample3, "a perf event (cpu-clock, page-faults)")
            }
            (SlotKind::Tracepoint { .. }, 0) => (&progs.kiln_tp0, "a tracepoint"),
            (SlotKind::Tracepoint { .. }, 1) => (&progs.kiln_tp1, "a tracepoint"),
            (SlotKind::Tracepoint { .. }, 2) => (&progs.kiln_tp2, "a tracepoint"),
            (SlotKind::Tracepoint { .. }, 3) => (&progs.kiln_tp3, "a tracepoint"),
            _ => {
                return Err(BpfError::InvalidConfig(format!(
                    "sampler slot {slot}: there are {SLOTS}"
                )))
            }
        };
        if matches!(kind, SlotKind::Tracepoint { .. }) && self.tracepoint_attached[slot as usize] {
            return Ok(());
        }
        // libbpf's link owns the descriptor it is given (it closes it on detach): give it
        // a duplicate, the caller keeps its own.
        let dup = perf_fd.try_clone_to_owned().map_err(|e| BpfError::Attach {
            program: "sampling",
            event,
            detail: format!("duplicating its descriptor: {e}"),
        })?;
        let link = prog.attach_perf_event(dup.as_raw_fd()).map_err(|e| {
            load::permission_or(
                "attaching the sampling eBPF program to a perf event",
                &e,
                |detail| BpfError::Attach {
                    program: "sampling",
                    event,
                    detail,
                },
            )
        })?;
        // Attached: the link closes the duplicate from now on.
        let _ = std::os::fd::IntoRawFd::into_raw_fd(dup);
        self.links.push(link);
        if matches!(kind, SlotKind::Tracepoint { .. }) {
            self.tracepoint_attached[slot as usize] = true;
        }
        Ok(())
    }

    /// Rows still free in the kernel table.
    pub fn rows_free(&self) -> u32 {
        self.capacity - self.used
    }

    /// Copies an image's rows into the kernel table; `None` when they do not fit
    /// (the image's code is then walked by frame pointers).
    pub fn add_rows(&mut self, rows: &[UnwindRow]) -> Option<RowRange> {
        let n = u32::try_from(rows.len()).ok()?;
        if n == 0 || n > self.rows_free() {
            return None;
        }
        let start = self.used;
        for (i, r) in rows.iter().enumerate() {
            let off = (start as usize + i) * ROW_BYTES;
            self.rows[off..off + ROW_BYTES].copy_from_slice(&r.to_bytes());
        }
        self.used += n;
        Some(RowRange { start, count: n })
    }

    /// Sets the executable mappings of process `tgid` (replacing what it had). At most
    /// [`MAX_MAPPINGS`] are kept: mappings with rows first, then the largest; returns
    /// how many were left out.
    pub fn set_process(&mut self, tgid: u32, maps: &[CodeMapping]) -> Result<usize, BpfError> {
        let mut keep: Vec<CodeMapping> = maps.iter().filter(|m| m.end > m.start).copied().collect();
        let left_out = keep.len().saturating_sub(MAX_MAPPINGS);
        if left_out > 0 {
            keep.sort_by_key(|m| (m.rows.is_none(), std::cmp::Reverse(m.end - m.start)));
            keep.truncate(MAX_MAPPINGS);
        }
        keep.sort_by_key(|m| m.start);
        // mm stays 0: the first sample that uses the mappings ties them to its address
        // space.
        let mut value = vec![0u8; PROC_HDR + MAX_MAPPINGS * MAPPING_BYTES];
        value[8..12].copy_from_slice(&(keep.len() as u32).to_ne_bytes());
        for (i, m) in keep.iter().enumerate() {
            let o = PROC_HDR + i * MAPPING_BYTES;
            let r = m.rows.unwrap_or(RowRange { start: 0, count: 0 });
            value[o..o + 8].copy_from_slice(&m.start.to_ne_bytes());
            value[o + 8..o + 16].copy_from_slice(&m.end.to_ne_bytes());
            value[o + 16..o + 24].copy_from_slice(&m.bias.to_ne_bytes());
            value[o + 24..o + 28].copy_from_slice(&r.start.to_ne_bytes());
            value[o + 28..o + 32].copy_from_slice(&r.count.to_ne_bytes());
        }
        self.skel
            .maps
            .procs
            .update(&tgid.to_ne_bytes(), &value, MapFlags::ANY)
            .map_err(map_err(
                "storing a process's code mappings for the sampling program",
            ))?;
        Ok(left_out)
    }

    /// Forgets a process (it exited).
    pub fn forget_process(&mut self, tgid: u32) {
        let _ = self.skel.maps.procs.delete(&tgid.to_ne_bytes());
        let _ = self.skel.maps.pyprocs.delete(&tgid.to_ne_bytes());
    }

    /// Reads the Python frames of process `tgid`'s samples from now on with `layout`, or
    /// no more (`None`: the process exec'd something else).
    pub fn set_python(&mut self, tgid: u32, layout: Option<&PythonLayout>) -> Result<(), BpfError> {
        let key = tgid.to_ne_bytes();
        let Some(layout) = layout else {
            let _ = self.skel.maps.pyprocs.delete(&key);
            return Ok(());
        };
        let len = layout.frame_len().ok_or_else(|| {
            BpfError::InvalidConfig(format!(
                "a Python frame layout with a field past its first {PYTHON_FRAME_BYTES} bytes"
            ))
        })?;
        self.skel
            .maps
            .pyprocs
            .update(&key, &layout.to_bytes(len), MapFlags::ANY)
            .map_err(map_err(
                "storing a Python process's layout for the sampling program",
            ))
    }

    /// Hands every sample written since the last call to `f`, in the order the kernel
    /// wrote them. Returns the number of samples. Records too short to parse are
    /// counted in the second value.
    pub fn drain(&mut self, mut f: impl FnMut(&KernelSample<'_>)) -> Result<(u64, u64), BpfError> {
        let queue = self.ring.take()?;
        let (mut n, mut bad) = (0, 0);
        let mut ips: Vec<u64> = Vec::with_capacity(MAX_KERNEL_FRAMES + MAX_USER_FRAMES);
        let mut py: Vec<PythonFrame> = Vec::with_capacity(MAX_PYTHON_FRAMES);
        let broken = ring::for_each_record(&queue, |rec| match parse(rec, &mut ips, &mut py) {
            Some(s) => {
                f(&s);
                n += 1;
            }
            None => bad += 1,
        });
        bad += broken;
        self.ring.give_back(queue);
        Ok((n, bad))
    }

    /// What the sampler's programs cost the machine so far (needs
    /// [`crate::RunTimeStats`] enabled while they run).
    pub fn cost(&self) -> crate::ProgramCost {
        let p = &self.skel.progs;
        [
            &p.kiln_sample0,
            &p.kiln_sample1,
            &p.kiln_sample2,
            &p.kiln_sample3,
            &p.kiln_tp0,
            &p.kiln_tp1,
            &p.kiln_tp2,
            &p.kiln_tp3,
        ]
        .into_iter()
        .filter(|prog| prog.autoload())
        .map(|prog| load::cost_of(prog.as_fd()))
        .fold(crate::ProgramCost::default(), |a, b| a + b)
    }

    /// Counters since start, summed over CPUs.
    pub fn stats(&self) -> SamplerStats {
        let c = |i| load::percpu_counter(&self.skel.maps.counters, i);
        SamplerStats {
            samples: c(0),
            written: c(1),
            lost: c(2),
            no_tables: c(3),
            cfi_frames: c(4),
            fp_frames: c(5),
            jit_edges: c(6),
            stale_tables: c(7),
            incomplete_tables: c(8),
        }
    }
}

/// The lowest of perf's callchain context markers (`PERF_CONTEXT_MAX`, -4095).
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

fn parse<'a>(
    rec: &[u8],
    ips: &'a mut Vec<u64>,
    py: &'a mut Vec<PythonFrame>,
) -> Option<KernelSample<'a>> {
    let u32_at =
        |o: usize| -> Option<u32> { Some(u32::from_ne_bytes(rec.get(o..o + 4)?.try_into().ok()?)) };
    let pid = u32_at(0)?;
    let tid = u32_at(4)?;
    let time = u64::from_ne_bytes(rec.get(8..16)?.try_into().ok()?);
    let cpu = u32_at(16)?;
    let counts = u32_at(20)?;
    let (nk, nu) = ((counts & 0xffff) as usize, (counts >> 16) as usize);
    let end = StackEnd::from_raw(u32_at(24)?);
    let slot_flags = u32_at(28)?;
    let (slot, flags) = (slot_flags & 0xffff, slot_flags >> 16);
    let value = u64::from_ne_bytes(rec.get(32..40)?.try_into().ok()?);
    let py_counts = u32_at(40)?;
    let (npy, pyend) = ((py_counts & 0xffff) as usize, (py_counts >> 16) as u16);
    let body = rec.get(HDR_BYTES..HDR_BYTES + (nk + nu + 2 * npy) * 8)?;
    ips.clear();
    let words = body
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
    // The kernel stack is perf's own callchain when the event samples one (for the
    // samples the program leaves to perf), and `bpf_get_stack` then hands it over as perf
    // keeps it: led by the `PERF_CONTEXT_KERNEL` marker. A marker is no address (no code
    // lies in the top 4095 bytes of the address space): read as one it became an extra
    // leaf under every kernel stack, named after whatever symbol kallsyms lists last.
    ips.extend(words.clone().take(nk).filter(|&a| a < PERF_CONTEXT_MAX));
    let kept = ips.len();
    ips.extend(words.clone().skip(nk).take(nu));
    let (kernel, user) = ips.split_at(kept);
    py.clear();
    let mut pairs = words.skip(nk + nu);
    while let (Some(code), Some(word)) = (pairs.next(), pairs.next()) {
        py.push(PythonFrame::from_words(code, word));
    }
    Some(KernelSample {
        pid,
        tid,
        time,
        cpu,
        slot,
        value,
        kernel,
        user,
        end,
        unlisted_code: flags & 1 != 0,
        python: py,
        python_end: PyEnd::from_raw(pyend),
    })
}

fn open_and_load(
    storage: &'static mut MaybeUninit<OpenObject>,
    cfg: &SamplerConfig,
) -> Result<SamplerSkel<'static>, BpfError> {
    let mut open = SamplerSkelBuilder::default()
        .open(storage)
        .map_err(load::open_error("sampling"))?;
    let sizing = |e: libbpf_rs::Error| BpfError::Map {
        action: "sizing the sampling program's maps",
        detail: e.to_string(),
    };
    open.maps
        .rows
        .set_max_entries(cfg.row_capacity)
        .map_err(sizing)?;
    open.maps
        .events
        .set_max_entries(cfg.ring_bytes)
        .map_err(sizing)?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| BpfError::ProgramRejected {
            program: "sampling",
            detail: "the object has no .rodata section".into(),
            log: String::new(),
        })?;
    for (slot, kind) in cfg.slots.iter().enumerate() {
        if let SlotKind::Tracepoint {
            value_offset: Some(off),
        } = kind
        {
            rodata.tp_value_off[slot] = *off;
        }
    }
    let progs = &mut open.progs;
    let sampling = [
        &mut progs.kiln_sample0,
        &mut progs.kiln_sample1,
        &mut progs.kiln_sample2,
        &mut progs.kiln_sample3,
    ];
    for (slot, prog) in sampling.into_iter().enumerate() {
        prog.set_autoload(cfg.slots.get(slot) == Some(&SlotKind::Sampling));
    }
    let tracepoint = [
        &mut progs.kiln_tp0,
        &mut progs.kiln_tp1,
        &mut progs.kiln_tp2,
        &mut progs.kiln_tp3,
    ];
    for (slot, prog) in tracepoint.into_iter().enumerate() {
        prog.set_autoload(matches!(
            cfg.slots.get(slot),
            Some(SlotKind::Tracepoint { .. })
        ));
    }
    open.load().map_err(load::load_error(
        "sampling",
        "perf events: cpu-clock, page-faults, tracepoints",
    ))
}

/// The recorder loads the sampler on one thread while it opens its events on another:
/// keep it `Send`.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<Sampler>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_short_ones_do_not() {
        let mut rec = vec![0u8; HDR_BYTES + 4 * 8];
        rec[32..40].copy_from_slice(&4096u64.to_ne_bytes());
        rec[0..4].copy_from_slice(&7u32.to_ne_bytes());
        rec[4..8].copy_from_slice(&8u32.to_ne_bytes());
        rec[8..16].copy_from_slice(&99u64.to_ne_bytes());
        rec[20..24].copy_from_slice(&(2u32 | (2 << 16)).to_ne_bytes());
        rec[24..28].copy_from_slice(&1u32.to_ne_bytes());
        rec[28..32].copy_from_slice(&(2u32 | (1 << 16)).to_ne_bytes());
        // perf's callchain, as bpf_get_stack hands it over: PERF_CONTEXT_KERNEL first.
        for (i, v) in [-128i64 as u64, 0xffff_ffff_8100_0000u64, 0x401000, 0x402000]
            .iter()
            .enumerate()
        {
            rec[HDR_BYTES + 8 * i..HDR_BYTES + 8 * i + 8].copy_from_slice(&v.to_ne_bytes());
        }
        let (mut ips, mut py) = (Vec::new(), Vec::new());
        let s = parse(&rec, &mut ips, &mut py).unwrap();
        assert_eq!((s.pid, s.tid, s.time), (7, 8, 99));
        assert_eq!(s.kernel, &[0xffff_ffff_8100_0000]);
        assert_eq!(s.user, &[0x401000, 0x402000]);
        assert_eq!(s.end, StackEnd::FramePointerZero);
        assert_eq!(s.slot, 2);
        assert_eq!(s.value, 4096);
        assert!(s.unlisted_code);
        assert!(s.python.is_empty());
        assert_eq!(s.python_end, PyEnd::NotPython);
        assert!(parse(&rec[..HDR_BYTES + 16], &mut ips, &mut py).is_none());
        // One Python frame after the user frames: the code object, then its offset,
        // is_entry and owner.
        rec[40..44].copy_from_slice(&(1u32 | (1 << 16)).to_ne_bytes());
        rec.extend_from_slice(&0x7f00_1000u64.to_ne_bytes());
        rec.extend_from_slice(&(0xd0u64 | 1 << 32 | 2 << 40).to_ne_bytes());
        let s = parse(&rec, &mut ips, &mut py).unwrap();
        assert_eq!(s.user, &[0x401000, 0x402000]);
        assert_eq!(
            s.python,
            &[PythonFrame {
                code: 0x7f00_1000,
                instr: 0xd0,
                entry: 1,
                owner: 2
            }]
        );
        assert_eq!(s.python_end, PyEnd::Root);
    }
}
