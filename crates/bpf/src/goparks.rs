//! Goroutine waits: how long a Go program's goroutines stayed parked, and where.
//!
//! A goroutine that waits on a `sync.Mutex`, a channel, a select or a timer parks in Go's
//! scheduler and its thread runs other goroutines, so no thread blocks: the off-CPU
//! profile of threads ([`crate::offcpu`]) cannot see the wait. Two uprobes on the
//! program's runtime can (`src/bpf/goparks.bpf.c`): `runtime.gopark` notes when a
//! goroutine parks, its stack and its caller; `runtime.ready` ends the note when the
//! goroutine is woken (a lock released, a channel's other side, a timer) and adds the
//! time parked to the sum of its stack. The sums stay in the kernel until
//! [`GoParks::finish`] reads them, with the notes still open then (the goroutines still
//! parked, and the parks woken by other paths: the network poller wakes a goroutine
//! waiting to read without `runtime.ready`, so its wait is not timed).
//!
//! `runtime.ready` rather than `runtime.execute` (which runs each time a goroutine is
//! scheduled): about a third of the probe hits on a Go HTTP service, each hit being a
//! trap into the kernel.
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
pub const RESUME: &str = "runtime.ready";

/// Where goroutines waited, and how long in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParkSite {
    /// The user stack where they parked, leaf first: `runtime.gopark`'s address, then
    /// its caller's return address (read from the top of the stack), then the frame
    /// pointers' return addresses. Return addresses are as found (not minus one).
    pub stack: Vec<u64>,
    /// Time parked, nanoseconds (the goroutines still parked at the end: until then).
    pub ns: u64,
    /// Parks ended (goroutines woken), or open at the end.
    pub count: u64,
    /// Whether these are notes still open at the end: goroutines still parked (their
    /// wait so far), or woken by a path the probes do not see (their wait unknown).
    pub open: bool,
    /// Whether a timer woke them (the runtime's timer code readied them: a sleep, or a
    /// channel a timer sends to — `time.After`, a `Ticker`).
    pub by_timer: bool,
}

/// The runtime's functions that run a timer and ready what waits for it: Go 1.23 and
/// later run timers in `(*timer).unlockAndRun`, earlier ones in `runOneTimer`; a timer's
/// channel is sent to by `time.sendTime`.
pub const TIMER_FUNCTIONS: [&str; 4] = [
    "runtime.(*timer).unlockAndRun",
    "runtime.runOneTimer",
    "time.sendTime",
    "runtime.goroutineReady",
];

/// Keep in sync with `goparks.bpf.c` (`WOKEN_BY_TIMER`).
const WOKEN_BY_TIMER: u32 = 1;

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
    /// Notes still open when the collection ended.
    pub still_parked: u64,
}

/// Running goroutine-wait collection for one process. Dropping it detaches the probes.
pub struct GoParks {
    skel: GoparksSkel<'static>,
    links: Vec<Link>,
    pid: i32,
    exe: std::path::PathBuf,
    generation: u32,
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
        let timers = timer_ranges(pid, exe);
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let skel = load::capturing_log(|| -> Result<GoparksSkel<'static>, BpfError> {
            let mut open = GoparksSkelBuilder::default()
                .open(storage)
                .map_err(load::open_error(PROGRAM))?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                for (i, (lo, hi)) in timers.iter().take(rodata.timer_lo.len()).enumerate() {
                    rodata.timer_lo[i] = *lo;
                    rodata.timer_hi[i] = *hi;
                }
            }
            open.load().map_err(load::load_error(
                PROGRAM,
                "uprobes on runtime.gopark and runtime.ready",
            ))
        })?;
        let pid = i32::try_from(pid)
            .map_err(|_| BpfError::InvalidConfig(format!("pid {pid} is out of range")))?;
        let mut parks = GoParks {
            skel,
            links: Vec::new(),
            pid,
            exe: exe.to_path_buf(),
            generation: 0,
        };
        parks.resume()?;
        Ok(parks)
    }

    /// Whether the probes are attached.
    pub fn attached(&self) -> bool {
        !self.links.is_empty()
    }

    /// Detaches the probes: the program costs the process nothing until [`GoParks::resume`].
    pub fn pause(&mut self) {
        self.links.clear();
    }

    /// Attaches the probes again (a no-op when attached). The notes taken before end
    /// nothing: a goroutine parked then may have been woken unseen.
    pub fn resume(&mut self) -> Result<(), BpfError> {
        if self.attached() {
            return Ok(());
        }
        self.generation = self.generation.wrapping_add(1);
        self.skel
            .maps
            .generation
            .update(
                &0u32.to_ne_bytes(),
                &self.generation.to_ne_bytes(),
                MapFlags::ANY,
            )
            .map_err(load::map_err(
                "setting the goroutine-wait probes' generation",
            ))?;
        let (pid, exe) = (self.pid, self.exe.as_path());
        let attach = |prog: &libbpf_rs::ProgramMut<'_>, func: &'static str| {
            prog.attach_uprobe_with_opts(
                pid,
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
        let park = attach(&self.skel.progs.kiln_gopark, PARK)?;
        let ready = attach(&self.skel.progs.kiln_goready, RESUME)?;
        self.links = vec![park, ready];
        Ok(())
    }

    /// Detaches the probes and reads where goroutines waited (heaviest first) and the
    /// counts; a goroutine still parked counts its wait until `now` (CLOCK_MONOTONIC
    /// nanoseconds, the clock of `bpf_ktime_get_ns`).
    pub fn finish(self, now: u64) -> Result<(Vec<ParkSite>, ParkStats), BpfError> {
        let GoParks {
            skel,
            links,
            generation,
            ..
        } = self;
        // Notes open at the end count only while the probes are attached: after a pause
        // a goroutine may have been woken unseen.
        let live = (!links.is_empty()).then_some(generation);
        drop(links);
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
        // (caller, stack id, open, woken by a timer) → (ns, count)
        let mut sums: HashMap<(u64, i32, bool, bool), (u64, u64)> = HashMap::new();
        for k in maps.sums.keys() {
            let Some((caller, stack, woken)) = site_key(&k) else {
                continue;
            };
            let v = maps
                .sums
                .lookup(&k, MapFlags::ANY)
                .map_err(load::map_err("reading the goroutine waits"))?;
            if let Some(v) = v.filter(|v| v.len() >= 16) {
                let e = sums
                    .entry((caller, stack, false, woken == WOKEN_BY_TIMER))
                    .or_default();
                e.0 += u64_at(&v, 0);
                e.1 += u64_at(&v, 8);
            }
        }
        for k in maps.notes.keys() {
            let v = maps
                .notes
                .lookup(&k, MapFlags::ANY)
                .map_err(load::map_err("reading the goroutines still parked"))?;
            if let Some(v) = v.filter(|v| v.len() >= 24) {
                let (t, caller, stack) = (u64_at(&v, 0), u64_at(&v, 8), i32_at(&v, 16));
                if live != Some(u32_at(&v, 20)) {
                    continue;
                }
                let e = sums.entry((caller, stack, true, false)).or_default();
                e.0 += now.saturating_sub(t);
                e.1 += 1;
                stats.still_parked += 1;
            }
        }
        let mut out: Vec<ParkSite> = sums
            .into_iter()
            .map(|((caller, stack, open, by_timer), (ns, count))| {
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
                    open,
                    by_timer,
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

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(-1, i32::from_ne_bytes)
}

/// A `struct site` key: the caller, then the stack id.
fn site_key(k: &[u8]) -> Option<(u64, i32, u32)> {
    (k.len() >= 16).then(|| (u64_at(k, 0), i32_at(k, 8), u32_at(k, 12)))
}

/// Where [`TIMER_FUNCTIONS`] are in process `pid` running `exe`: `[lo, hi)` address
/// ranges, as the process sees them (a position-independent executable's moved by where
/// it was loaded). None when the file cannot be read or names none of them: the waits are
/// then traced without telling a timer's wake-up from another's.
pub fn timer_ranges(pid: u32, exe: &Path) -> Vec<(u64, u64)> {
    use object::{Object, ObjectKind, ObjectSegment, ObjectSymbol};
    let Ok(data) = std::fs::read(exe) else {
        return Vec::new();
    };
    let Ok(obj) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let bias = match obj.kind() {
        ObjectKind::Executable => 0,
        _ => {
            // The first mapping of the file (offset 0) is its lowest segment.
            let low = obj.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff;
            match load_address(pid, exe) {
                Some(start) => start.wrapping_sub(low),
                None => return Vec::new(),
            }
        }
    };
    let mut out: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.size() > 0 && s.name().is_ok_and(|n| TIMER_FUNCTIONS.contains(&n)))
        .map(|s| {
            let lo = s.address().wrapping_add(bias);
            (lo, lo.wrapping_add(s.size()))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Where process `pid` mapped `exe`'s first page (its mapping at file offset 0).
fn load_address(pid: u32, exe: &Path) -> Option<u64> {
    let exe = std::fs::canonicalize(exe).ok()?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let range = f.next()?;
        let (_perms, offset, _dev, _inode) = (f.next()?, f.next()?, f.next()?, f.next()?);
        let path = f.next()?;
        (u64::from_str_radix(offset, 16).ok()? == 0 && Path::new(path) == exe)
            .then(|| u64::from_str_radix(range.split('-').next()?, 16).ok())
            .flatten()
    })
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
