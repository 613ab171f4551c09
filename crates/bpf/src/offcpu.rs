//! Off-CPU time: how long threads were blocked, when, and where they went to sleep.
//!
//! ## How it measures
//! One eBPF program on the `sched:sched_switch` tracepoint (attached as
//! `tp_btf`, so no kprobes are needed) notes, when a traced thread blocks
//! (leaves the CPU in a sleeping state, not preempted), the time and its
//! stacks; when the thread is next switched in, the block lasted `now - then`.
//! Each block of at least [`OffCpuConfig::min_block_us`] becomes one record
//! ([`OffCpuBlock`]): when it started (switch-out, `CLOCK_MONOTONIC`
//! nanoseconds, the clock of perf samples), how long it lasted, and the ids of
//! its stacks. Shorter blocks are counted in [`OffCpuStats`]. Time is
//! "switch-out to switch-in": it includes the wait for a CPU after the
//! wake-up. Time spent preempted (runnable, waiting for a CPU) without
//! blocking is not counted.
//!
//! ## Why one record per block
//! A profile of a whole run could sum blocks in the kernel, but a window of a
//! run (the part of a load test where latency rose) needs exactly the blocking
//! that happened in it: each block keeps its own start and duration, on the
//! clock the CPU samples and the load's series use.
//!
//! ## Why a stack snapshot
//! A frame-pointer walk (what `bpf_get_stack` and bpftrace's `ustack` do)
//! skips frames of code built without frame pointers. Debian's libc is such
//! code: the function that called `pthread_mutex_lock` is lost. So, for every
//! distinct user-side key, the kernel also keeps ONE snapshot (the first seen)
//! of the user registers and of up to [`OffCpuConfig::user_stack_bytes`] of
//! stack memory from `sp` upwards, for a CFI unwinder (the recorder's) to walk.
//! The key includes a hash of the first code-pointing words near `sp`; it is
//! what keeps two callers that the frame-pointer walk merges apart, so each
//! snapshot stands for the blocks that carry its key.
//!
//! ## Frame-pointer stacks are validated
//! [`TaskStacks::user_ips`] comes from the kernel's frame-pointer walk, cut
//! at the first return address outside the process's executable mappings
//! (read from `/proc/PID/maps` at start and for each new process seen): a walk
//! through code without frame pointers follows whatever `rbp` holds, and the
//! junk it then reports differs on every block. Uncut, a pipe ping-pong made
//! a new key per block; cut, it makes two.
//!
//! ## Cost
//! Per block: a user frame-pointer walk, one 512-byte user read for the caller
//! hash, a few map operations; per block of at least `min_block_us`, a kernel
//! stack walk at switch-in (the largest part: the thread has not run since it
//! blocked, so its kernel stack is still there, and shorter blocks skip it)
//! and one 128-byte ring buffer record, written without waking the reader;
//! per new user-side key, one copy of the stack. Stacks are stored once per
//! distinct stack, by hash. `bench/offcpu/run.sh` measures the overhead
//! against no tracer and against the equivalent bpftrace script.

use crate::ring::RingReader;
use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, OpenObject};

use crate::load::{self, map_err, possible_cpus};
use crate::procmaps;
use crate::skel::{OffcpuSkel, OffcpuSkelBuilder};
use crate::BpfError;

/// Largest supported [`OffCpuConfig::user_stack_bytes`] (`MAX_USER_STACK` in offcpu.bpf.c).
pub const MAX_USER_STACK_BYTES: u32 = 32768;

/// Default bytes of the ring buffer of finished blocks ([`OffCpuConfig::ring_bytes`]).
const RING_BYTES: u32 = 8 << 20;
/// Snapshots waiting in the kernel for the next drain.
const SNAP_ENTRIES: u32 = 1024;
const SCAN_RANGES: usize = procmaps::MAX_RANGES;
const SNAP_HDR: usize = 32;
/// Bytes of one `struct block` record.
const BLOCK_BYTES: usize = 16 + 2 * (KEY_BYTES + 16) + 8;
/// Bytes of one `struct stack_key`.
const KEY_BYTES: usize = 32;
/// How often [`OffCpuCollector::drain`] re-reads code ranges.
const RANGES_REFRESH: Duration = Duration::from_secs(2);

/// What to record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffCpuConfig {
    /// Processes to trace; `None` traces the whole system. A pid selects all
    /// threads of its process, including threads started later, and the
    /// processes it starts from then on (a thread id selects its whole process
    /// too).
    pub pids: Option<Vec<u32>>,
    /// Blocks shorter than this many microseconds are not recorded (they are
    /// counted in [`OffCpuStats::short_blocks`], and cost no kernel stack walk).
    /// 0 keeps every block.
    pub min_block_us: u64,
    /// Bytes of user stack copied from `sp` upwards for each distinct stack,
    /// for a CFI unwinder; at most [`MAX_USER_STACK_BYTES`]; 0 disables the copy
    /// (registers are still kept). 16384 reaches the root of most stacks.
    pub user_stack_bytes: u32,
    /// Also record, for each block, the thread that woke it and its stacks
    /// ([`OffCpuBlock::waker`]), as bcc's `offwaketime`: in lock contention the
    /// waker is the lock's holder. Costs a kernel and a user stack walk per
    /// wake-up of a blocked traced thread.
    pub wakers: bool,
    /// Also record the time traced threads spent runnable, waiting for a CPU: preempted,
    /// or after `sched_yield` while others ran ([`OffCpuBlock::runnable`]). A thread's
    /// wall time is then its CPU time, its blocks and its runnable time, as a runtime's
    /// own accounting of its threads' states counts it (the BEAM's microstate
    /// accounting). Costs a stack walk per preemption of a traced thread.
    pub runnable: bool,
    /// Record no blocks, only runnable time (with [`OffCpuConfig::runnable`]).
    pub no_blocked: bool,
    /// The text of `/proc/PID/maps` of processes the caller has read already (a
    /// recorder reads them for its own use): the collector reads the others itself.
    pub maps: HashMap<u32, Arc<[u8]>>,
    /// The caller hands over the processes' maps itself once collection runs
    /// ([`OffCpuCollector::set_maps`]): read none at start. Until then blocks are
    /// keyed without caller hash (counted in [`OffCpuStats::no_code_ranges`]).
    pub maps_from_caller: bool,
    /// Bytes of the kernel's buffer of finished blocks (128 bytes a block; a power of
    /// two of at least 4096), which a thread of the collector's empties every few
    /// milliseconds; blocks that find it full are counted in
    /// [`OffCpuStats::dropped_blocks`]. 0: the default, 8 MiB (65,536 blocks: a
    /// second of 60,000 context switches with the reader a second late).
    pub ring_bytes: u32,
}

/// User registers at the moment the thread entered the kernel to block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// Instruction pointer (the syscall return address in user code).
    pub ip: u64,
    /// Stack pointer; [`UserSnapshot::stack`] starts here.
    pub sp: u64,
    /// Frame pointer register (rbp on x86-64).
    pub bp: u64,
}

/// User registers and a copy of the user stack, for a CFI unwinder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSnapshot {
    /// The registers.
    pub regs: UserRegs,
    /// Copy of user stack memory from `regs.sp` upwards (may be shorter than
    /// configured when the stack ends earlier).
    pub stack: Vec<u8>,
}

/// What identifies a thread's stacks: equal keys have equal stacks (and
/// snapshots), so a consumer may unwind and name once per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StackKey {
    /// Process id.
    pub tgid: u32,
    /// Hash of the kernel stack (0: none).
    pub kstack: u64,
    /// Hash of the validated frame-pointer user stack (0: none).
    pub ustack: u64,
    /// Hash of the code addresses near the user stack pointer.
    pub caller_hash: u64,
}

/// One thread at one place: ids, name and stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStacks {
    /// Process id (thread group id).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread name (`comm`, at most 15 bytes).
    pub comm: Vec<u8>,
    /// Kernel stack, innermost first; empty if it could not be recorded (see
    /// [`OffCpuStats::kernel_stack_errors`]).
    pub kernel_ips: Arc<[u64]>,
    /// Frame-pointer walk of the user stack, innermost first (empty for
    /// kernel threads or when it could not be recorded). Frames of code
    /// without frame pointers are missing from it: unwind
    /// [`TaskStacks::user`] for a complete stack.
    pub user_ips: Arc<[u64]>,
    /// User registers and stack copy, `None` for kernel threads or when no
    /// snapshot could be stored. The snapshot is the first one the kernel took
    /// for this key (process, fp stack, caller hash), so it may come from
    /// another thread of the process blocked at the same place: the stack it
    /// unwinds to is the same.
    pub user: Option<Arc<UserSnapshot>>,
    /// The key of these stacks.
    pub key: StackKey,
}

/// One block: a thread off CPU from `start_ns` for `duration_ns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffCpuBlock {
    /// When the thread left the CPU (CLOCK_MONOTONIC nanoseconds, the clock of
    /// perf samples taken with `use_clockid`).
    pub start_ns: u64,
    /// How long until it ran again, in nanoseconds.
    pub duration_ns: u64,
    /// The thread that blocked, where it blocked.
    pub blocked: TaskStacks,
    /// The thread that woke it, where it was when it did (with
    /// [`OffCpuConfig::wakers`]; `None` otherwise, or when no wake-up was seen:
    /// see [`OffCpuStats::blocks_without_waker`]). A block ended by an
    /// interrupt (a timer) names whatever the interrupt interrupted.
    pub waker: Option<TaskStacks>,
    /// The thread was runnable, not blocked: preempted, or it yielded while others were
    /// waiting ([`OffCpuConfig::runnable`]); `start_ns` is when it left the CPU and
    /// `duration_ns` how long it waited for one.
    pub runnable: bool,
}

/// Counters of what the collector saw and lost, summed over all CPUs since start.
///
/// Nothing is dropped silently: every block either becomes a record or is
/// counted here with the reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffCpuStats {
    /// Times a traced thread blocked.
    pub blocks: u64,
    /// Blocks that reached `min_block_us` and were recorded.
    pub counted_blocks: u64,
    /// Blocks shorter than `min_block_us`.
    pub short_blocks: u64,
    /// Blocks lost because the ring buffer was full (drain more often).
    pub dropped_blocks: u64,
    /// Their time in nanoseconds.
    pub dropped_ns: u64,
    /// Blocks whose kernel stack could not be recorded (stack map full or hash collision).
    pub kernel_stack_errors: u64,
    /// Blocks whose frame-pointer user stack could not be recorded.
    pub user_stack_errors: u64,
    /// Stack snapshots stored by the kernel.
    pub snapshots: u64,
    /// Snapshots that could not be stored (map full or out of memory).
    pub snapshot_errors: u64,
    /// Snapshots whose stack memory could not be read at all.
    pub stack_copy_errors: u64,
    /// Blocks not followed because per-thread state could not be allocated.
    pub thread_state_errors: u64,
    /// Blocks keyed without caller hash: no code ranges known for the process yet.
    pub no_code_ranges: u64,
    /// Blocks keyed without caller hash: stack words at sp were unreadable.
    pub scan_errors: u64,
    /// Records whose snapshot was not found in user space (see `snapshot_errors`).
    pub missing_snapshots: u64,
    /// Records that could not be parsed (should not happen).
    pub bad_records: u64,
    /// Wake-ups recorded (with [`OffCpuConfig::wakers`]).
    pub wakers: u64,
    /// Blocks recorded without their waker (with [`OffCpuConfig::wakers`]): no
    /// wake-up seen, or the block was woken before `min_block_us` and ended
    /// after it (waiting for a CPU).
    pub blocks_without_waker: u64,
    /// Blocks whose end kiln did not see: the thread ran again while the kernel
    /// refused its per-thread state (busy on that CPU, as when a thread's state
    /// is being freed there). Their time is unknown; the thread's next block
    /// starts afresh.
    pub unseen_ends: u64,
}

/// Counter slots of the kernel side (`enum counter` in offcpu.bpf.c).
const N_COUNTERS: u32 = 16;

impl OffCpuStats {
    fn from_counters(c: &[u64; N_COUNTERS as usize], missing_snapshots: u64, bad: u64) -> Self {
        OffCpuStats {
            blocks: c[0],
            counted_blocks: c[1],
            short_blocks: c[2],
            dropped_blocks: c[3],
            dropped_ns: c[4],
            kernel_stack_errors: c[5],
            user_stack_errors: c[6],
            snapshots: c[7],
            snapshot_errors: c[8],
            stack_copy_errors: c[9],
            thread_state_errors: c[10],
            no_code_ranges: c[11],
            scan_errors: c[12],
            missing_snapshots,
            bad_records: bad,
            wakers: c[13],
            blocks_without_waker: c[14],
            unseen_ends: c[15],
        }
    }
}

/// A `struct block` as the kernel wrote it.
#[derive(Debug, Clone, Copy)]
struct RawBlock {
    start_ns: u64,
    dur_ns: u64,
    pid: u32,
    key: StackKey,
    comm: [u8; 16],
    /// The waker's thread id, key and name (`waker == WAKER_SEEN`).
    waker: Option<(u32, StackKey, [u8; 16])>,
    /// `runnable` of `struct block`.
    runnable: bool,
}

/// `enum waker_state` in offcpu.bpf.c.
const WAKER_SEEN: u32 = 1;

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// `struct stack_key` at `o`: (tid, key).
fn parse_key(b: &[u8], o: usize) -> Option<(u32, StackKey)> {
    Some((
        u32_at(b, o + 4)?,
        StackKey {
            tgid: u32_at(b, o)?,
            kstack: u64_at(b, o + 8)?,
            ustack: u64_at(b, o + 16)?,
            caller_hash: u64_at(b, o + 24)?,
        },
    ))
}

impl RawBlock {
    fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < BLOCK_BYTES {
            return None;
        }
        let (pid, key) = parse_key(b, 16)?;
        let w = 16 + KEY_BYTES + 16;
        let waker = if u32_at(b, w + KEY_BYTES + 16)? == WAKER_SEEN {
            let (wpid, wkey) = parse_key(b, w)?;
            Some((
                wpid,
                wkey,
                b.get(w + KEY_BYTES..w + KEY_BYTES + 16)?.try_into().ok()?,
            ))
        } else {
            None
        };
        Some(RawBlock {
            start_ns: u64_at(b, 0)?,
            dur_ns: u64_at(b, 8)?,
            pid,
            key,
            comm: b
                .get(16 + KEY_BYTES..16 + KEY_BYTES + 16)?
                .try_into()
                .ok()?,
            waker,
            runnable: u32_at(b, w + KEY_BYTES + 16 + 4)? != 0,
        })
    }
}

/// Key of one snapshot (`struct snap_key`): what decides the user-side stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct SnapKey {
    tgid: u32,
    ustack: u64,
    caller_hash: u64,
}

impl SnapKey {
    fn parse(b: &[u8]) -> Option<Self> {
        Some(SnapKey {
            tgid: u32_at(b, 0)?,
            ustack: u64_at(b, 8)?,
            caller_hash: u64_at(b, 16)?,
        })
    }

    fn of(k: &StackKey) -> Self {
        SnapKey {
            tgid: k.tgid,
            ustack: k.ustack,
            caller_hash: k.caller_hash,
        }
    }
}

fn parse_snapshot(b: &[u8]) -> Option<UserSnapshot> {
    let len = u32_at(b, 24)? as usize;
    let stack = b.get(SNAP_HDR..SNAP_HDR + len)?.to_vec();
    Some(UserSnapshot {
        regs: UserRegs {
            ip: u64_at(b, 0)?,
            sp: u64_at(b, 8)?,
            bp: u64_at(b, 16)?,
        },
        stack,
    })
}

fn parse_ips(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .take_while(|&ip| ip != 0)
        .collect()
}

/// Running off-CPU collection. Dropping it detaches the program and frees its maps.
pub struct OffCpuCollector {
    skel: OffcpuSkel<'static>,
    ring: RingReader,
    /// Every snapshot fetched so far; the kernel map is only a transfer buffer.
    snapshots: HashMap<SnapKey, Arc<UserSnapshot>>,
    kstack_cache: HashMap<u64, Arc<[u64]>>,
    ustack_cache: HashMap<u64, Arc<[u64]>>,
    /// Code ranges the kernel has, per process.
    ranged: HashMap<u32, Vec<(u64, u64)>>,
    /// When the code ranges were last re-read.
    refreshed: Instant,
    missing_snapshots: u64,
    bad_records: u64,
}

impl std::fmt::Debug for OffCpuCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffCpuCollector")
            .field("snapshots", &self.snapshots.len())
            .field("processes_with_code_ranges", &self.ranged.len())
            .finish_non_exhaustive()
    }
}

impl OffCpuCollector {
    /// Loads and attaches the eBPF program; collection starts immediately.
    ///
    /// Fails with a message saying what is missing: privileges
    /// ([`BpfError::PermissionDenied`]), kernel BTF ([`BpfError::NoKernelBtf`]),
    /// a kernel that rejects the program ([`BpfError::ProgramRejected`]) or a
    /// pid that does not exist ([`BpfError::NoSuchProcess`]).
    pub fn start(cfg: &OffCpuConfig) -> Result<Self, BpfError> {
        if cfg.ring_bytes != 0 && (cfg.ring_bytes < 4096 || !cfg.ring_bytes.is_power_of_two()) {
            return Err(BpfError::InvalidConfig(format!(
                "a ring buffer of {} bytes: it takes a power of two of at least 4096",
                cfg.ring_bytes
            )));
        }
        if cfg.user_stack_bytes > MAX_USER_STACK_BYTES {
            return Err(BpfError::InvalidConfig(format!(
                "user_stack_bytes {} exceeds the maximum of {MAX_USER_STACK_BYTES}",
                cfg.user_stack_bytes
            )));
        }
        let min_block_ns = cfg.min_block_us.checked_mul(1000).ok_or_else(|| {
            BpfError::InvalidConfig(format!("min_block_us {} is too large", cfg.min_block_us))
        })?;
        let tgids = match &cfg.pids {
            None => None,
            Some(p) if p.is_empty() => {
                return Err(BpfError::InvalidConfig(
                    "an empty pid list traces nothing; give pids, or none for system-wide".into(),
                ))
            }
            Some(p) => {
                let mut t = p
                    .iter()
                    .map(|&pid| procmaps::tgid_of(pid))
                    .collect::<Result<Vec<_>, _>>()?;
                t.sort_unstable();
                t.dedup();
                Some(t)
            }
        };
        crate::require_btf()?;

        let skel = open_and_load(cfg, min_block_ns, tgids.is_some())?;
        // Filled before attaching, so no block of a traced process is missed.
        if let Some(t) = &tgids {
            for tgid in t {
                skel.maps
                    .pids
                    .update(&tgid.to_ne_bytes(), &[1], MapFlags::ANY)
                    .map_err(map_err("adding a pid to the off-CPU program's filter"))?;
            }
        }
        let ring = RingReader::start(&skel.maps.blocks, "off-CPU")?;
        let mut collector = OffCpuCollector {
            skel,
            ring,
            snapshots: HashMap::new(),
            kstack_cache: HashMap::new(),
            ustack_cache: HashMap::new(),
            ranged: HashMap::new(),
            refreshed: Instant::now(),
            missing_snapshots: 0,
            bad_records: 0,
        };
        let initial = match (&tgids, cfg.maps_from_caller) {
            (_, true) => Vec::new(),
            (Some(t), false) => t.clone(),
            (None, false) => procmaps::all_tgids(),
        };
        for tgid in initial {
            // A process may exit meanwhile; it then simply has no code ranges.
            let _ = match cfg.maps.get(&tgid) {
                Some(text) => collector
                    .store_code_ranges(tgid, procmaps::exec_ranges(&String::from_utf8_lossy(text))),
                None => collector.load_code_ranges(tgid),
            };
        }
        collector.skel.attach().map_err(|e| {
            load::permission_or(
                "attaching the off-CPU program to sched:sched_switch",
                &e,
                |detail| BpfError::Attach {
                    program: "off-CPU",
                    event: "sched:sched_switch",
                    detail,
                },
            )
        })?;
        Ok(collector)
    }

    /// What the off-CPU programs cost the machine so far (needs
    /// [`crate::RunTimeStats`] enabled while they run): the scheduler's every switch,
    /// and with wakers every wake-up, runs one.
    pub fn cost(&self) -> crate::ProgramCost {
        let p = &self.skel.progs;
        [
            &p.kiln_sched_switch,
            &p.kiln_wakeup,
            &p.kiln_fork,
            &p.kiln_exit,
        ]
        .into_iter()
        .filter(|prog| prog.autoload())
        .map(|prog| crate::load::cost_of(std::os::fd::AsFd::as_fd(prog)))
        .fold(crate::ProgramCost::default(), |a, b| a + b)
    }

    /// Reads the blocks that ended since the last drain, oldest first per CPU.
    ///
    /// Blocks come with their stacks and snapshot. A thread of the collector moves
    /// finished blocks out of the kernel's buffer every few milliseconds, whatever
    /// the caller is doing, so they wait in memory; snapshots wait in the kernel
    /// (1024 new ones between two drains): call it regularly (every 100 ms or so in
    /// long recordings). What does not fit is counted in [`OffCpuStats`].
    pub fn drain(&mut self) -> Result<Vec<OffCpuBlock>, BpfError> {
        let queue = self.ring.take()?;
        let mut raw = Vec::with_capacity(queue.len() / (BLOCK_BYTES + 4));
        let mut bad = 0;
        bad += crate::ring::for_each_record(&queue, |rec| match RawBlock::parse(rec) {
            Some(b) => raw.push(b),
            None => bad += 1,
        });
        self.bad_records += bad;
        self.ring.give_back(queue);
        // A block's snapshot is stored at switch-out, before its record is written
        // at switch-in, so fetching snapshots after reading the records finds it.
        // A waker's snapshot is stored at the wake-up, before the block ends.
        let missing = |k: &StackKey| k.ustack != 0 && !self.snapshots.contains_key(&SnapKey::of(k));
        if raw
            .iter()
            .any(|b| missing(&b.key) || b.waker.is_some_and(|(_, k, _)| missing(&k)))
        {
            self.fetch_snapshots()?;
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut seen = HashSet::new();
        for b in raw {
            if b.key.tgid != 0 && seen.insert(b.key.tgid) && !self.ranged.contains_key(&b.key.tgid)
            {
                let _ = self.load_code_ranges(b.key.tgid);
            }
            let blocked = self.task_stacks(b.pid, &b.key, &b.comm);
            let waker = b.waker.map(|(wpid, wkey, wcomm)| {
                if wkey.tgid != 0 && seen.insert(wkey.tgid) && !self.ranged.contains_key(&wkey.tgid)
                {
                    let _ = self.load_code_ranges(wkey.tgid);
                }
                self.task_stacks(wpid, &wkey, &wcomm)
            });
            out.push(OffCpuBlock {
                start_ns: b.start_ns,
                duration_ns: b.dur_ns,
                blocked,
                waker,
                runnable: b.runnable,
            });
        }
        if self.refreshed.elapsed() >= RANGES_REFRESH {
            self.refresh_code_ranges(&seen)?;
            self.refreshed = Instant::now();
        }
        Ok(out)
    }

    fn task_stacks(&mut self, tid: u32, key: &StackKey, comm: &[u8; 16]) -> TaskStacks {
        let end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
        let kernel_ips = stored_stack(&self.skel.maps.kstacks, &mut self.kstack_cache, key.kstack);
        let user_ips = stored_stack(&self.skel.maps.ustacks, &mut self.ustack_cache, key.ustack);
        let user = self.snapshots.get(&SnapKey::of(key)).cloned();
        if user.is_none() && key.ustack != 0 {
            self.missing_snapshots += 1;
        }
        TaskStacks {
            pid: key.tgid,
            tid,
            comm: comm[..end].to_vec(),
            kernel_ips,
            user_ips,
            user,
            key: *key,
        }
    }

    /// Keeps the code ranges current: libraries loaded since (dlopen, JIT
    /// code in files) join for processes that blocked recently, and exited
    /// processes leave the kernel table and the snapshot cache (bounding both
    /// in long system-wide recordings).
    fn refresh_code_ranges(&mut self, seen: &HashSet<u32>) -> Result<(), BpfError> {
        let known: Vec<u32> = self.ranged.keys().copied().collect();
        for tgid in known {
            if !Path::new(&format!("/proc/{tgid}")).exists() {
                self.ranged.remove(&tgid);
                let _ = self.skel.maps.code.delete(&tgid.to_ne_bytes());
                self.snapshots.retain(|k, _| k.tgid != tgid);
            } else if seen.contains(&tgid) {
                let _ = self.load_code_ranges(tgid);
            }
        }
        Ok(())
    }

    /// Process `pid` exec'd or mapped new code: re-read its code ranges now (they are
    /// otherwise re-read every 2 s for processes that block), so that the blocks of
    /// its new code are told apart by caller.
    pub fn process_changed(&mut self, pid: u32) {
        let _ = self.load_code_ranges(pid);
    }

    /// Traces process `tgid` too (one forked by a traced process before the programs
    /// were attached, which the fork tracepoint did not see).
    pub fn trace(&mut self, tgid: u32) -> Result<(), BpfError> {
        self.skel
            .maps
            .pids
            .update(&tgid.to_ne_bytes(), &[1], MapFlags::ANY)
            .map_err(map_err("adding a pid to the off-CPU program's filter"))
    }

    /// The text of process `pid`'s `/proc/PID/maps`, read by the caller: its code
    /// ranges for the caller hash.
    pub fn set_maps(&mut self, pid: u32, maps: &[u8]) {
        let _ = self.store_code_ranges(pid, procmaps::exec_ranges(&String::from_utf8_lossy(maps)));
    }

    /// Blocks lost so far because the kernel's buffer was full (one counter of
    /// [`OffCpuCollector::stats`], cheap enough to read at every drain).
    pub fn dropped_blocks(&self) -> u64 {
        load::percpu_counter(&self.skel.maps.counters, 3)
    }

    /// Counters of events seen and lost since start, summed over CPUs.
    pub fn stats(&self) -> OffCpuStats {
        let mut c = [0u64; N_COUNTERS as usize];
        for (i, slot) in c.iter_mut().enumerate() {
            *slot = load::percpu_counter(&self.skel.maps.counters, i as u32);
        }
        OffCpuStats::from_counters(&c, self.missing_snapshots, self.bad_records)
    }

    /// Number of distinct user-side stacks (snapshots) held for processes
    /// still running (those of exited processes are forgotten).
    pub fn distinct_snapshots(&self) -> usize {
        self.snapshots.len()
    }

    fn fetch_snapshots(&mut self) -> Result<(), BpfError> {
        let keys: Vec<Vec<u8>> = self.skel.maps.snaps.keys().collect();
        for k in keys {
            let v = self
                .skel
                .maps
                .snaps
                .lookup(&k, MapFlags::ANY)
                .map_err(map_err("reading an off-CPU stack snapshot"))?;
            if let (Some(key), Some(snap)) =
                (SnapKey::parse(&k), v.as_deref().and_then(parse_snapshot))
            {
                // First seen wins; later copies of the same key are equivalent.
                self.snapshots.entry(key).or_insert_with(|| Arc::new(snap));
            }
            // Free the slot; the kernel stores the key again if it sees it again.
            let _ = self.skel.maps.snaps.delete(&k);
        }
        Ok(())
    }

    fn load_code_ranges(&mut self, tgid: u32) -> Result<(), BpfError> {
        let ranges = procmaps::read_exec_ranges(tgid)?;
        self.store_code_ranges(tgid, ranges)
    }

    fn store_code_ranges(&mut self, tgid: u32, ranges: Vec<(u64, u64)>) -> Result<(), BpfError> {
        if self.ranged.get(&tgid) == Some(&ranges) {
            return Ok(());
        }
        let mut value = vec![0u8; 8 + 16 * SCAN_RANGES];
        value[0..4].copy_from_slice(&(ranges.len() as u32).to_ne_bytes());
        for (i, (lo, hi)) in ranges.iter().enumerate() {
            value[8 + 8 * i..16 + 8 * i].copy_from_slice(&lo.to_ne_bytes());
            let e = 8 + 8 * SCAN_RANGES + 8 * i;
            value[e..e + 8].copy_from_slice(&hi.to_ne_bytes());
        }
        self.skel
            .maps
            .code
            .update(&tgid.to_ne_bytes(), &value, MapFlags::ANY)
            .map_err(map_err("storing code ranges for the off-CPU program"))?;
        self.ranged.insert(tgid, ranges);
        Ok(())
    }
}

/// Stacks are stored by hash as `{u32 len; u32 pad; u64 ips[]}` and never removed from
/// the kernel maps, so they can be cached by hash.
fn stored_stack(
    map: &libbpf_rs::MapMut<'_>,
    cache: &mut HashMap<u64, Arc<[u64]>>,
    hash: u64,
) -> Arc<[u64]> {
    if hash == 0 {
        return Arc::from(Vec::new());
    }
    if let Some(ips) = cache.get(&hash) {
        return ips.clone();
    }
    let ips = match map.lookup(&hash.to_ne_bytes(), MapFlags::ANY) {
        Ok(Some(v)) => {
            let len = u32_at(&v, 0).unwrap_or(0);
            let body = v.get(8..).unwrap_or_default();
            let mut ips = parse_ips(body);
            ips.truncate(len as usize);
            ips
        }
        _ => Vec::new(),
    };
    let ips: Arc<[u64]> = Arc::from(ips);
    cache.insert(hash, ips.clone());
    ips
}

fn open_and_load(
    cfg: &OffCpuConfig,
    min_block_ns: u64,
    filter: bool,
) -> Result<OffcpuSkel<'static>, BpfError> {
    // The skeleton borrows its object storage for its whole life; the
    // collector owns the skeleton, so the storage (one pointer) is leaked.
    let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
    let cpus = possible_cpus()?;

    load::capturing_log(|| build_skel(storage, cfg, min_block_ns, filter, cpus))
}

fn build_skel(
    storage: &'static mut MaybeUninit<OpenObject>,
    cfg: &OffCpuConfig,
    min_block_ns: u64,
    filter: bool,
    cpus: u32,
) -> Result<OffcpuSkel<'static>, BpfError> {
    const PROGRAM: &str = "off-CPU";
    let mut open = OffcpuSkelBuilder::default()
        .open(storage)
        .map_err(load::open_error(PROGRAM))?;
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| BpfError::ProgramRejected {
            program: PROGRAM,
            detail: "the object has no .rodata section".into(),
            log: String::new(),
        })?;
    rodata.cfg.min_block_ns = min_block_ns;
    rodata.cfg.user_stack_bytes = cfg.user_stack_bytes;
    rodata.cfg.filter_pids = u32::from(filter);
    rodata.cfg.wakers = u32::from(cfg.wakers);
    rodata.cfg.runnable = u32::from(cfg.runnable);
    rodata.cfg.no_blocked = u32::from(cfg.no_blocked);
    open.progs.kiln_wakeup.set_autoload(cfg.wakers);
    let sizing = |e: libbpf_rs::Error| BpfError::Map {
        action: "sizing the off-CPU program's maps",
        detail: e.to_string(),
    };
    open.maps.scratch.set_max_entries(cpus).map_err(sizing)?;
    open.maps
        .snaps
        .set_max_entries(SNAP_ENTRIES)
        .map_err(sizing)?;
    open.maps
        .blocks
        .set_max_entries(match cfg.ring_bytes {
            0 => RING_BYTES,
            n => n,
        })
        .map_err(sizing)?;
    let value = SNAP_HDR as u32 + cfg.user_stack_bytes.div_ceil(8) * 8;
    open.maps.snaps.set_value_size(value).map_err(sizing)?;
    open.load().map_err(load::load_error(
        PROGRAM,
        if cfg.wakers {
            "sched:sched_switch, sched:sched_waking, sched:sched_process_fork and \
             sched:sched_process_exit"
        } else {
            "sched:sched_switch, sched:sched_process_fork and sched:sched_process_exit"
        },
    ))
}

/// The recorder drains from its own thread: keep the collector `Send`.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<OffCpuCollector>();
};
