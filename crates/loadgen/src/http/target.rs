//! The target's CPU time and context switches, and kiln's own CPU time, read from /proc
//! while the load runs and counted into the series, so every second (and every step of a
//! sweep) says how busy the server was.
use super::driver::M;
use crate::engine::Ctx;

/// Reads `/proc/PID/stat`: (user, system) CPU time in µs.
pub fn cpu_us(pid: &str) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let us = 1_000_000 / ticks_per_second();
    Some((utime * us, stime * us))
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Context switches (voluntary + involuntary) of every thread of `pid`.
pub fn ctx_switches(pid: &str) -> Option<u64> {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(s) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        for l in s.lines() {
            if let Some(v) = l
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Some(total)
}

/// The machine's busy CPU time (all CPUs, everything but idle and iowait), µs.
pub fn machine_busy_us() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let busy: u64 = v.iter().take(8).sum::<u64>() - v.get(3)? - v.get(4).unwrap_or(&0);
    Some(busy * (1_000_000 / ticks_per_second()))
}

/// Samples the targets (and kiln) and adds what changed since the last sample.
#[derive(Debug)]
pub(crate) struct Sampler {
    pids: Vec<String>,
    last: Vec<Option<(u64, u64, u64)>>,
    client_last: Option<u64>,
    machine_last: Option<u64>,
    error: Option<String>,
}

impl Sampler {
    pub fn new(pids: &[u32]) -> Self {
        let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
        let mut s = Sampler {
            last: vec![None; pids.len()],
            pids,
            client_last: None,
            machine_last: machine_busy_us(),
            error: None,
        };
        for i in 0..s.pids.len() {
            s.last[i] = s.read(i);
        }
        s.client_last = cpu_us("self").map(|(u, s)| u + s);
        s
    }

    fn read(&mut self, i: usize) -> Option<(u64, u64, u64)> {
        let p = &self.pids[i];
        match (cpu_us(p), ctx_switches(p)) {
            (Some((u, s)), Some(c)) => Some((u, s, c)),
            _ => {
                if self.error.is_none() {
                    self.error = Some(format!(
                        "target process {p} could not be read from /proc (it ended?); its CPU is counted up to then"
                    ));
                }
                None
            }
        }
    }

    pub fn sample(&mut self, ctx: &Ctx) {
        for i in 0..self.pids.len() {
            let Some(now) = self.read(i) else { continue };
            if let Some(prev) = self.last[i] {
                ctx.add(0, M.target_cpu_user_us, now.0.saturating_sub(prev.0));
                ctx.add(0, M.target_cpu_sys_us, now.1.saturating_sub(prev.1));
                ctx.add(0, M.target_ctx_switches, now.2.saturating_sub(prev.2));
            }
            self.last[i] = Some(now);
        }
        if let Some((u, s)) = cpu_us("self") {
            if let Some(prev) = self.client_last {
                ctx.add(0, M.client_cpu_us, (u + s).saturating_sub(prev));
            }
            self.client_last = Some(u + s);
        }
        if let Some(m) = machine_busy_us() {
            if let Some(prev) = self.machine_last {
                ctx.add(0, M.machine_busy_us, m.saturating_sub(prev));
            }
            self.machine_last = Some(m);
        }
    }

    pub fn error(&self) -> Option<String> {
        self.error.clone()
    }
}
