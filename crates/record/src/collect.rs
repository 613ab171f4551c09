//! Turning records (live ring buffers, perf.data files, eBPF off-CPU entries) into profiles.
//!
//! Samples are unwound as they arrive, while the process and its mappings still exist,
//! but symbolized only at the end: a raw stack is a path of *locations* (kernel address,
//! image + stated address, JIT address of a pid) kept in a prefix tree, so each distinct
//! location is named once, after the JIT has written its perf map.
use crate::python;
use crate::symbols::{demangle, KernelSymbols, PerfMap};
use crate::unwind::{Images, MapKind, Process, UserLoc};
use kiln_model::{EventInfo, FrameKind, Profile, StackId};
use std::collections::HashMap;
use std::sync::Arc;

/// Fast hashing for the per-sample interning tables (local data, not attacker-controlled).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;
type FastSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;
use std::path::Path;

/// Counts that say how complete a recording is. Nothing is dropped without being counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordingSummary {
    /// Samples kept, per event (same order as the profiles).
    pub samples: Vec<u64>,
    /// Records the kernel could not write because the ring buffer was full, and samples
    /// it dropped because another eBPF program was running on that CPU when the event
    /// fired (see [`BpfCost::missed`]).
    pub lost: u64,
    /// Of [`RecordingSummary::lost`], samples of events sampled at every occurrence
    /// (page faults, tracepoints) that the kernel counted but never gave, and no other
    /// count covers.
    pub unseen_samples: u64,
    /// Times the kernel throttled an event for firing faster than
    /// `kernel.perf_event_max_sample_rate` allows (events in the rest of that tick are not
    /// sampled and cannot be counted).
    pub throttled: u64,
    /// Samples whose user stack could not be unwound past the sampled instruction.
    pub shallow_user_stacks: u64,
    /// Samples for an event id no event of this recording has (should not happen).
    pub unattributed: u64,
    /// Samples of events weighed by an argument (`mmap`'s length) whose raw data did not
    /// hold it.
    pub unweighable: u64,
    /// Records that could not be parsed.
    pub bad_records: u64,
    /// Off-CPU blocks lost: the kernel's buffer of finished blocks was full (they are
    /// not in the profile).
    pub offcpu_dropped_blocks: u64,
    /// Their time off CPU, in nanoseconds.
    pub offcpu_dropped_ns: u64,
    /// When they were lost: `(start of the second, CLOCK_MONOTONIC ns; blocks lost in it)`,
    /// as the recorder noticed at its drains.
    pub offcpu_dropped_per_second: Vec<(u64, u64)>,
    /// Off-CPU blocks shorter than the minimum asked for (not in the profile).
    pub offcpu_short_blocks: u64,
    /// Off-CPU blocks seen (traced threads going to sleep).
    pub offcpu_blocks: u64,
    /// Off-CPU (and runnable) blocks wholly outside the sampling window: ended before
    /// sampling began (the collector runs from before it, through a warm-up), or began
    /// after it ended. Blocks across an edge are cut to it.
    pub offcpu_before_window: u64,
    /// Off-CPU blocks whose end was not seen (the kernel refused the thread's state
    /// when it ran again, as happens while another thread's state is freed on that
    /// CPU): their time is unknown, so they are not in the profile.
    pub offcpu_unseen_ends: u64,
    /// Off-CPU (and runnable) blocks whose user stack is the frame-pointer walk alone:
    /// the kernel could not store the copy of their stack a full unwind needs (its
    /// buffer of copies was full while the collector fell behind), so frames of code
    /// built without frame pointers (Debian's libc, libuv) are missing from them.
    pub offcpu_fp_only: u64,
    /// Off-CPU blocks recorded without their waker (with wakers asked for): no wake-up
    /// was seen, or it came before the minimum block time.
    pub offcpu_without_waker: u64,
    /// Frames of every sample (code frames: thread names and `--` separators apart).
    pub frames: u64,
    /// Of them, frames named by a symbol (ELF symbol tables and debug files, kallsyms,
    /// JIT perf maps).
    pub named_frames: u64,
    /// The images with the most frames without a name (at most three), most first.
    pub unnamed_images: Vec<UnnamedImage>,
    /// `brk` calls weighed 0 because their process's previous break was unknown (its
    /// first call seen, usually glibc's `brk(0)` query).
    pub brk_unknown_base: u64,
    /// Problems that did not stop the recording (e.g. the off-CPU collector failing
    /// midway: what it had gathered is kept).
    pub warnings: Vec<String>,
    /// How the stacks unwound in the kernel ended (when they were).
    #[cfg(feature = "bpf")]
    pub in_kernel: Option<crate::InKernelSummary>,
    /// What kiln's own eBPF programs cost the machine, per program: CPU time the kernel
    /// spent in them (on the recorded threads' behalf, outside kiln's process), and runs.
    pub own_bpf: Vec<BpfCost>,
    /// How the Python processes' frames were read (see [`crate::python`]).
    pub python: PythonSummary,
}

/// How the frames of Python processes were read and merged into their stacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PythonSummary {
    /// The processes whose Python frames were read, with their version: `(pid, (3, 11))`.
    pub processes: Vec<(u32, (u8, u8))>,
    /// Samples with their thread's Python frames in place of the evaluation loop.
    pub merged: u64,
    /// Samples of those processes unwound in the kernel without Python frames: a thread
    /// Python does not know, or the interpreter not running yet. Their stacks are native
    /// only, as are those unwound from stack copies (counted with the in-kernel walks:
    /// taken before the process's tables reached the kernel).
    pub without_frames: u64,
    /// Samples whose frames ended at memory that could not be read (those read are kept).
    pub unreadable: u64,
    /// Samples cut at 128 Python frames: their outermost frames are missing.
    pub truncated: u64,
    /// Runs of Python frames with no evaluation-loop frame in the native stack to take
    /// the place of (the native walk ended before it): put at the stack's root side.
    pub unplaced_runs: u64,
    /// Evaluation-loop frames with no Python frames to put in their place (left out, as
    /// py-spy leaves them: a loop entered before its first frame was pushed).
    pub empty_loops: u64,
    /// Python frames whose code object could not be read (left out).
    pub unnamed_frames: u64,
}

/// CPU time and runs of one of kiln's eBPF programs during a recording.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BpfCost {
    /// Which program: `sampler` (stacks of perf events), `off-CPU`.
    pub program: &'static str,
    /// Nanoseconds of CPU spent in it.
    pub cpu_ns: u64,
    /// Times it ran.
    pub runs: u64,
    /// Times the kernel skipped it because another eBPF program was running on that CPU:
    /// for the sampler, samples dropped (also counted in [`RecordingSummary::lost`]); for
    /// the off-CPU programs, switches and wake-ups not seen.
    pub missed: u64,
}

impl RecordingSummary {
    /// Finds the Debian package of each stripped image among [`RecordingSummary::unnamed_images`]
    /// (one `dpkg -S` for all: ~0.1 s, which is why the recording does not do it before
    /// its output is written).
    pub fn find_packages(&mut self) {
        let stripped: Vec<usize> = (0..self.unnamed_images.len())
            .filter(|&i| self.unnamed_images[i].note.is_some())
            .collect();
        let paths: Vec<&std::path::Path> = stripped
            .iter()
            .map(|&i| self.unnamed_images[i].path.as_path())
            .collect();
        let found = crate::debuginfo::packages_of(&paths);
        for (i, p) in stripped.into_iter().zip(found) {
            self.unnamed_images[i].package = p;
        }
    }

    /// The CPU time of all of kiln's eBPF programs, in nanoseconds (`None` when not
    /// measured).
    pub fn own_bpf_cpu_ns(&self) -> Option<u64> {
        (!self.own_bpf.is_empty()).then(|| self.own_bpf.iter().map(|c| c.cpu_ns).sum())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Loc {
    /// The `--` between a blocked thread's stack and its waker's.
    #[cfg_attr(not(feature = "bpf"), allow(dead_code))]
    Separator,
    Comm(Box<[u8]>),
    Kernel(u64),
    User(UserLoc),
    /// A Python frame, named (`qualname (file:line)`).
    Python(Box<[u8]>),
    /// A native frame of a stack with Python frames merged in, in the interpreter's image
    /// or JIT code: left out when it is the interpreter's machinery (see
    /// [`crate::python::keeps_interpreter_function`]) or a perf trampoline (`py::…`).
    PyNative(UserLoc),
}

/// How frames are named.
#[derive(Clone, Copy, Debug, Default)]
pub struct NamingOptions {
    /// Append `_[k]` to kernel frames, as `stackcollapse-perf.pl --kernel` does. Default: false.
    pub annotate_kernel: bool,
    /// Append `_[j]` to JIT frames (perf-map symbols), as `stackcollapse-perf.pl --jit` does.
    /// Default: false.
    pub annotate_jit: bool,
}

struct EventAcc {
    info: EventInfo,
    /// Source weights are divided by this (1, or 1000 for off-CPU nanoseconds kept in
    /// microseconds), with per-node carries: `(source total, weight given)` per node, so
    /// that a stack's weights add up to its rounded total.
    divisor: u64,
    carry: Vec<(u64, u64)>,
    node_index: FastMap<(u32, u32), u32>,
    node_parent: Vec<u32>,
    node_loc: Vec<u32>,
    threads: FastMap<(u32, u32, u32), u32>,
    s_node: Vec<u32>,
    s_weight: Vec<u64>,
    s_time: Vec<u64>,
    s_thread: Vec<u32>,
}

const NO_PARENT: u32 = u32::MAX;

impl EventAcc {
    fn new(info: EventInfo) -> Self {
        EventAcc {
            divisor: 1,
            carry: Vec::new(),
            info,
            node_index: FastMap::default(),
            node_parent: Vec::new(),
            node_loc: Vec::new(),
            threads: FastMap::default(),
            s_node: Vec::new(),
            s_weight: Vec::new(),
            s_time: Vec::new(),
            s_thread: Vec::new(),
        }
    }
}

/// The user part of a stack as a source provides it.
pub(crate) enum UserStack<'a> {
    /// Registers and a copy of the stack from `sp` upwards: unwound here.
    Regs {
        ip: u64,
        sp: u64,
        bp: u64,
        stack: &'a [u8],
        /// The kernel's frame-pointer walk of the same stack (may be empty): where the
        /// copy ends at JIT code whose frames live elsewhere (the BEAM's Erlang stack),
        /// the walk goes on with it.
        fp_chain: &'a [u64],
    },
    /// Addresses already walked (frame-pointer call chains), leaf first; the first is the
    /// sampled instruction, the rest return addresses.
    Ips(&'a [u64]),
    /// Addresses to look up as they are (what [`Collector::unwind_user`] gives), leaf
    /// first.
    #[cfg_attr(not(feature = "bpf"), allow(dead_code))]
    Lookup(&'a [u64]),
    /// Addresses already walked ([`UserStack::Ips`]) and the thread's Python frames,
    /// innermost first, read at the same instant: merged when the process is a Python
    /// process kiln knows.
    #[cfg_attr(not(feature = "bpf"), allow(dead_code))]
    Python {
        ips: &'a [u64],
        frames: &'a [crate::python::FrameRef],
    },
    /// No user part (kernel threads, or the sample was taken in the kernel with no user
    /// context).
    None,
}

/// Accumulates samples of several events.
pub(crate) struct Collector {
    images: Images,
    procs: FastMap<u32, Process>,
    comms: FastMap<u32, Box<[u8]>>,
    /// Root location of each thread's current name.
    comm_locs: FastMap<u32, u32>,
    locs: FastMap<Loc, u32>,
    addrs: Vec<u64>,
    user_locs: Vec<UserLoc>,
    loc_list: Vec<Loc>,
    events: Vec<EventAcc>,
    naming: NamingOptions,
    path: Vec<u32>,
    /// Whether the processes are live (read `/proc` for what no record said) or from a
    /// file (where `/proc` would describe some other, current process).
    live: bool,
    /// The kernel's symbols, parsed on the tables thread when there is one.
    kallsyms: std::sync::Arc<std::sync::OnceLock<KernelSymbols>>,
    /// Processes whose executable mappings changed (for the in-kernel unwinder's tables).
    changed: FastSet<u32>,
    /// Processes that exited.
    exited: Vec<u32>,
    /// Processes that exec'd (for the off-CPU collector's code ranges).
    execs: Vec<u32>,
    /// When each process last exec'd, by the records' times (ns).
    exec_ns: FastMap<u32, u64>,
    /// Each process's executable mappings of the last [`RECENT_NS`], by the records' times.
    /// The CPUs' rings are read one after the other, so a process that moved to another
    /// CPU while it exec'd has its exec (one ring) handled after the mappings it made just
    /// after (another ring): the exec must keep those, not wipe them.
    recent_maps: FastMap<u32, std::collections::VecDeque<RecentMap>>,
    /// Processes whose interpreter image was found: the image, its bias, and what reads
    /// its frames (`None`: a version kiln does not read).
    python: FastMap<u32, (u32, u64, Option<crate::python::Process>)>,
    pub summary: RecordingSummary,
}

/// How long a mapping's record is remembered for an exec handled after it: rings are read
/// every 10 ms while sampling, so their records are never this far apart.
const RECENT_NS: u64 = 2_000_000_000;

/// An executable mapping as its record announced it.
struct RecentMap {
    time: u64,
    start: u64,
    len: u64,
    pgoff: u64,
    path: Box<[u8]>,
}

impl Collector {
    pub fn new(events: Vec<EventInfo>, naming: NamingOptions, live: bool) -> Self {
        Collector {
            live,
            kallsyms: Default::default(),
            images: Images::new(live),
            procs: FastMap::default(),
            comms: FastMap::default(),
            comm_locs: FastMap::default(),
            locs: FastMap::default(),
            addrs: Vec::new(),
            user_locs: Vec::new(),
            loc_list: Vec::new(),
            summary: RecordingSummary {
                samples: vec![0; events.len()],
                ..Default::default()
            },
            events: events.into_iter().map(EventAcc::new).collect(),
            naming,
            path: Vec::new(),
            changed: FastSet::default(),
            exited: Vec::new(),
            execs: Vec::new(),
            exec_ns: FastMap::default(),
            recent_maps: FastMap::default(),
            python: FastMap::default(),
        }
    }

    fn loc(&mut self, l: Loc) -> u32 {
        if let Some(&id) = self.locs.get(&l) {
            return id;
        }
        let id = self.loc_list.len() as u32;
        self.loc_list.push(l.clone());
        self.locs.insert(l, id);
        id
    }

    fn process(&mut self, pid: u32) -> &mut Process {
        let images = &mut self.images;
        let live = self.live;
        let changed = &mut self.changed;
        self.procs.entry(pid).or_insert_with(|| {
            changed.insert(pid);
            if live {
                Process::from_proc(pid, images)
            } else {
                Process::empty()
            }
        })
    }

    /// Starts following process `pid`, whose `/proc/PID/maps` reads `maps`.
    pub fn track(&mut self, pid: u32, maps: &[u8]) {
        let p = Process::from_maps(maps, &mut self.images);
        self.procs.insert(pid, p);
        self.changed.insert(pid);
    }

    /// Reads a live process's mappings from `/proc` again (mappings that no record
    /// announced: code made executable by `mprotect`); returns whether they changed.
    #[cfg(feature = "bpf")]
    pub(crate) fn refresh(&mut self, pid: u32) -> bool {
        if !self.live {
            return false;
        }
        let fresh = Process::from_proc(pid, &mut self.images);
        let changed = match self.procs.get(&pid) {
            Some(old) => fresh.mappings().next().is_some() && !old.same_mappings(&fresh),
            None => true,
        };
        if changed {
            self.procs.insert(pid, fresh);
            self.changed.insert(pid);
        }
        changed
    }

    /// Processes whose executable mappings changed, and processes that exited, since the
    /// last call.
    #[cfg(feature = "bpf")]
    pub(crate) fn take_changes(&mut self) -> (Vec<u32>, Vec<u32>) {
        let mut changed: Vec<u32> = self.changed.drain().collect();
        changed.sort_unstable();
        (changed, std::mem::take(&mut self.exited))
    }

    /// Processes that exec'd since the last call.
    #[cfg(feature = "bpf")]
    pub(crate) fn take_execs(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.execs)
    }

    /// A process's mappings and the images they refer to.
    #[cfg(feature = "bpf")]
    pub(crate) fn process_view(&self, pid: u32) -> Option<(&Process, &Images)> {
        Some((self.procs.get(&pid)?, &self.images))
    }

    /// A process or thread exited.
    pub(crate) fn on_exit(&mut self, pid: u32, tid: u32) {
        if pid == tid {
            self.exited.push(pid);
            self.exec_ns.remove(&pid);
            self.recent_maps.remove(&pid);
        }
    }

    /// A thread's name changed (or was first seen), at `time` when the record says; `exec`
    /// resets the process's mappings to those it made after the exec.
    pub(crate) fn on_comm(
        &mut self,
        pid: u32,
        tid: u32,
        name: &[u8],
        exec: bool,
        time: Option<u64>,
    ) {
        self.comms.insert(tid, name.into());
        self.comm_locs.remove(&tid);
        if !(exec && pid == tid) {
            return;
        }
        if let Some(t) = time {
            if self.exec_ns.get(&pid).is_some_and(|&later| t < later) {
                return; // a later exec of the process was handled already
            }
            self.exec_ns.insert(pid, t);
        }
        let mut p = Process::empty();
        // Mappings made after this exec whose records were handled before it.
        if let (Some(t), Some(recent)) = (time, self.recent_maps.get_mut(&pid)) {
            recent.retain(|m| m.time >= t);
            for m in recent.iter() {
                p.add_mapping(
                    m.start,
                    m.start.saturating_add(m.len),
                    m.pgoff,
                    &m.path,
                    &mut self.images,
                );
            }
        }
        self.procs.insert(pid, p);
        self.changed.insert(pid);
        self.execs.push(pid);
    }

    /// Names a thread unless a record already did.
    #[cfg(feature = "bpf")]
    pub(crate) fn on_comm_if_unknown(&mut self, tid: u32, name: &[u8]) {
        self.comms.entry(tid).or_insert_with(|| name.into());
    }

    /// A process or thread was created.
    pub(crate) fn on_fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        if pid != ppid {
            if let Some(parent) = self.procs.get(&ppid) {
                let child = parent.fork();
                self.procs.insert(pid, child);
                self.changed.insert(pid);
            }
        }
        if let Some(c) = self.comms.get(&ptid).cloned() {
            self.comms.entry(tid).or_insert(c);
            self.comm_locs.remove(&tid);
        }
    }

    /// An executable mapping appeared, at `time` when the record says.
    pub(crate) fn on_mmap(
        &mut self,
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &[u8],
        time: Option<u64>,
    ) {
        if pid == u32::MAX || pid == 0 {
            return; // kernel modules
        }
        if let Some(t) = time {
            if self.exec_ns.get(&pid).is_some_and(|&exec| t < exec) {
                return; // made before an exec handled already: gone with it
            }
            let recent = self.recent_maps.entry(pid).or_default();
            while recent
                .front()
                .is_some_and(|m| m.time.saturating_add(RECENT_NS) < t)
            {
                recent.pop_front();
            }
            recent.push_back(RecentMap {
                time: t,
                start,
                len,
                pgoff,
                path: path.into(),
            });
        }
        self.process(pid);
        if let Some(p) = self.procs.get_mut(&pid) {
            // Replaces the same mapping if /proc already listed it.
            p.add_mapping(
                start,
                start.saturating_add(len),
                pgoff,
                path,
                &mut self.images,
            );
            self.changed.insert(pid);
        }
    }

    fn comm_of(&mut self, pid: u32, tid: u32) -> Box<[u8]> {
        if let Some(c) = self.comms.get(&tid) {
            return c.clone();
        }
        let from_proc = if self.live {
            std::fs::read(format!("/proc/{pid}/task/{tid}/comm")).ok()
        } else {
            None
        };
        let name = from_proc
            .map(|mut v| {
                while v.last() == Some(&b'\n') {
                    v.pop();
                }
                v
            })
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| format!(":{tid}").into_bytes());
        let b: Box<[u8]> = name.into();
        self.comms.insert(tid, b.clone());
        b
    }

    /// Adds one sample of event `ev`. `kernel` holds kernel addresses, leaf first.
    #[allow(clippy::too_many_arguments)]
    pub fn add_sample(
        &mut self,
        ev: usize,
        pid: u32,
        tid: u32,
        time: u64,
        weight: u64,
        kernel: &mut dyn Iterator<Item = u64>,
        user: UserStack<'_>,
    ) {
        if ev >= self.events.len() {
            self.summary.unattributed += 1;
            return;
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        self.side_path(pid, tid, kernel, user, &mut path);
        self.add_path(ev, pid, tid, time, weight, path);
    }

    /// Adds one off-CPU sample whose stack goes on with the stack of the thread that
    /// woke it, as bcc's `offwaketime` draws it: the blocked thread's stack from its
    /// root, a `--` frame, then the waker's stack from its leaf (where it woke the
    /// blocked thread) to its root (its thread name) at the top.
    #[cfg(feature = "bpf")]
    pub(crate) fn add_woken_sample(
        &mut self,
        ev: usize,
        time: u64,
        weight: u64,
        blocked: (u32, u32, &[u64], &[u64]),
        waker: (u32, u32, &[u64], &[u64]),
    ) {
        if ev >= self.events.len() {
            self.summary.unattributed += 1;
            return;
        }
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        let (wpid, wtid, wk, wu) = waker;
        self.side_path(
            wpid,
            wtid,
            &mut wk.iter().copied(),
            UserStack::Lookup(wu),
            &mut path,
        );
        path.reverse();
        let sep = self.loc(Loc::Separator);
        path.push(sep);
        let (pid, tid, k, u) = blocked;
        self.side_path(
            pid,
            tid,
            &mut k.iter().copied(),
            UserStack::Lookup(u),
            &mut path,
        );
        self.add_path(ev, pid, tid, time, weight, path);
    }

    /// Appends one thread's stack, leaf first: kernel frames, user frames, its name.
    fn side_path(
        &mut self,
        pid: u32,
        tid: u32,
        kernel: &mut dyn Iterator<Item = u64>,
        user: UserStack<'_>,
        path: &mut Vec<u32>,
    ) {
        for a in kernel {
            let l = self.loc(Loc::Kernel(a));
            path.push(l);
        }
        let mut user_locs = std::mem::take(&mut self.user_locs);
        user_locs.clear();
        match user {
            UserStack::Regs {
                ip,
                sp,
                bp,
                stack,
                fp_chain,
            } if ip != 0 => {
                let mut addrs = std::mem::take(&mut self.addrs);
                addrs.clear();
                let p = self.process(pid);
                let n = p.unwind(ip, sp, bp, stack, fp_chain, |a| addrs.push(a));
                if n <= 1 {
                    self.summary.shallow_user_stacks += 1;
                }

                let p = &self.procs[&pid];
                user_locs.extend(addrs.iter().map(|&a| p.locate(a, pid, &self.images)));
                self.addrs = addrs;
            }
            UserStack::Ips(ips) if !ips.is_empty() => {
                self.process(pid);
                let p = &self.procs[&pid];
                for (i, &a) in ips.iter().enumerate() {
                    let a = if i == 0 { a } else { a.saturating_sub(1) };
                    user_locs.push(p.locate(a, pid, &self.images));
                }
            }
            UserStack::Lookup(addrs) if !addrs.is_empty() => {
                self.process(pid);
                let p = &self.procs[&pid];
                user_locs.extend(addrs.iter().map(|&a| p.locate(a, pid, &self.images)));
            }
            UserStack::Python { ips, frames } if !ips.is_empty() => {
                self.process(pid);
                let mut locs = Vec::with_capacity(ips.len() + frames.len());
                if self.python_locs(pid, ips, frames, &mut locs) {
                    for l in locs {
                        let l = self.loc(l);
                        path.push(l);
                    }
                } else {
                    let p = &self.procs[&pid];
                    for (i, &a) in ips.iter().enumerate() {
                        let a = if i == 0 { a } else { a.saturating_sub(1) };
                        user_locs.push(p.locate(a, pid, &self.images));
                    }
                }
            }
            _ => {}
        }
        for u in user_locs.drain(..) {
            let l = self.loc(Loc::User(u));
            path.push(l);
        }
        self.user_locs = user_locs;
        let comm_loc = match self.comm_locs.get(&tid) {
            Some(&l) => l,
            None => {
                let comm = self.comm_of(pid, tid);
                let l = self.loc(Loc::Comm(comm));
                self.comm_locs.insert(tid, l);
                l
            }
        };
        path.push(comm_loc);
    }

    /// Adds a sample whose stack is `path` (locations, leaf first; its last is the
    /// thread's name).
    fn add_path(&mut self, ev: usize, pid: u32, tid: u32, time: u64, weight: u64, path: Vec<u32>) {
        let comm_loc = *path.last().unwrap_or(&0);
        let acc = &mut self.events[ev];
        let mut node = NO_PARENT;
        for &l in path.iter().rev() {
            let next = acc.node_parent.len() as u32;
            node = *acc.node_index.entry((node, l)).or_insert_with(|| {
                acc.node_parent.push(node);
                acc.node_loc.push(l);
                next
            });
        }
        let weight = if acc.divisor > 1 {
            let i = node as usize;
            if acc.carry.len() <= i {
                acc.carry.resize(i + 1, (0, 0));
            }
            let (total, given) = &mut acc.carry[i];
            *total = total.saturating_add(weight);
            let rounded = total.saturating_add(acc.divisor / 2) / acc.divisor;
            let w = rounded - *given;
            *given = rounded;
            w
        } else {
            weight
        };
        let nthreads = acc.threads.len() as u32;
        let th = *acc.threads.entry((pid, tid, comm_loc)).or_insert(nthreads);
        acc.s_node.push(node);
        acc.s_weight.push(weight);
        acc.s_time.push(time);
        acc.s_thread.push(th);
        self.summary.samples[ev] += 1;
        self.path = path;
    }

    /// Unwinds a user stack of process `pid` (registers and a copy of the stack from
    /// `sp` up, see [`UserStack::Regs`]) into lookup addresses, leaf first, appended to
    /// `out`; returns their number.
    #[cfg(feature = "bpf")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn unwind_user(
        &mut self,
        pid: u32,
        ip: u64,
        sp: u64,
        bp: u64,
        stack: &[u8],
        fp_chain: &[u64],
        out: &mut Vec<u64>,
    ) -> usize {
        if ip == 0 {
            return 0;
        }
        self.process(pid)
            .unwind(ip, sp, bp, stack, fp_chain, |a| out.push(a))
    }

    /// Samples of event `ev` will be given in nanoseconds while its unit is
    /// microseconds: divide them (see [`crate::RecordOptions::offcpu_unit`]).
    pub(crate) fn weigh_ns_as_us(&mut self, ev: usize) {
        if let Some(acc) = self.events.get_mut(ev) {
            acc.divisor = 1000;
        }
    }

    /// A collector of live processes whose symbol and unwind tables are built on a
    /// second thread (see `Images::with_tables_thread`).
    pub fn live(events: Vec<EventInfo>, naming: NamingOptions) -> Self {
        let mut c = Collector::new(events, naming, true);
        let (mut images, kallsyms) = Images::with_tables_thread(true);
        images.debuginfod = crate::debuginfo::Debuginfod::from_env().map(std::sync::Arc::new);
        c.images = images;
        c.kallsyms = kallsyms;
        c
    }

    /// Fetch missing debug files from this debuginfod client (see [`crate::debuginfo`]).
    pub(crate) fn use_debuginfod(&mut self, d: Option<crate::debuginfo::Debuginfod>) {
        self.images.debuginfod = d.map(std::sync::Arc::new);
    }

    #[cfg(feature = "bpf")]
    fn kallsyms(&self) -> &KernelSymbols {
        self.kallsyms.get_or_init(KernelSymbols::read)
    }

    /// Drops the leaf kernel frames that belong to the tracing machinery that took the
    /// stack (`bpf_prog_*`, `bpf_trace_run*`, `__traceiter_*`, a tracepoint's perf probe
    /// `perf_syscall_enter`, `perf_trace_*`), so an off-CPU stack ends in the scheduler
    /// as bcc's `offcputime` shows it, and a tracepoint's where the tracepoint fired.
    #[cfg(feature = "bpf")]
    pub(crate) fn trim_tracing_frames<'a>(&mut self, kernel: &'a [u64]) -> &'a [u64] {
        let t = self.kallsyms();
        let skip = kernel
            .iter()
            .take_while(|&&a| {
                t.lookup(a).is_none_or(|n| {
                    n.starts_with(b"bpf_prog_")
                        || n.starts_with(b"bpf_trace_run")
                        || n.starts_with(b"__traceiter_")
                        || n.starts_with(b"__bpf_trace_")
                        || n.starts_with(b"perf_syscall_")
                        || n.starts_with(b"perf_trace_")
                        || n == b"trace_call_bpf"
                })
            })
            .count();
        &kernel[skip..]
    }

    /// Names every location and builds one profile per event.
    pub fn finish(mut self) -> (Vec<Profile>, RecordingSummary) {
        self.warn_python_unread();
        let ks = self.kallsyms.clone();
        let mut kallsyms = ks.get_or_init(KernelSymbols::read);
        // Code the kernel loaded after kallsyms was read (eBPF programs, modules) has no
        // symbol in that copy: read it again, once, when some kernel address needs it.
        let fresh;
        if self
            .loc_list
            .iter()
            .any(|l| matches!(l, Loc::Kernel(a) if kallsyms.lookup(*a).is_none()))
        {
            fresh = KernelSymbols::read();
            kallsyms = &fresh;
        }
        self.ask_for_perf_maps();
        let mut perf_maps: HashMap<u32, Option<PerfMap>> = HashMap::new();
        let mut unnamed_jit: HashMap<u32, u64> = HashMap::new();
        let mut names: Vec<(Vec<u8>, FrameKind)> = Vec::with_capacity(self.loc_list.len());
        // Whether each location is named by a symbol: `None` for the thread names and
        // separators, which are no code; `Some(Err(image))` for code of an ELF image
        // without a symbol there.
        let mut named: Vec<Option<Result<(), Option<u32>>>> =
            Vec::with_capacity(self.loc_list.len());
        // Native frames of stacks with Python frames merged in that py-spy leaves out.
        let mut dropped = vec![false; self.loc_list.len()];
        for (i, loc) in self.loc_list.iter().enumerate() {
            named.push(self.symbol_found(kallsyms, loc));
            let name = match loc {
                Loc::User(u) | Loc::PyNative(u) => {
                    let (name, jit_named) = self.user_name(kallsyms, u, &mut perf_maps);
                    if !jit_named {
                        named[i] = Some(Err(None));
                        if let UserLoc::Jit { pid, .. } = u {
                            *unnamed_jit.entry(*pid).or_default() += 1;
                        }
                    }
                    if matches!(loc, Loc::PyNative(_)) && !kept_beside_python(u, &name.0) {
                        dropped[i] = true;
                        named[i] = None;
                    }
                    name
                }
                _ => self.name_of(kallsyms, loc),
            };
            names.push(name);
        }
        self.count_named_frames(&named);
        self.warn_unnamed_jit(&unnamed_jit, &perf_maps);
        let profiles = self
            .events
            .into_iter()
            .map(|acc| profile_of(acc, &names, &dropped))
            .collect();
        (profiles, self.summary)
    }

    /// The frame name and kind of a user location; false when it is JIT code its perf map
    /// does not name.
    fn user_name(
        &self,
        kallsyms: &KernelSymbols,
        u: &UserLoc,
        perf_maps: &mut HashMap<u32, Option<PerfMap>>,
    ) -> ((Vec<u8>, FrameKind), bool) {
        let UserLoc::Jit { pid, addr } = u else {
            return (self.name_of(kallsyms, &Loc::User(u.clone())), true);
        };
        let m = perf_maps
            .entry(*pid)
            .or_insert_with(|| PerfMap::for_pid(*pid));
        match m.as_ref().and_then(|m| m.lookup(*addr)) {
            Some(n) => {
                let mut n = n.to_vec();
                if self.naming.annotate_jit {
                    n.extend_from_slice(b"_[j]");
                }
                ((n, FrameKind::Jit), true)
            }
            None => ((b"[unknown]".to_vec(), FrameKind::User), false),
        }
    }

    /// JIT code of a runtime that writes its perf map on demand (a JVM): asked now,
    /// before its frames are named.
    fn ask_for_perf_maps(&mut self) {
        let jit_pids: std::collections::BTreeSet<u32> = self
            .loc_list
            .iter()
            .filter_map(|l| match l {
                Loc::User(UserLoc::Jit { pid, .. }) => Some(*pid),
                _ => None,
            })
            .collect();
        for &pid in &jit_pids {
            self.summary
                .warnings
                .extend(crate::runtimes::ask_for_perf_map(pid));
        }
    }

    /// Whether `loc` has a symbol: `None` for no code, `Some(Err(image))` for code of
    /// an ELF image without a symbol there; JIT code is decided when it is named.
    fn symbol_found(&self, kallsyms: &KernelSymbols, loc: &Loc) -> Option<Result<(), Option<u32>>> {
        match loc {
            Loc::Separator | Loc::Comm(_) => None,
            Loc::Kernel(a) => Some(kallsyms.lookup(*a).map(|_| ()).ok_or(None)),
            Loc::User(UserLoc::Elf { image, svma }) => Some(
                self.images.list[*image as usize]
                    .symbols()
                    .lookup(*svma)
                    .map(|_| ())
                    .ok_or(Some(*image)),
            ),
            Loc::User(UserLoc::Jit { .. }) => Some(Ok(())),
            Loc::User(UserLoc::Named { .. }) => Some(Err(None)),
            Loc::PyNative(u) => self.symbol_found(kallsyms, &Loc::User(u.clone())),
            Loc::Python(_) => Some(Ok(())),
        }
    }

    /// The frame name and kind of a location that is not JIT code.
    fn name_of(&self, kallsyms: &KernelSymbols, loc: &Loc) -> (Vec<u8>, FrameKind) {
        match loc {
            Loc::Separator => (b"--".to_vec(), FrameKind::Unknown),
            // The root frame names the thread as stackcollapse-perf.pl does (spaces
            // become `_`), so `kiln record` and `perf script | kiln collapse` agree.
            Loc::Comm(c) => (
                c.iter()
                    .map(|&b| if b == b' ' { b'_' } else { b })
                    .collect(),
                FrameKind::Root,
            ),
            Loc::Kernel(a) => {
                let mut n = kallsyms.name(*a).to_vec();
                if self.naming.annotate_kernel {
                    n.extend_from_slice(b"_[k]");
                }
                (n, FrameKind::Kernel)
            }
            Loc::User(UserLoc::Elf { image, svma }) => {
                let img = &self.images.list[*image as usize];
                match img.symbols().lookup(*svma) {
                    Some(n) => (demangle(n), FrameKind::User),
                    None => (
                        offset_name(&img.path, img.function_start(*svma).unwrap_or(*svma)),
                        FrameKind::User,
                    ),
                }
            }
            Loc::User(UserLoc::Named { name }) => (name.to_vec(), FrameKind::User),
            Loc::User(UserLoc::Jit { .. }) => (b"[unknown]".to_vec(), FrameKind::User),
            Loc::PyNative(u) => self.name_of(kallsyms, &Loc::User(u.clone())),
            Loc::Python(name) => (name.to_vec(), FrameKind::Python),
        }
    }

    /// JIT code left without names: what its runtime needs.
    fn warn_unnamed_jit(
        &mut self,
        unnamed_jit: &HashMap<u32, u64>,
        perf_maps: &HashMap<u32, Option<PerfMap>>,
    ) {
        for (&pid, n) in unnamed_jit {
            if let Some(rt) = crate::runtimes::Runtime::of(pid) {
                let why = if perf_maps.get(&pid).is_some_and(|m| m.is_some()) {
                    "its perf map has no entry for them"
                } else {
                    "it wrote no perf map"
                };
                self.summary.warnings.push(format!(
                    "{n} locations in JIT code of process {pid} have no name ({why}): {}",
                    rt.advice_for(pid)
                ));
            }
        }
    }
}

/// Python processes: finding their interpreter, merging their frames into their stacks.
impl Collector {
    /// The interpreter image of process `pid`: its id, its bias (runtime minus stated
    /// address) and what it is.
    fn interpreter_of(&self, pid: u32) -> Option<(u32, u64, Arc<python::Interpreter>)> {
        let p = self.procs.get(&pid)?;
        p.mappings().find_map(|(start, m)| match m.kind {
            MapKind::Elf(id) => {
                let img = &self.images.list[id as usize];
                let interp = img.python()?.clone();
                Some((id, img.base_avma(start, m.pgoff), interp))
            }
            _ => None,
        })
    }

    /// Where the in-kernel sampler finds process `pid`'s Python frames: its version's
    /// layout and the address of its runtime's list of interpreters; `None` when it runs
    /// no interpreter kiln reads (a version it does not know is said once).
    #[cfg(feature = "bpf")]
    pub(crate) fn python_layout(&mut self, pid: u32) -> Option<(&'static python::Layout, u64)> {
        let Some((image, bias, interp)) = self.interpreter_of(pid) else {
            self.python.remove(&pid);
            return None;
        };
        let known = self
            .python
            .get(&pid)
            .is_some_and(|e| e.0 == image && e.1 == bias);
        if !known {
            let (major, minor) = interp.version;
            let layout = python::layout(major, minor);
            if layout.is_none() {
                self.summary.warnings.push(format!(
                    "process {pid} runs Python {major}.{minor}: kiln reads the frames of Python {}; \
                     its stacks show the interpreter's C functions",
                    python::known_versions()
                ));
            } else {
                self.summary.python.processes.push((pid, (major, minor)));
            }
            let reader = layout.map(|l| python::Process::new(pid, l, image, interp.clone(), bias));
            self.python.insert(pid, (image, bias, reader));
        }
        let p = self.python.get(&pid)?.2.as_ref()?;
        let head = interp
            .runtime
            .wrapping_add(bias)
            .wrapping_add(u64::from(p.layout.runtime_interp_head));
        Some((p.layout, head))
    }

    /// The locations of a sample of process `pid` with its Python frames merged in, leaf
    /// first (see [`crate::python`]); false when the process is no Python process kiln reads.
    fn python_locs(
        &mut self,
        pid: u32,
        ips: &[u64],
        frames: &[python::FrameRef],
        out: &mut Vec<Loc>,
    ) -> bool {
        let (Some((_, _, Some(py))), Some(proc_)) =
            (self.python.get_mut(&pid), self.procs.get(&pid))
        else {
            return false;
        };
        let s = &mut self.summary.python;
        let runs = python::loop_runs(py.layout, frames);
        let mut next = 0;
        for (i, &a) in ips.iter().enumerate() {
            let a = if i == 0 { a } else { a.saturating_sub(1) };
            match proc_.locate(a, pid, &self.images) {
                UserLoc::Elf { image, svma }
                    if image == py.image && py.interpreter.in_eval_loop(svma) =>
                {
                    match runs.get(next) {
                        Some(r) => push_python_frames(py, &frames[r.clone()], s, out),
                        None => s.empty_loops += 1,
                    }
                    next += 1;
                }
                u @ UserLoc::Elf { image, .. } if image == py.image => out.push(Loc::PyNative(u)),
                u @ UserLoc::Jit { .. } => out.push(Loc::PyNative(u)),
                u => out.push(Loc::User(u)),
            }
        }
        for r in runs.iter().skip(next) {
            s.unplaced_runs += 1;
            push_python_frames(py, &frames[r.clone()], s, out);
        }
        s.merged += 1;
        true
    }

    /// Says which processes run an interpreter whose frames this recording did not read
    /// (stacks copied instead of unwound in the kernel, or eBPF unavailable).
    fn warn_python_unread(&mut self) {
        let mut unread: Vec<u32> = self
            .procs
            .keys()
            .copied()
            .filter(|pid| !self.python.contains_key(pid))
            .filter(|&pid| {
                self.interpreter_of(pid)
                    .is_some_and(|(_, _, i)| python::layout(i.version.0, i.version.1).is_some())
            })
            .collect();
        if unread.is_empty() {
            return;
        }
        unread.sort_unstable();
        let n = unread.len();
        let list: Vec<String> = unread.iter().take(5).map(u32::to_string).collect();
        self.summary.warnings.push(format!(
            "{n} Python process{} ({}{}): their Python frames are read by the in-kernel sampler \
             (eBPF, --unwind kernel), which this recording did not use for them; their stacks \
             show the interpreter's C functions",
            if n == 1 { "" } else { "es" },
            list.join(", "),
            if n > 5 { ", …" } else { "" }
        ));
    }
}

/// Appends the names of `frames` (innermost first), leaving out those without one.
fn push_python_frames(
    py: &mut python::Process,
    frames: &[python::FrameRef],
    s: &mut PythonSummary,
    out: &mut Vec<Loc>,
) {
    for f in frames {
        match py.name(f) {
            Some(n) => out.push(Loc::Python(n.into_bytes().into_boxed_slice())),
            None => s.unnamed_frames += 1,
        }
    }
}

/// Whether a native frame of a stack with Python frames merged in stays: py-spy's
/// functions of the interpreter (see [`python::keeps_interpreter_function`]), JIT code
/// other than the perf trampolines of `python -X perf` (`py::…`, the Python frames say
/// the same), and anything else.
fn kept_beside_python(u: &UserLoc, name: &[u8]) -> bool {
    match u {
        UserLoc::Elf { .. } => python::keeps_interpreter_function(name),
        UserLoc::Jit { .. } => !name.starts_with(b"py::"),
        UserLoc::Named { .. } => true,
    }
}

/// One event's profile from its accumulated stack nodes, threads and samples, its
/// frames named by `names` (one per location); nodes of `dropped` locations are left out
/// (their children hang from their parents).
fn profile_of(acc: EventAcc, names: &[(Vec<u8>, FrameKind)], dropped: &[bool]) -> Profile {
    let mut p = Profile::new(acc.info);
    let mut frame_of_loc: HashMap<u32, kiln_model::FrameId> = HashMap::new();
    let mut stack_of_node: Vec<StackId> = Vec::with_capacity(acc.node_loc.len());
    for (i, &l) in acc.node_loc.iter().enumerate() {
        let parent = acc.node_parent[i];
        let parent = (parent != NO_PARENT).then(|| stack_of_node[parent as usize]);
        if let (true, Some(parent)) = (dropped[l as usize], parent) {
            stack_of_node.push(parent);
            continue;
        }
        let f = *frame_of_loc.entry(l).or_insert_with(|| {
            let (n, k) = &names[l as usize];
            p.frame(n, *k)
        });
        stack_of_node.push(p.stacks.intern(parent, f));
    }
    let mut thread_ids = vec![kiln_model::ThreadId::NONE; acc.threads.len()];
    for (&(pid, tid, comm), &i) in &acc.threads {
        let name = &names[comm as usize].0;
        thread_ids[i as usize] = p.thread(Some(pid), Some(tid), name);
    }
    for k in 0..acc.s_node.len() {
        p.samples.push(
            stack_of_node[acc.s_node[k] as usize],
            acc.s_weight[k],
            acc.s_time[k],
            thread_ids[acc.s_thread[k] as usize],
        );
    }
    p
}

impl Collector {
    /// Counts, over every frame of every sample, the frames named by a symbol, and
    /// names the images whose code most often had none.
    fn count_named_frames(&mut self, named: &[Option<Result<(), Option<u32>>>]) {
        let mut unnamed_by_image: HashMap<u32, u64> = HashMap::new();
        let (mut total, mut good) = (0u64, 0u64);
        for acc in &self.events {
            // Samples through each node: its own, then its descendants' (a child is
            // always created after its parent).
            let mut through = vec![0u64; acc.node_loc.len()];
            for &n in &acc.s_node {
                through[n as usize] += 1;
            }
            for i in (0..through.len()).rev() {
                let p = acc.node_parent[i];
                if p != NO_PARENT {
                    through[p as usize] += through[i];
                }
            }
            for (i, &l) in acc.node_loc.iter().enumerate() {
                match named[l as usize] {
                    None => {}
                    Some(Ok(())) => {
                        total += through[i];
                        good += through[i];
                    }
                    Some(Err(img)) => {
                        total += through[i];
                        if let Some(img) = img {
                            *unnamed_by_image.entry(img).or_default() += through[i];
                        }
                    }
                }
            }
        }
        let mut worst: Vec<(u32, u64)> = unnamed_by_image.into_iter().collect();
        worst.sort_by_key(|&(img, n)| (std::cmp::Reverse(n), img));
        self.summary.frames = total;
        self.summary.named_frames = good;
        self.summary.unnamed_images = worst
            .into_iter()
            .take(3)
            .map(|(img, n)| {
                let i = &self.images.list[img as usize];
                let note = i.symbols_note().map(str::to_string);
                UnnamedImage {
                    path: i.path.clone(),
                    frames: n,
                    build_id: i.build_id(),
                    // Asked after the output is written ([`RecordingSummary::find_packages`]).
                    package: None,
                    note,
                }
            })
            .collect();
    }
}

/// An image whose code was sampled without a symbol to name it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnnamedImage {
    /// The image.
    pub path: std::path::PathBuf,
    /// Frames in its code without a name (named `image+0xSTART`).
    pub frames: u64,
    /// Why it has no symbols there, when it is stripped (no debug file found; what
    /// debuginfod answered).
    pub note: Option<String>,
    /// Its build id (hexadecimal), what debug files and debuginfod are found by.
    pub build_id: Option<String>,
    /// The Debian package that installed it, when it is stripped (`dpkg -S`).
    pub package: Option<String>,
}

impl UnnamedImage {
    /// What to do to get names there, in one sentence: the debug-symbol package of the
    /// package that installed it (from the distribution's debug archive), or a debuginfod
    /// server. Empty when the image is not stripped (its code has no symbols to find).
    pub fn fix(&self) -> String {
        if self.note.is_none() {
            return String::new();
        }
        let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        let id = os
            .lines()
            .find_map(|l| l.strip_prefix("ID="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        let codename = os
            .lines()
            .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        let server = match id.as_str() {
            "debian" => "https://debuginfod.debian.net",
            "ubuntu" => "https://debuginfod.ubuntu.com",
            "fedora" => "https://debuginfod.fedoraproject.org",
            _ => "https://debuginfod.elfutils.org",
        };
        let package = match (&self.package, id.as_str()) {
            (Some(p), "debian") => format!(
                "install {p}-dbgsym (add 'deb http://deb.debian.org/debian-debug {codename}-debug main' to the APT sources), or "
            ),
            (Some(p), "ubuntu") => format!("install {p}-dbgsym (from ddebs.ubuntu.com), or "),
            (Some(p), _) => format!("install the debug symbols of {p}, or "),
            (None, _) => String::new(),
        };
        format!("{package}set DEBUGINFOD_URLS={server} and record again")
    }
}

/// `libfoo.so+0x1234` for code without a symbol: the start of its function when the
/// image's unwind information tells where functions start, else the address itself.
fn offset_name(path: &Path, svma: u64) -> Vec<u8> {
    let base = path
        .file_name()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    format!("{base}+0x{svma:x}").into_bytes()
}

/// The warning for `n` off-CPU blocks whose user stack is the frame-pointer walk alone
/// (see [`RecordingSummary::offcpu_fp_only`]).
pub fn fp_only_said(n: u64, blocks: u64) -> String {
    format!(
        "{n} of {blocks} off-CPU blocks have only a frame-pointer user stack: the kernel's \
         buffer of stack copies was full while kiln fell behind (a later block at the same \
         place has its full stack), so frames of code built without frame pointers (Debian's \
         libc, libuv) are missing from them and their caller may be one the stack does not show"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::WeightUnit;

    /// The CPUs' rings are read one after the other: a process's exec can be handled after
    /// the mappings it made just after it (read from another CPU's ring). The exec keeps
    /// those and drops the older ones; a mapping made before an exec handled already is
    /// left out; an exec older than one handled already resets nothing.
    #[test]
    fn an_exec_handled_after_its_new_mappings_keeps_them() {
        let mut c = Collector::new(vec![EventInfo::default()], NamingOptions::default(), false);
        let starts = |c: &Collector| -> Vec<u64> {
            c.procs
                .get(&7)
                .map_or(Vec::new(), |p| p.mappings().map(|(s, _)| s).collect())
        };
        c.on_mmap(7, 0x1000, 0x1000, 0, b"/bin/sh", Some(100));
        c.on_mmap(7, 0x5000, 0x1000, 0, b"/usr/bin/beam.smp", Some(300));
        c.on_comm(7, 7, b"beam.smp", true, Some(200));
        assert_eq!(starts(&c), vec![0x5000]);
        c.on_mmap(7, 0x2000, 0x1000, 0, b"/bin/sh-late", Some(150));
        assert_eq!(starts(&c), vec![0x5000]);
        c.on_comm(7, 7, b"sh", true, Some(120));
        assert_eq!(starts(&c), vec![0x5000]);
        // Without times (a file whose records carry none), an exec resets as it comes.
        c.on_comm(7, 7, b"x", true, None);
        assert_eq!(starts(&c), Vec::<u64>::new());
    }

    /// Nanoseconds kept as microseconds: each stack's weights add up to its total,
    /// rounded, whatever the sizes of its samples.
    #[test]
    fn nanoseconds_as_microseconds_add_up_per_stack() {
        let info = EventInfo {
            name: "offcpu".into(),
            unit: WeightUnit::Microseconds,
            ..Default::default()
        };
        let mut c = Collector::new(vec![info], NamingOptions::default(), false);
        c.weigh_ns_as_us(0);
        let mut add = |tid: u32, ns: u64| {
            c.add_sample(
                0,
                1,
                tid,
                0,
                ns,
                &mut [0xffff_0000u64].into_iter(),
                UserStack::None,
            )
        };
        for ns in [400, 400, 400, 2_600] {
            add(1, ns);
        }
        add(2, 1_499);
        let (p, _) = c.finish();
        let p = &p[0];
        let by_thread: Vec<u64> = p.samples.weight.clone();
        // Thread 1: 0.4, 0.8 -> 1, 1.2 -> 1, 3.8 -> 4; thread 2 (another root): 1.499 -> 1.
        assert_eq!(by_thread, vec![0, 1, 0, 3, 1]);
        assert_eq!(p.total_weight(), 5);
    }
}
