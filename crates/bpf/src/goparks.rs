//! Goroutine waits: how long a Go program's goroutines stayed parked, and where.
//!
//! A goroutine that waits on a `sync.Mutex`, a channel, a select or a timer parks in Go's
//! scheduler and its thread runs other goroutines, so no thread blocks: the off-CPU
//! profile of threads ([`crate::offcpu`]) cannot see the wait. Two uprobes on the
//! program's runtime can (`src/bpf/goparks.bpf.c`): `runtime.gopark` notes when a
//! goroutine parks, its stack and its caller; `runtime.execute` ends the note when the
//! goroutine runs again and adds the time parked to the sum of its stack. The sums stay
//! in the kernel until [`GoParks::finish`] reads them, with the goroutines still parked
//! then (their wait so far).
//!
//! Needs a Go binary (amd64, Go 1.17 or later: the register ABI keeps the running
//! goroutine in R14 and the first argument in RAX) with its symbol table (not stripped
//! with `-ldflags=-s`), and what [`crate::offcpu`] needs.
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::path::Path;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, UprobeOpts};

use crate::load;
use crate::skel::{GoparksSkel, GoparksSkelBuilder};
use crate::BpfError;

const PROGRAM: &str = "goroutine-wait";

/// The runtime functions the probes attach to.
pub const PARK: &str = "runtime.gopark";
/// See [`PARK`].
pub const RESUME: &str = "runtime.execute";

/// Where goroutines waited, and how long in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParkSite {
    /// The user stack where they parked, leaf first: `runtime.gopark`'s address, then
    /// its caller's return address (read from the top of the stack), then the frame
    /// pointers' return addresses. Return addresses are as found (not minus one).
    pub stack: Vec<u64>,
    /// Time parked, nanoseconds (the goroutines still parked at the end: until then).
    pub ns: u64,
    /// Parks ended (goroutines run again), plus those still parked at the end.
    pub count: u64,
}

/// What the probes counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParkStats {
    /// Parks noted.
    pub parks: u64,
    /// Parked goroutines seen running again.
    pub resumed: u64,
    /// Parks whose stack could not be walked (kept, with the caller alone).
    pub stack_errors: u64,
    /// Parks not noted: the notes map was full (their time is lost).
    pub notes_full: u64,
    /// Waits not added: the sums map was full (their time is lost).
    pub sums_full: u64,
    /// Goroutines still parked when the collection ended (their time so far is kept).
    pub still_parked: u64,
}

/// Running goroutine-wait collection for one process. Dropping it detaches the probes.
pub struct GoParks {
    skel: GoparksSkel<'static>,
    _links: Vec<Link>,
}

impl std::fmt::Debug for GoParks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoParks").finish_non_exhaustive()
    }
}

impl GoParks {
    /// Loads the program and attaches its probes to `exe`'s runtime (the file process
    /// `pid` runs: `/proc/PID/exe` will do) for process `pid` only.
    pub fn start(pid: u32, exe: &Path) -> Result<GoParks, BpfError> {
        crate::require_btf()?;
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let skel = load::capturing_log(|| -> Result<GoparksSkel<'static>, BpfError> {
            let open = GoparksSkelBuilder::default()
                .open(storage)
                .map_err(load::open_error(PROGRAM))?;
            open.load().map_err(load::load_error(
                PROGRAM,
                "uprobes on runtime.gopark and runtime.execute",
            ))
        })?;
        let pid_arg = i32::try_from(pid)
            .map_err(|_| BpfError::InvalidConfig(format!("pid {pid} is out of range")))?;
        let attach = |prog: &libbpf_rs::ProgramMut<'_>, func: &'static str| {
            prog.attach_uprobe_with_opts(
                pid_arg,
                exe,
                0,
                UprobeOpts {
                    func_name: Some(func.to_string()),
                    ..Default::default()
                },
            )
            .map_err(|e| {
                load::permission_or("attaching the goroutine-wait probes", &e, |detail| {
                    BpfError::Attach {
                        program: PROGRAM,
                        event: func,
                        detail: format!("{detail} (in {})", exe.display()),
                    }
                })
            })
        };
        let links = vec![
            attach(&skel.progs.kiln_gopark, PARK)?,
            attach(&skel.progs.kiln_goexecute, RESUME)?,
        ];
        Ok(GoParks {
            skel,
            _links: links,
        })
    }

    /// Detaches the probes and reads where goroutines waited (heaviest first) and the
    /// counts; a goroutine still parked counts its wait until `now` (CLOCK_MONOTONIC
    /// nanoseconds, the clock of `bpf_ktime_get_ns`).
    pub fn finish(self, now: u64) -> Result<(Vec<ParkSite>, ParkStats), BpfError> {
        let GoParks { skel, _links } = self;
        drop(_links);
        let maps = &skel.maps;
        let counter = |i: u32| load::percpu_counter(&maps.counters, i);
        let mut stats = ParkStats {
            parks: counter(0),
            resumed: counter(1),
            stack_errors: counter(2),
            notes_full: counter(3),
            sums_full: counter(4),
            still_parked: 0,
        };
        // (caller, stack id) → (ns, count)
        let mut sums: HashMap<(u64, i32), (u64, u64)> = HashMap::new();
        for k in maps.sums.keys() {
            let Some((caller, stack)) = site_key(&k) else {
                continue;
            };
            let v = maps
                .sums
                .lookup(&k, MapFlags::ANY)
                .map_err(load::map_err("reading the goroutine waits"))?;
            if let Some(v) = v.filter(|v| v.len() >= 16) {
                let e = sums.entry((caller, stack)).or_default();
                e.0 += u64_at(&v, 0);
                e.1 += u64_at(&v, 8);
            }
        }
        for k in maps.notes.keys() {
            let v = maps
                .notes
                .lookup(&k, MapFlags::ANY)
                .map_err(load::map_err("reading the goroutines still parked"))?;
            if let Some(v) = v.filter(|v| v.len() >= 20) {
                let (t, caller, stack) = (u64_at(&v, 0), u64_at(&v, 8), i32_at(&v, 16));
                let e = sums.entry((caller, stack)).or_default();
                e.0 += now.saturating_sub(t);
                e.1 += 1;
                stats.still_parked += 1;
            }
        }
        let mut out: Vec<ParkSite> = sums
            .into_iter()
            .map(|((caller, stack), (ns, count))| {
                let mut ips = if stack >= 0 {
                    read_stack(&maps.stacks, stack as u32)
                } else {
                    Vec::new()
                };
                // The frame-pointer walk gives gopark's address, then its caller's
                // caller: the caller goes between them.
                if caller != 0 {
                    let at = usize::from(!ips.is_empty());
                    ips.insert(at, caller);
                }
                ParkSite {
                    stack: ips,
                    ns,
                    count,
                }
            })
            .filter(|s| !s.stack.is_empty())
            .collect();
        out.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.stack.cmp(&b.stack)));
        Ok((out, stats))
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(-1, i32::from_ne_bytes)
}

/// A `struct site` key: the caller, then the stack id.
fn site_key(k: &[u8]) -> Option<(u64, i32)> {
    (k.len() >= 12).then(|| (u64_at(k, 0), i32_at(k, 8)))
}

/// A stack of the stack-trace map, leaf first, without its trailing zeros.
fn read_stack(map: &dyn MapCore, id: u32) -> Vec<u64> {
    match map.lookup(&id.to_ne_bytes(), MapFlags::ANY) {
        Ok(Some(b)) => b
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .take_while(|&ip| ip != 0)
            .collect(),
        _ => Vec::new(),
    }
}

/// The collector is handed between threads: keep it `Send`.
const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<GoParks>();
};
