//! perf as the oracle for kernel frames: `perf record -g` samples a process for the same
//! seconds as kiln, and the functions where the kernel was interrupted (the leaves of
//! kernel stacks) must carry the same shares in both (`perf report --no-children --sort
//! sym`). Aliases (`__x86_indirect_thunk_rax`, `__pi___x86_indirect_thunk_rax`) compare as
//! one function through their address in `/proc/kallsyms`.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `perf record -g` of one process, running.
#[derive(Debug)]
pub struct PerfRecord {
    child: Child,
    data: PathBuf,
}

impl PerfRecord {
    /// Starts `perf record -g -F 999 -p PID` for `secs` seconds, writing into `dir`.
    pub fn start(pid: u32, secs: u32, dir: &Path) -> PerfRecord {
        let data = dir.join("perf.data");
        let child = Command::new("perf")
            .args([
                "record",
                "-q",
                "-g",
                "-F",
                "999",
                "-p",
                &pid.to_string(),
                "-o",
            ])
            .arg(&data)
            .args(["--", "sleep", &secs.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("perf record starts (Debian's linux-perf)");
        PerfRecord { child, data }
    }

    /// Waits for the recording; perf's share of samples per kernel leaf function,
    /// percent of all samples, keyed by the function's address (or its name when
    /// kallsyms does not list it), with a name for messages.
    pub fn kernel_leaves(mut self) -> HashMap<String, (String, f64)> {
        assert!(self.child.wait().unwrap().success(), "perf record failed");
        let out = Command::new("perf")
            .args([
                "report",
                "--no-children",
                "--sort",
                "sym",
                "--stdio",
                "-g",
                "none",
                "-i",
            ])
            .arg(&self.data)
            .stderr(Stdio::null())
            .output()
            .expect("perf report runs");
        assert!(out.status.success(), "perf report failed");
        let addr = kernel_addresses();
        let mut m: HashMap<String, (String, f64)> = HashMap::new();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let Some((pct, rest)) = l.trim().split_once('%') else {
                continue;
            };
            let (Some(name), Ok(pct)) =
                (rest.trim().strip_prefix("[k] "), pct.trim().parse::<f64>())
            else {
                continue;
            };
            let name = name.trim().to_string();
            let k = key(&addr, &name);
            let shown = if k == REENABLE || k == SAMPLING {
                k.clone()
            } else {
                name
            };
            let e = m.entry(k).or_insert((shown, 0.0));
            e.1 += pct;
        }
        m
    }
}

/// The address of each kernel text symbol.
fn kernel_addresses() -> HashMap<String, u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut m = HashMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(a), Some(k), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if matches!(k, "t" | "T" | "w" | "W") {
            if let Ok(a) = u64::from_str_radix(a, 16) {
                m.entry(n.to_string()).or_insert(a);
            }
        }
    }
    m
}

/// The kernel functions where a cpu-clock sample held back while interrupts were off is
/// taken, as one: which of them a held-back sample lands in depends on the moment each
/// sampler's timer fired (two samplers of one process differ there, the more so on a busy
/// machine), while together they stand for the same code run with interrupts off.
const REENABLE: &str = "[where interrupts come back on]";

/// The kernel functions the two samplers run in the process's context as they take a
/// sample (the software event's handler, kiln's eBPF program's call and its clock read),
/// as one: each sampler sees the other's, not its own, and how much of it lands in the
/// process depends on how busy the machine is (beside a second suite perf counted 5.1% in
/// `pvclock_clocksource_read_nowd`, the clock kiln's program reads, which kiln cannot
/// sample itself reading).
const SAMPLING: &str = "[the samplers' own work]";

fn sampling(name: &str) -> bool {
    matches!(
        name,
        "perf_swevent_event"
            | "trace_call_bpf"
            | "pvclock_clocksource_read_nowd"
            | "kvm_clock_get_cycles"
            | "kvm_clock_read"
    ) || name.starts_with("bpf_")
        || name.starts_with("__bpf_")
}

fn key(addr: &HashMap<String, u64>, name: &str) -> String {
    if kiln_model::causes::reenables_interrupts(name) {
        return REENABLE.to_string();
    }
    if sampling(name) {
        return SAMPLING.to_string();
    }
    addr.get(name)
        .map_or(name.to_string(), |a| format!("{a:x}"))
}

/// Checks kiln's folded stacks (`frames weight` lines) against perf's kernel leaves: every
/// kernel leaf perf gives at least `min_pct` percent must have kiln's share within
/// `max(4 points, 35%)` of perf's (the functions where interrupts come back on counted as
/// one, see [`REENABLE`], and the samplers' own work as one, see [`SAMPLING`]), and no frame may name an eBPF program or an address
/// kallsyms does not cover. Panics with both tables when they disagree.
pub fn assert_kernel_leaves_agree(
    folded: &str,
    perf: &HashMap<String, (String, f64)>,
    min_pct: f64,
) {
    let addr = kernel_addresses();
    let lines: Vec<(Vec<&str>, u64)> = folded
        .lines()
        .filter_map(|l| {
            let (stack, w) = l.rsplit_once(' ')?;
            Some((stack.split(';').collect(), w.parse().ok()?))
        })
        .collect();
    let total: u64 = lines.iter().map(|l| l.1).sum();
    assert!(total > 300, "too few samples from kiln: {total}");
    for (frames, _) in &lines {
        for f in frames {
            assert!(
                !f.starts_with("bpf_prog_") && *f != "[bpf]" && *f != "[unknown kernel]",
                "a frame that is no function of the process: {f}"
            );
        }
    }
    let mut kiln: HashMap<String, f64> = HashMap::new();
    for (frames, w) in &lines {
        let leaf = frames.last().copied().unwrap_or("");
        if addr.contains_key(leaf)
            || kiln_model::causes::reenables_interrupts(leaf)
            || sampling(leaf)
        {
            *kiln.entry(key(&addr, leaf)).or_default() += 100.0 * *w as f64 / total as f64;
        }
    }
    let mut top: Vec<_> = perf.iter().filter(|(_, (_, p))| *p >= min_pct).collect();
    top.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    assert!(!top.is_empty(), "perf saw no kernel leaf above {min_pct}%");
    let report = top
        .iter()
        .map(|(k, (n, p))| {
            format!(
                "{n}: perf {p:.1}%, kiln {:.1}%\n",
                kiln.get(*k).unwrap_or(&0.0)
            )
        })
        .collect::<String>();
    for (k, (_, p)) in &top {
        let ours = kiln.get(*k).copied().unwrap_or(0.0);
        assert!(
            (ours - p).abs() <= f64::max(4.0, 0.35 * p),
            "kernel leaves disagree with perf:\n{report}"
        );
    }
}
