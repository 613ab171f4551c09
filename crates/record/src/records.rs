//! Feeding parsed perf records (from a ring buffer or a perf.data file) to the collector.
use crate::collect::{Collector, UserStack};
use crate::sys::{REG_BP, REG_IP, REG_SP};
use linux_perf_data::linux_perf_event_reader::{EventRecord, RawData, RecordType, SampleRecord};
use std::collections::HashMap;

/// Context markers in a callchain (`PERF_CONTEXT_*`): values from -4095 up.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;

/// Reusable buffers for one stream of records.
#[derive(Default)]
pub(crate) struct Scratch {
    stack: Vec<u8>,
    kernel: Vec<u64>,
    user: Vec<u64>,
}

/// Handles one record (made at `time`, ns, when the record says); `event_of` maps a
/// sample to its event index (`None`: not ours), `weigher` gives its weight (`None`: the
/// sample lacks what its event weighs).
pub(crate) fn handle(
    c: &mut Collector,
    scratch: &mut Scratch,
    record: EventRecord<'_>,
    time: Option<u64>,
    event_of: &dyn Fn(&SampleRecord<'_>) -> Option<usize>,
    weigher: &mut Weigher,
) {
    match record {
        EventRecord::Sample(s) => {
            let Some(ev) = event_of(&s) else {
                c.summary.unattributed += 1;
                return;
            };
            let Some(w) = weigher.weight(ev, &s) else {
                c.summary.unweighable += 1;
                return;
            };
            sample(c, scratch, ev, w, &s);
        }
        EventRecord::Comm(r) => {
            c.on_comm(
                r.pid as u32,
                r.tid as u32,
                &r.name.as_slice(),
                r.is_execve,
                time,
            );
        }
        EventRecord::Fork(r) => {
            weigher.on_fork(r.pid as u32, r.ppid as u32);
            c.on_fork(r.pid as u32, r.ppid as u32, r.tid as u32, r.ptid as u32)
        }
        EventRecord::Exit(r) => c.on_exit(r.pid as u32, r.tid as u32),
        EventRecord::Mmap(r) => c.on_mmap(
            r.pid as u32,
            r.address,
            r.length,
            r.page_offset,
            &r.path.as_slice(),
            time,
        ),
        EventRecord::Mmap2(r) if r.protection & libc::PROT_EXEC as u32 != 0 => c.on_mmap(
            r.pid as u32,
            r.address,
            r.length,
            r.page_offset,
            &r.path.as_slice(),
            time,
        ),
        EventRecord::Lost(r) => c.summary.lost += r.count,
        // Samples the kernel dropped without room for them (PERF_RECORD_LOST_SAMPLES: a
        // u64 count first): lost as well, never silently.
        EventRecord::Raw(r) if r.record_type == RecordType::LOST_SAMPLES => {
            let body = r.data.as_slice();
            if let Some(n) = body.get(..8).and_then(|b| b.try_into().ok()) {
                c.summary.lost += u64::from_ne_bytes(n);
            }
        }
        EventRecord::Throttle(_) => c.summary.throttled += 1,
        _ => {}
    }
}

fn sample(c: &mut Collector, sc: &mut Scratch, ev: usize, weight: u64, s: &SampleRecord<'_>) {
    let pid = s.pid.unwrap_or(-1) as u32;
    let tid = s.tid.unwrap_or(-1) as u32;
    let time = s.timestamp.unwrap_or(kiln_model::NO_TIME);
    sc.kernel.clear();
    sc.user.clear();
    if let Some(cc) = &s.callchain {
        let mut ctx = 0u64;
        for i in 0..cc.len() {
            let Some(a) = cc.get(i) else { break };
            if a >= PERF_CONTEXT_MAX {
                ctx = a;
                continue;
            }
            match ctx {
                PERF_CONTEXT_KERNEL => sc.kernel.push(a),
                PERF_CONTEXT_USER => sc.user.push(a),
                _ => {}
            }
        }
    }
    let regs = s
        .user_regs
        .as_ref()
        .and_then(|r| Some((r.get(REG_IP)?, r.get(REG_SP)?, r.get(REG_BP)?)));
    sc.stack.clear();
    // The stack is used in place when it does not wrap around the ring buffer's end.
    let stack: &[u8] = match &s.user_stack {
        Some((RawData::Single(a), dyn_size)) => &a[..(*dyn_size as usize).min(a.len())],
        Some((data, dyn_size)) => {
            copy_raw(data, *dyn_size as usize, &mut sc.stack);
            &sc.stack
        }
        None => &[],
    };
    let user = match regs {
        Some((ip, sp, bp)) if !stack.is_empty() => UserStack::Regs {
            ip,
            sp,
            bp,
            stack,
            fp_chain: &sc.user,
        },
        _ if !sc.user.is_empty() => UserStack::Ips(&sc.user),
        Some((ip, _, _)) if ip != 0 => {
            sc.user.push(ip);
            UserStack::Ips(&sc.user)
        }
        _ => UserStack::None,
    };
    let mut kernel = sc.kernel.iter().copied();
    c.add_sample(ev, pid, tid, time, weight, &mut kernel, user);
}

/// How a live recording's samples are weighed, per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Weigh {
    /// One per sample (`cpu`: samples, as perf's frequency mode gives uneven periods).
    One,
    /// The sample's period (counted events).
    Period,
    /// A tracepoint field at this offset in the raw data (`mmap`'s `len`).
    Field(usize),
    /// The growth of the break: the field at this offset (`sys_exit_brk`'s `ret`)
    /// minus the process's previous break.
    BreakGrowth(usize),
}

/// Weighs samples (see [`Weigh`]); keeps each process's break for `brk`.
#[derive(Debug, Default)]
pub(crate) struct Weigher {
    pub rules: Vec<Weigh>,
    breaks: HashMap<u32, u64>,
    /// `brk` calls of processes whose previous break was unknown (weighed 0).
    pub unknown_break: u64,
}

impl Weigher {
    pub fn new(rules: Vec<Weigh>) -> Self {
        Weigher {
            rules,
            ..Weigher::default()
        }
    }

    /// Whether any event needs the samples' raw data.
    pub(crate) fn needs_raw(&self) -> bool {
        self.rules
            .iter()
            .any(|w| matches!(w, Weigh::Field(_) | Weigh::BreakGrowth(_)))
    }

    /// The weight of sample `s` of event `ev`; `None` when its raw data lacks the field.
    pub fn weight(&mut self, ev: usize, s: &SampleRecord<'_>) -> Option<u64> {
        let pid = s.pid.unwrap_or(-1) as u32;
        match self.rules.get(ev).copied().unwrap_or(Weigh::Period) {
            Weigh::One => Some(1),
            Weigh::Period => Some(s.period.unwrap_or(1).max(1)),
            Weigh::Field(off) => raw_u64(s, off),
            Weigh::BreakGrowth(off) => Some(self.break_growth(pid, raw_u64(s, off)?)),
        }
    }

    /// The weight of a sample the in-kernel unwinder took, whose `value` is its period
    /// or, for an event weighed by a tracepoint field, that field.
    #[cfg(feature = "bpf")]
    pub(crate) fn weight_of_value(&mut self, ev: usize, pid: u32, value: u64) -> u64 {
        match self.rules.get(ev).copied().unwrap_or(Weigh::Period) {
            Weigh::One => 1,
            Weigh::Period => value.max(1),
            Weigh::Field(_) => value,
            Weigh::BreakGrowth(_) => self.break_growth(pid, value),
        }
    }

    /// What process `pid`'s heap grew by when its break became `now`.
    fn break_growth(&mut self, pid: u32, now: u64) -> u64 {
        match self.breaks.insert(pid, now) {
            Some(before) => now.saturating_sub(before),
            None => {
                self.unknown_break += 1;
                0
            }
        }
    }

    /// A process started: its break is known from its first call (glibc queries it
    /// with `brk(0)` before growing it), and a forked child starts with its parent's.
    pub(crate) fn on_fork(&mut self, pid: u32, ppid: u32) {
        if let Some(&b) = self.breaks.get(&ppid) {
            self.breaks.entry(pid).or_insert(b);
        }
    }
}

/// The 8 bytes at `off` of a sample's raw data, which may wrap around the ring's end.
fn raw_u64(s: &SampleRecord<'_>, off: usize) -> Option<u64> {
    let raw = s.raw.as_ref()?;
    let mut b = [0u8; 8];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = match raw {
            RawData::Single(a) => a.get(off + i).copied(),
            RawData::Split(a, c) => a
                .get(off + i)
                .or_else(|| c.get((off + i).checked_sub(a.len())?))
                .copied(),
        }?;
    }
    Some(u64::from_ne_bytes(b))
}

fn copy_raw(data: &RawData<'_>, limit: usize, out: &mut Vec<u8>) {
    match *data {
        RawData::Single(a) => out.extend_from_slice(&a[..limit.min(a.len())]),
        RawData::Split(a, b) => {
            let n = limit.min(a.len());
            out.extend_from_slice(&a[..n]);
            let rest = limit - n;
            out.extend_from_slice(&b[..rest.min(b.len())]);
        }
    }
}
