//! Feeding parsed perf records (from a ring buffer or a perf.data file) to the collector.
use crate::collect::{Collector, UserStack};
use crate::sys::{REG_BP, REG_IP, REG_SP};
use linux_perf_data::linux_perf_event_reader::{EventRecord, RawData, SampleRecord};

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

/// Handles one record; `event_of` maps a sample to its event index (`None`: not ours),
/// `weight_of` gives its weight (`None`: the sample lacks what its event weighs).
pub(crate) fn handle(
    c: &mut Collector,
    scratch: &mut Scratch,
    record: EventRecord<'_>,
    event_of: &dyn Fn(&SampleRecord<'_>) -> Option<usize>,
    weight_of: &dyn Fn(usize, &SampleRecord<'_>) -> Option<u64>,
) {
    match record {
        EventRecord::Sample(s) => {
            let Some(ev) = event_of(&s) else {
                c.summary.unattributed += 1;
                return;
            };
            let Some(w) = weight_of(ev, &s) else {
                c.summary.unweighable += 1;
                return;
            };
            sample(c, scratch, ev, w, &s);
        }
        EventRecord::Comm(r) => {
            c.on_comm(r.pid as u32, r.tid as u32, &r.name.as_slice(), r.is_execve);
        }
        EventRecord::Fork(r) => c.on_fork(r.pid as u32, r.ppid as u32, r.tid as u32, r.ptid as u32),
        EventRecord::Exit(r) => c.on_exit(r.pid as u32, r.tid as u32),
        EventRecord::Mmap(r) => c.on_mmap(
            r.pid as u32,
            r.address,
            r.length,
            r.page_offset,
            &r.path.as_slice(),
        ),
        EventRecord::Mmap2(r) if r.protection & libc::PROT_EXEC as u32 != 0 => c.on_mmap(
            r.pid as u32,
            r.address,
            r.length,
            r.page_offset,
            &r.path.as_slice(),
        ),
        EventRecord::Lost(r) => c.summary.lost += r.count,
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
