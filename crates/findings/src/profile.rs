//! What a CPU profile says a thread group did: its weight by the program's function (the
//! program's own frame nearest each sample's leaf, past the runtimes' and the C library's
//! frames) and by category (garbage collection, page faults, spinning…), the categories
//! being the ones every page shows ([`kiln_model::categories`]).
use crate::threads::group_of;
use kiln_model::categories::{Categoriser, Rules};
use kiln_model::waits::program_frame;
use kiln_model::{FrameId, FrameKind, Profile, ThreadId};
use std::collections::HashMap;

/// Which of `p`'s samples belong to thread group `group` (all of them for `None`).
pub fn in_group(p: &Profile, group: Option<&str>) -> Vec<bool> {
    let Some(g) = group else {
        return vec![true; p.samples.len()];
    };
    let of_thread: Vec<bool> = p
        .threads
        .iter()
        .map(|(_, t)| group_of(p.strings.get(t.name)) == g)
        .collect();
    p.samples
        .thread
        .iter()
        .map(|&t| t != ThreadId::NONE && of_thread.get(t.0 as usize).copied().unwrap_or(false))
        .collect()
}

/// Which of `p`'s threads are programs the target ran: threads of processes other than
/// `pids` (the recording follows the target's children) under a name none of the target's
/// threads (nor `comm`) has — a program it executed (`sh`, `convert`), not a copy of
/// itself forked to serve (a forking server's children are the server).
pub fn programs_ran(p: &Profile, pids: &[u32], comm: &str) -> Vec<bool> {
    if pids.is_empty() {
        return vec![false; p.threads.len()];
    }
    let own: std::collections::HashSet<&[u8]> = p
        .threads
        .iter()
        .filter(|(_, t)| t.pid.is_some_and(|x| pids.contains(&x)))
        .map(|(_, t)| p.strings.get(t.name))
        .chain(std::iter::once(comm.as_bytes()))
        .collect();
    p.threads
        .iter()
        .map(|(_, t)| {
            t.pid.is_some_and(|x| !pids.contains(&x)) && !own.contains(p.strings.get(t.name))
        })
        .collect()
}

/// The CPU of the programs the target ran ([`programs_ran`]) in `p`: their seconds and
/// their names by seconds, heaviest first. `None` when none ran.
pub fn others_cpu(p: &Profile, pids: &[u32], comm: &str) -> Option<(f64, Vec<(String, f64)>)> {
    let ns = p.event.ns_per_weight()?;
    let ran = programs_ran(p, pids, comm);
    let mut by_name: HashMap<String, u128> = HashMap::new();
    for (&t, &w) in p.samples.thread.iter().zip(&p.samples.weight) {
        if !ran.get(t.0 as usize).copied().unwrap_or(false) {
            continue;
        }
        if let Some(th) = p.threads.get(t) {
            *by_name
                .entry(String::from_utf8_lossy(p.strings.get(th.name)).into_owned())
                .or_default() += w as u128;
        }
    }
    let all: u128 = by_name.values().sum();
    if all == 0 {
        return None;
    }
    let mut names: Vec<(String, f64)> = by_name
        .into_iter()
        .map(|(n, w)| (n, w as f64 * ns / 1e9))
        .collect();
    names.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Some((all as f64 * ns / 1e9, names))
}

/// The CPU seconds `p` holds of processes other than `pids` (the target as first found):
/// in a profile without the programs the target ran ([`programs_ran`], set apart), the
/// copies of itself it forked to serve since (PostgreSQL's backend for each connection, a
/// forking server's child for each client). `None` without a clock profile.
pub fn copies_cpu(p: &Profile, pids: &[u32]) -> Option<f64> {
    let ns = p.event.ns_per_weight()?;
    if pids.is_empty() {
        return Some(0.0);
    }
    let other: Vec<bool> = p
        .threads
        .iter()
        .map(|(_, t)| t.pid.is_some_and(|x| !pids.contains(&x)))
        .collect();
    let w: u128 = p
        .samples
        .thread
        .iter()
        .zip(&p.samples.weight)
        .filter(|(t, _)| other.get(t.0 as usize).copied().unwrap_or(false))
        .map(|(_, &w)| w as u128)
        .sum();
    Some(w as f64 * ns / 1e9)
}

/// The processes of `p` other than `pids` (the target's when the recording began): how
/// many ran a sample, and which samples are theirs. Once the programs it ran are left
/// out ([`programs_ran`]), these are copies of the server it started in the window.
pub fn new_processes(p: &Profile, pids: &[u32]) -> (usize, Vec<bool>) {
    if pids.is_empty() {
        return (0, vec![false; p.samples.len()]);
    }
    let other: Vec<Option<u32>> = p
        .threads
        .iter()
        .map(|(_, t)| t.pid.filter(|x| !pids.contains(x)))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let keep = p
        .samples
        .thread
        .iter()
        .map(|t| match other.get(t.0 as usize).copied().flatten() {
            Some(pid) => {
                seen.insert(pid);
                true
            }
            None => false,
        })
        .collect();
    (seen.len(), keep)
}

/// Which of `p`'s samples have a stack `pred` holds for, given the stack's frames from
/// the root to the leaf (each stack walked once, however many samples share it).
pub fn with_stack(p: &Profile, mut pred: impl FnMut(&[FrameId]) -> bool) -> Vec<bool> {
    let mut path = Vec::new();
    let by_stack: Vec<bool> = p
        .stacks
        .ids()
        .map(|id| {
            path.clear();
            p.stacks.path_into(id, &mut path);
            pred(&path)
        })
        .collect();
    p.samples
        .stack
        .iter()
        .map(|s| by_stack.get(s.0 as usize).copied().unwrap_or(false))
        .collect()
}

/// The share of `p`'s weight in the samples `keep` marks (0 for an empty profile).
pub fn kept_share(p: &Profile, keep: &[bool]) -> f64 {
    let (mut kept, mut total) = (0u128, 0u128);
    for (i, &w) in p.samples.weight.iter().enumerate() {
        total += w as u128;
        if keep.get(i).copied().unwrap_or(false) {
            kept += w as u128;
        }
    }
    kept as f64 / total.max(1) as f64
}

/// The seconds `p`'s samples that `keep` marks stand for (0 for a profile with no time
/// per sample).
pub fn kept_seconds(p: &Profile, keep: &[bool]) -> f64 {
    let Some(ns) = p.event.ns_per_weight() else {
        return 0.0;
    };
    let w: u128 = p
        .samples
        .weight
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&w, _)| w as u128)
        .sum();
    w as f64 * ns / 1e9
}

/// `p`'s weight (of the samples `keep` marks) by the program's function nearest the leaf,
/// heaviest first, and the weight of those samples in all. Samples with no program frame
/// (all runtime, all kernel) are left out of the list, not of the total.
pub fn program_functions(p: &Profile, keep: &[bool]) -> (Vec<(String, u128)>, u128) {
    let mut by: HashMap<String, u128> = HashMap::new();
    let mut total = 0u128;
    let mut path = Vec::new();
    let mut seen: Vec<Option<Option<String>>> = vec![None; p.stacks.len()];
    for i in 0..p.samples.len() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let (st, w) = (p.samples.stack[i], p.samples.weight[i] as u128);
        total += w;
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let name = slot.get_or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let user: Vec<(String, FrameKind)> = path
                .iter()
                .map(|&f| {
                    (
                        String::from_utf8_lossy(p.frame_name(f)).into_owned(),
                        p.frames.get(f).kind,
                    )
                })
                .filter(|(_, k)| !matches!(k, FrameKind::Kernel | FrameKind::Root))
                .collect();
            // In a managed runtime the program is its JIT-compiled (or interpreted Python)
            // code: the deepest such frame, above the runtime's and the libraries' C — the
            // program's own before its standard library's (a JVM's intrinsic stub under
            // `MessageDigest.digest` under `Receipt.sign` is `Receipt.sign`'s work).
            let managed = |own: bool| {
                user.iter().rposition(|(n, k)| {
                    matches!(k, FrameKind::Jit | FrameKind::Python)
                        && !n.starts_with("$global::")
                        && !kiln_model::waits::is_jvm_generated(n)
                        && (!own || !kiln_model::waits::is_jdk_method(n))
                })
            };
            let managed = managed(true)
                .or_else(|| managed(false))
                .map(|i| user[i].0.clone());
            let names: Vec<&str> = user.iter().map(|(n, _)| n.as_str()).collect();
            managed.or_else(|| program_frame(&names).map(|i| names[i].to_string()))
        });
        if let Some(n) = name {
            *by.entry(n.clone()).or_default() += w;
        }
    }
    let mut v: Vec<(String, u128)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (v, total)
}

/// The program's function deepest in the stacks that runs under it in at least `min` of
/// the weight `keep` marks (a job's entry under a pool's dispatch: `kdf_pbkdf2_derive`
/// above the hash functions it spends its time in), and that share. `None` when no
/// program frame covers that much.
pub fn dominant_frame(p: &Profile, keep: &[bool], min: f64) -> Option<(String, f64)> {
    // Each stack once, with its samples' weight.
    let mut by_stack: HashMap<kiln_model::StackId, u128> = HashMap::new();
    let mut total = 0u128;
    for i in 0..p.samples.len() {
        if keep.get(i).copied().unwrap_or(false) {
            *by_stack.entry(p.samples.stack[i]).or_default() += p.samples.weight[i] as u128;
            total += p.samples.weight[i] as u128;
        }
    }
    let mut cover: HashMap<FrameId, (u128, f64)> = HashMap::new();
    // The thread's own start (its first program frame) names no job: left out.
    let mut entries: std::collections::HashSet<FrameId> = Default::default();
    let mut path = Vec::new();
    let program = |f: FrameId| {
        !matches!(p.frames.get(f).kind, FrameKind::Kernel | FrameKind::Root)
            && kiln_model::waits::is_program_frame(&String::from_utf8_lossy(p.frame_name(f)))
    };
    for (st, w) in by_stack {
        path.clear();
        p.stacks.path_into(st, &mut path);
        path.dedup();
        let mut first = true;
        for (d, &f) in path.iter().enumerate() {
            if !program(f) || path[..d].contains(&f) {
                continue;
            }
            if std::mem::take(&mut first) {
                entries.insert(f);
                continue;
            }
            let c = cover.entry(f).or_default();
            c.0 += w;
            c.1 += d as f64 * w as f64;
        }
    }
    let total = total.max(1);
    cover
        .into_iter()
        .filter(|(f, (w, _))| *w as f64 >= min * total as f64 && !entries.contains(f))
        .map(|(f, (w, d))| {
            let name = String::from_utf8_lossy(p.frame_name(f)).into_owned();
            (name, w as f64 / total as f64, d / w.max(1) as f64)
        })
        .max_by(|a, b| a.2.total_cmp(&b.2).then(b.0.cmp(&a.0)))
        .map(|(n, s, _)| (n, s))
}

/// The built-in category rules, compiled once.
pub fn builtin() -> Option<&'static Categoriser> {
    static C: std::sync::OnceLock<Option<Categoriser>> = std::sync::OnceLock::new();
    C.get_or_init(|| Categoriser::new(&Rules::builtin()).ok())
        .as_ref()
}

/// The built-in category of `p`'s user frame named `name` (the first so named), by the
/// frame's own rule; `None` when no rule names it.
pub fn frame_category<'a>(p: &Profile, name: &str) -> Option<&'a str> {
    let c = builtin()?;
    let cats = c.frames(p);
    let (id, _) = p
        .frames
        .iter()
        .find(|(_, f)| p.strings.get(f.name) == name.as_bytes())?;
    let k = (*cats.get(id.0 as usize)?)?;
    c.categories().get(k).map(String::as_str)
}

/// Whether each of `p`'s samples is in one of the categories `pred` names.
pub fn in_categories(p: &Profile, pred: impl Fn(&str) -> bool) -> Vec<bool> {
    let Some(c) = builtin() else {
        return vec![false; p.samples.len()];
    };
    let names = c.categories();
    c.samples(p)
        .into_iter()
        .map(|i| names.get(i).is_some_and(|n| pred(n)))
        .collect()
}

/// `p`'s weight (of the samples `keep` marks) by category of the built-in rules, the
/// heaviest first, and in all.
pub fn categories(p: &Profile, keep: &[bool]) -> (Vec<(String, u128)>, u128) {
    let Some(c) = builtin() else {
        return (Vec::new(), 0);
    };
    let names = c.categories();
    let mut w: Vec<u128> = vec![0; names.len() + 2];
    let mut total = 0u128;
    for (i, cat) in c.samples(p).into_iter().enumerate() {
        if keep.get(i).copied().unwrap_or(false) {
            let x = p.samples.weight[i] as u128;
            w[cat] += x;
            total += x;
        }
    }
    let mut out: Vec<(String, u128)> = w
        .into_iter()
        .enumerate()
        .filter(|(_, x)| *x > 0)
        .map(|(i, x)| {
            let n = match i.checked_sub(names.len()) {
                None => names[i].clone(),
                Some(0) => kiln_model::categories::OTHER.to_string(),
                Some(_) => kiln_model::categories::OTHER_KERNEL.to_string(),
            };
            (n, x)
        })
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    (out, total)
}

/// The share (0 to 1) of `total` the categories named by `pred` weigh in `cats`.
pub fn share_of(cats: &(Vec<(String, u128)>, u128), pred: impl Fn(&str) -> bool) -> f64 {
    if cats.1 == 0 {
        return 0.0;
    }
    cats.0
        .iter()
        .filter(|(n, _)| pred(n))
        .map(|(_, w)| *w)
        .sum::<u128>() as f64
        / cats.1 as f64
}

/// The name of the system call a kernel frame is the entry point of (`__x64_sys_sendto`,
/// `__do_sys_sched_yield`, `ksys_write`: `sendto`, `sched_yield`, `write`), if it is one.
pub fn system_call_of(frame: &str) -> Option<&str> {
    [
        "__x64_sys_",
        "__ia32_sys_",
        "__arm64_sys_",
        "__se_sys_",
        "__do_sys_",
        "ksys_",
    ]
    .iter()
    .find_map(|p| frame.strip_prefix(p))
    .filter(|n| !n.is_empty())
}

/// Where `keep`'s samples spent their CPU in the kernel: the weight of the samples whose
/// leaf is a kernel frame, and of those by system call (the outermost entry point the
/// stack names, with the program's function that made the call), heaviest first.
#[derive(Debug, Default)]
pub struct KernelTime {
    /// By system call and its caller in the program (when the stack names one).
    pub calls: Vec<(String, Option<String>, u128)>,
    /// The samples in the kernel, whether or not a system call is named.
    pub kernel: u128,
    /// All the samples `keep` marks.
    pub total: u128,
}

impl KernelTime {
    /// The share (0 to 1) of the samples in the kernel.
    pub fn share(&self) -> f64 {
        self.kernel as f64 / self.total.max(1) as f64
    }
}

/// [`KernelTime`] of `keep`'s samples.
pub fn kernel_time(p: &Profile, keep: &[bool]) -> KernelTime {
    let mut by: HashMap<(String, Option<String>), u128> = HashMap::new();
    let mut out = KernelTime::default();
    let mut path = Vec::new();
    // Per stack: None when its leaf is not the kernel's, else the call and its caller.
    type Call = Option<(String, Option<String>)>;
    let mut seen: Vec<Option<Option<Call>>> = vec![None; p.stacks.len()];
    for i in 0..p.samples.len() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let (st, w) = (p.samples.stack[i], p.samples.weight[i] as u128);
        out.total += w;
        let Some(slot) = seen.get_mut(st.0 as usize) else {
            continue;
        };
        let at = slot.get_or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let kind = |f: &FrameId| p.frames.get(*f).kind;
            if path.last().map(kind) != Some(FrameKind::Kernel) {
                return None;
            }
            let name = |f: &FrameId| String::from_utf8_lossy(p.frame_name(*f)).into_owned();
            let call = path
                .iter()
                .filter(|f| kind(f) == FrameKind::Kernel)
                .find_map(|f| system_call_of(&name(f)).map(str::to_string));
            let user: Vec<String> = path
                .iter()
                .filter(|f| !matches!(kind(f), FrameKind::Kernel | FrameKind::Root))
                .map(name)
                .collect();
            let caller = program_frame(&user).map(|i| user[i].clone());
            Some(call.map(|c| (c, caller)))
        });
        if let Some(call) = at {
            out.kernel += w;
            if let Some(c) = call {
                *by.entry(c.clone()).or_default() += w;
            }
        }
    }
    out.calls = by.into_iter().map(|((c, by), w)| (c, by, w)).collect();
    out.calls
        .sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    out
}

/// The top `n` program functions of `keep`'s samples as `name (share)`, shares of the
/// samples' weight.
pub fn top_named(p: &Profile, keep: &[bool], n: usize) -> Vec<(String, f64)> {
    let (v, total) = program_functions(p, keep);
    if total == 0 {
        return Vec::new();
    }
    v.into_iter()
        .take(n)
        .map(|(name, w)| (name, w as f64 / total as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, WeightUnit, NO_TIME};

    /// A sample's stack, root first, each frame `kind:name` (u user, k kernel).
    fn add(p: &mut Profile, stack: &str, w: u64) {
        let t = p.thread(Some(1), Some(1), b"server");
        let frames: Vec<FrameId> = stack
            .split(';')
            .map(|f| {
                let (k, n) = f.split_once(':').unwrap();
                let kind = if k == "k" {
                    FrameKind::Kernel
                } else {
                    FrameKind::User
                };
                p.frame(n.as_bytes(), kind)
            })
            .collect();
        p.add_sample_path(&frames, w, NO_TIME, t);
    }

    #[test]
    fn a_jvm_programs_function_is_its_own_method_above_the_jdk_and_the_jvms_stubs() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let t = p.thread(Some(1), Some(1), b"pool-1-thread-1");
        let frames: Vec<FrameId> = [
            ("start_thread", FrameKind::User),
            ("StubRoutines (1)", FrameKind::Jit),
            (
                "void sun.net.httpserver.ServerImpl$Exchange.run()",
                FrameKind::Jit,
            ),
            ("byte[] ReceiptServer$Receipt.sign(byte)", FrameKind::Jit),
            (
                "byte[] java.security.MessageDigest.digest()",
                FrameKind::Jit,
            ),
            ("StubRoutines (2)", FrameKind::Jit),
        ]
        .iter()
        .map(|(n, k)| p.frame(n.as_bytes(), *k))
        .collect();
        p.add_sample_path(&frames, 3, NO_TIME, t);
        // A JDK server's own work: its deepest method, the JDK's, when the program has none.
        let jdk = [frames[0], frames[1], frames[2]];
        p.add_sample_path(&jdk, 1, NO_TIME, t);
        let (v, total) = program_functions(&p, &vec![true; p.samples.len()]);
        assert_eq!(total, 4);
        assert_eq!(
            v,
            vec![
                ("byte[] ReceiptServer$Receipt.sign(byte)".to_string(), 3),
                (
                    "void sun.net.httpserver.ServerImpl$Exchange.run()".to_string(),
                    1
                ),
            ]
        );
    }

    #[test]
    fn a_pools_job_is_the_deepest_program_frame_under_most_of_its_samples() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let job = "u:start_thread;u:worker;u:node::ThreadPoolWork::ScheduleWork;u:PKCS5_PBKDF2_HMAC;u:kdf_pbkdf2_derive";
        add(
            &mut p,
            &format!("{job};u:HMAC_Final;u:sha256_block_data_order"),
            6,
        );
        add(
            &mut p,
            &format!("{job};u:HMAC_CTX_copy;u:EVP_MD_CTX_copy_ex"),
            3,
        );
        add(
            &mut p,
            "u:start_thread;u:worker;u:uv_cond_wait;k:futex_wait",
            1,
        );
        let all = vec![true; p.samples.len()];
        assert_eq!(
            dominant_frame(&p, &all, 0.8),
            Some(("kdf_pbkdf2_derive".to_string(), 0.9))
        );
        // Nothing under 95% but the thread's start, which is no program's.
        assert_eq!(dominant_frame(&p, &all, 0.95), None);
    }

    #[test]
    fn kernel_time_is_by_system_call_and_the_program_function_that_made_it() {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        add(&mut p, "u:main;u:serve;u:emit_metrics;u:__libc_sendto;k:entry_SYSCALL_64;k:do_syscall_64;k:__x64_sys_sendto;k:__sys_sendto;k:udp_sendmsg", 6);
        // A softirq under the same call is the call's.
        add(&mut p, "u:main;u:serve;u:emit_metrics;u:__libc_sendto;k:entry_SYSCALL_64;k:__x64_sys_sendto;k:__local_bh_enable_ip;k:net_rx_action", 2);
        add(
            &mut p,
            "u:main;u:serve;u:respond;u:__libc_write;k:entry_SYSCALL_64;k:ksys_write;k:tcp_sendmsg",
            1,
        );
        // In the kernel without a system call (a page fault), and in the program.
        add(
            &mut p,
            "u:main;u:serve;k:asm_exc_page_fault;k:handle_mm_fault",
            1,
        );
        add(&mut p, "u:main;u:serve;u:parse", 2);
        let k = kernel_time(&p, &vec![true; p.samples.len()]);
        assert_eq!((k.kernel, k.total), (10, 12));
        assert_eq!(
            k.calls,
            vec![
                ("sendto".to_string(), Some("emit_metrics".to_string()), 8),
                ("write".to_string(), Some("respond".to_string()), 1),
            ]
        );
        assert_eq!(system_call_of("__do_sys_sched_yield"), Some("sched_yield"));
        assert_eq!(system_call_of("__x64_sys_"), None);
        assert_eq!(system_call_of("do_syscall_64"), None);
    }
}

/// One stretch of a thread's CPU samples in one function of the program's: its name, the
/// first sample's time and the last's end (ns, on the profile's clock).
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The deepest function of the program's on every sample of the stretch.
    pub name: String,
    /// The first sample's time.
    pub start: u64,
    /// The last sample's time and its duration.
    pub end: u64,
    /// Its thread's kernel id.
    pub tid: u32,
    /// Its thread's time on a CPU in it (its samples'): less than its length when the
    /// thread waited for a CPU meanwhile.
    pub cpu_ns: u64,
    /// The shallowest function of the stretch's own (on its samples, and mostly in such
    /// stretches), when not `name`: where its path begins.
    pub entry: Option<String>,
}

/// The stretches of `min_ns` at least in which thread `tid` (its kernel id) ran one
/// function of the program's without a break: every one of its samples in them has the
/// function on its stack, and no two are further apart than five samples' time (a thread
/// that blocked between them did something else). Functions on `roots` of the thread's
/// samples or more (its roots, its loop: half of an event loop's samples, nearly all of a
/// connection's thread's) name no stretch; overlapping stretches are one, named by
/// the deepest function whose stretches cover two thirds of it and whose samples are
/// mostly (4 in 5) in such stretches (none: no run), and stretches less than 2 ms apart
/// (one function's, twice `min_ns`) are one. Oldest first.
///
/// With the thread's waits for more work (`blocked`: polling or reading its connections,
/// a runtime's idle wait; start and end, oldest first: the off-CPU profile's), a stretch
/// breaks where the thread waited for more work between two samples, and only there: a
/// thread preempted on a busy machine, or blocked a moment inside the work, goes on with
/// the same work when it runs again, and one that served another request between two
/// samples a moment apart waited to read it.
pub fn thread_runs(
    p: &Profile,
    tid: u32,
    min_ns: u64,
    roots: f64,
    blocked: Option<&[(u64, u64)]>,
) -> Vec<Run> {
    let Some(ns) = p.event.ns_per_weight() else {
        return Vec::new();
    };
    let mut on: Vec<usize> = (0..p.samples.len())
        .filter(|&i| {
            p.samples.time[i] != kiln_model::NO_TIME
                && p.threads.get(p.samples.thread[i]).and_then(|t| t.tid) == Some(tid)
        })
        .collect();
    on.sort_by_key(|&i| p.samples.time[i]);
    if on.len() < 8 {
        return Vec::new();
    }
    let mut path = Vec::new();
    // Functions by name, a JIT's tiers as one (V8's `JS:^f` becomes `JS:*f` mid-run).
    let mut names: Vec<String> = Vec::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut frames_of: HashMap<kiln_model::StackId, Vec<(usize, usize)>> = HashMap::new();
    let mut present: HashMap<usize, usize> = HashMap::new();
    for &i in &on {
        let st = p.samples.stack[i];
        let fs = frames_of.entry(st).or_insert_with(|| {
            path.clear();
            p.stacks.path_into(st, &mut path);
            let mut v: Vec<(usize, usize)> = Vec::new();
            for (depth, &f) in path.iter().enumerate() {
                let name = String::from_utf8_lossy(p.frame_name(f));
                let own = match p.frames.get(f).kind {
                    FrameKind::Kernel | FrameKind::Root => false,
                    FrameKind::Jit | FrameKind::Python => true,
                    _ => kiln_model::waits::is_program_frame(&name),
                };
                if !own {
                    continue;
                }
                let name = match name.strip_prefix("JS:") {
                    Some(r) => format!("JS:{}", r.trim_start_matches(['*', '^', '~', '+'])),
                    None => name.into_owned(),
                };
                let n = names.len();
                let id = *ids.entry(name.clone()).or_insert_with(|| {
                    names.push(name);
                    n
                });
                if !v.iter().any(|x| x.0 == id) {
                    v.push((id, depth));
                }
            }
            v
        });
        for &(f, _) in fs.iter() {
            *present.entry(f).or_default() += 1;
        }
    }
    let rooted = |n: usize| n as f64 >= roots * on.len() as f64;
    // Per function: its open stretch (first sample, last sample, depth).
    let mut open: HashMap<usize, (usize, usize, usize)> = HashMap::new();
    let mut done: Vec<(usize, usize, u64, u64)> = Vec::new();
    let dur = |i: usize| (p.samples.weight[i] as f64 * ns) as u64;
    // Per function, its samples inside its own stretches.
    let mut inside: HashMap<usize, usize> = HashMap::new();
    let mut close = |f: usize, (a, b, d): (usize, usize, usize), done: &mut Vec<_>| {
        let (s, e) = (p.samples.time[on[a]], p.samples.time[on[b]] + dur(on[b]));
        if e.saturating_sub(s) >= min_ns {
            done.push((f, d, s, e));
            *inside.entry(f).or_default() += b - a + 1;
        }
    };
    for (k, &i) in on.iter().enumerate() {
        let gap = k > 0 && {
            let (a, b) = (p.samples.time[on[k - 1]], p.samples.time[i]);
            match blocked {
                // A block that began before this sample and ended after the last (one
                // thread's blocks do not overlap: the latest to begin ends last), however
                // close the samples: a thread per connection blocks between requests.
                Some(bl) => {
                    let n = bl.partition_point(|x| x.0 < b);
                    n > 0 && bl[n - 1].1 > a
                }
                None => b.saturating_sub(a) > 5 * dur(on[k - 1]).max(1),
            }
        };
        for &(f, depth) in &frames_of[&p.samples.stack[i]] {
            if rooted(present[&f]) {
                continue;
            }
            match open.get_mut(&f) {
                Some(r) if r.1 + 1 == k && !gap => r.1 = k,
                Some(r) => {
                    let old = *r;
                    *r = (k, k, depth);
                    close(f, old, &mut done);
                }
                None => {
                    open.insert(f, (k, k, depth));
                }
            }
        }
    }
    for (f, r) in open {
        close(f, r, &mut done);
    }
    done.sort_by_key(|d| d.2);
    // Overlapping stretches: one, named by the deepest that covers most of it.
    let mut out: Vec<Run> = Vec::new();
    let mut group: Vec<(usize, usize, u64, u64)> = Vec::new();
    let flush = |group: &mut Vec<(usize, usize, u64, u64)>, out: &mut Vec<Run>| {
        if group.is_empty() {
            return;
        }
        let s = group.iter().map(|g| g.2).min().unwrap_or(0);
        let e = group.iter().map(|g| g.3).max().unwrap_or(0);
        // Per function, the time its stretches cover (a frameless leaf hides its caller
        // from a few samples: the caller's stretch comes in pieces) and its depth.
        let mut cover: Vec<(usize, usize, u64)> = Vec::new();
        for g in group.iter() {
            match cover.iter_mut().find(|c| c.0 == g.0) {
                Some(c) => c.2 += g.3 - g.2,
                None => cover.push((g.0, g.1, g.3 - g.2)),
            }
        }
        // (Of those, the deepest that runs mostly in such stretches: a helper every
        // operation calls, deeper than the slow path, is not what makes it slow.)
        let covering = || cover.iter().filter(|c| c.2 * 3 >= (e - s) * 2);
        let mostly_inside = |c: &&(usize, usize, u64)| {
            inside.get(&c.0).copied().unwrap_or(0) * 5 >= present[&c.0] * 4
        };
        // A stretch no function of its own names (its functions run as much outside such
        // stretches: a connection's loop serving requests back to back) is no run.
        let best = covering().filter(mostly_inside).max_by_key(|c| c.1);
        // And the shallowest such: where the stretch's path begins (the deepest may be a
        // callback it calls over and over, a comparator under a sort).
        let entry = covering()
            .filter(mostly_inside)
            .min_by_key(|c| c.1)
            .filter(|c| best.is_some_and(|b| b.0 != c.0))
            .map(|c| names[c.0].clone());
        if let Some(b) = best {
            out.push(Run {
                name: names[b.0].clone(),
                entry,
                cpu_ns: 0,
                start: s,
                end: e,
                tid,
            });
        }
        group.clear();
    };
    for d in done {
        let end = group.iter().map(|g| g.3).max();
        if end.is_some_and(|e| d.2 >= e) {
            flush(&mut group, &mut out);
        }
        group.push(d);
    }
    flush(&mut group, &mut out);
    // Pieces of one stretch (the thread preempted, or blocked a moment, in between) are
    // one, named by its longest piece.
    let mut merged: Vec<(Run, u64)> = Vec::new();
    for r in out {
        let len = r.end - r.start;
        match merged.last_mut() {
            // (A function's own pieces further apart: a moment of it the samples did
            // not see, a collection in the middle.)
            Some((m, longest))
                if r.start.saturating_sub(m.end)
                    < if m.name == r.name {
                        2 * min_ns
                    } else {
                        min_ns.min(2_000_000)
                    } =>
            {
                m.end = m.end.max(r.end);
                if len > *longest {
                    (m.name, *longest) = (r.name, len);
                }
            }
            _ => merged.push((r, len)),
        }
    }
    // Each run's time on a CPU: its thread's samples in it.
    merged
        .into_iter()
        .map(|(mut r, _)| {
            let a = on.partition_point(|&i| p.samples.time[i] < r.start);
            let b = on.partition_point(|&i| p.samples.time[i] < r.end);
            r.cpu_ns = on[a..b].iter().map(|&i| dur(i)).sum();
            r
        })
        .collect()
}
