//! Who caused an event: the program's own code behind a sample taken at a kernel site.
//!
//! A tracepoint or syscall event (`mmap`, `brk`, page faults, `sched:*`) is taken at one
//! place in the kernel, the same for every event of its kind: ranked by self weight, a
//! memory profile reads "99% syscall_trace_enter". What a reader acts on is the code that
//! asked — the first frame of the program above the kernel's entry path and the C
//! library's system-call wrappers, and the JIT-compiled function (an Erlang function of
//! the BEAM's perf map) that called it where there is one. perf users read the same with
//! `perf report --no-children -g caller`.
//!
//! A `cpu-clock` profile has a kernel artefact of its own: the timer that samples it is an
//! interrupt, so on a machine without a PMU's non-maskable sampling, a sample due while
//! interrupts were off is taken where they are turned back on
//! ([`reenables_interrupts`]): `finish_task_switch`, `_raw_spin_unlock_irqrestore`. Those
//! rows stand for the code that ran with interrupts off before them (perf, sampling the
//! same software event, shows the same).
use crate::{FrameKind, Profile};
use std::collections::HashMap;

/// The C library's system-call wrappers and the allocator entry points that only pass a
/// request to the kernel: no reader's answer to "who asked".
const WRAPPERS: &[&str] = &[
    "mmap", "mmap64", "munmap", "mremap", "mprotect", "madvise", "brk", "sbrk", "syscall",
];

/// Whether `name` is a system-call wrapper (`__mmap`, `__GI___mmap64`, `mmap64`).
pub fn is_syscall_wrapper(name: &str) -> bool {
    let n = name
        .strip_prefix("__GI_")
        .unwrap_or(name)
        .trim_start_matches('_');
    WRAPPERS.contains(&n)
}

/// Memory allocators' own frames, between the code that wanted memory and the system call
/// that maps it: the BEAM's (erts_alcu_*, erts_mseg_*, erts_mmap), glibc's malloc, Go's
/// heap. The same for every allocation, so no answer to "who asked" either.
const ALLOCATOR_PREFIXES: &[&str] = &[
    "erts_alcu_",
    "erts_mseg_",
    "erts_mmap",
    "erts_sys_mmap",
    "erts_alloc",
    "erts_realloc",
    "erts_sys_alloc",
    "erts_sys_realloc",
    "os_mmap",
    "malloc",
    "calloc",
    "realloc",
    "_int_malloc",
    "_int_realloc",
    "__libc_malloc",
    "__libc_calloc",
    "__libc_realloc",
    "__GI___libc_malloc",
    "sysmalloc",
    "new_heap",
    "alloc_new_heap",
    "arena_get2",
    "tcache_init",
    "_mid_memalign",
    "posix_memalign",
    "aligned_alloc",
    "runtime.sysAlloc",
    "runtime.sysMap",
    "runtime.sysReserve",
    "runtime.(*mheap)",
    "runtime.(*mcache)",
    "runtime.(*mcentral)",
    "runtime.mallocgc",
    "runtime.persistentalloc",
    "runtime.(*pageAlloc)",
];

/// Whether `name` is a memory allocator's own frame.
pub fn is_allocator(name: &str) -> bool {
    ALLOCATOR_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether a frame has no name a reader can use (`beam.smp+0x119a90`, `[unknown]`), or is
/// the JIT's own glue (`$global::call_light_bif_shared`).
fn is_unnamed(name: &str) -> bool {
    name.starts_with('[') || name.contains("+0x") || !is_program_jit(name)
}

/// Kernel functions where a timer interrupt held back while interrupts were off is taken.
const REENABLE_SITES: &[&str] = &[
    "finish_task_switch",
    "_raw_spin_unlock_irqrestore",
    "_raw_spin_unlock_irq",
    "__raw_spin_unlock_irq",
    "raw_spin_rq_unlock_irq",
    "irqentry_exit_to_user_mode",
    "irqentry_exit",
    "exit_to_user_mode_prepare",
    "syscall_exit_to_user_mode",
    "__do_softirq",
    "handle_softirqs",
    "local_bh_enable",
    "__local_bh_enable_ip",
];

/// Whether a `cpu-clock` sample at kernel function `name` was likely taken as interrupts
/// came back on (`finish_task_switch.isra.0` included).
pub fn reenables_interrupts(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    REENABLE_SITES.contains(&base)
}

/// Whether a JIT frame is a function of the program (`$rabbit_msg_store:write/3`), not a
/// piece of the JIT's own glue (`$global::call_light_bif_shared`).
fn is_program_jit(name: &str) -> bool {
    !name.starts_with("$global::")
}

/// The cause of one stack, given root → leaf as (name, kind).
///
/// * `site`: the program's first frame above the kernel and the system-call wrappers (for
///   an mmap of the BEAM, `erts_mmap`);
/// * `code`: the first frame at or above the site that is neither a memory allocator's own
///   nor unnamed (`driver_alloc_binary`, `erts_garbage_collect_nobump`): the code that
///   wanted the memory; the site itself when there is none;
/// * `jit`: the nearest JIT-compiled function of the program above it (an Erlang function
///   of the BEAM's perf map), when the stack reaches one.
pub fn cause<'a>(path: &[(&'a str, FrameKind)]) -> Option<Cause3<'a>> {
    let user = |&(n, k): &(&str, FrameKind)| {
        !matches!(k, FrameKind::Kernel | FrameKind::Root) && !is_syscall_wrapper(n)
    };
    let at = path.iter().rposition(user)?;
    let site = path[at].0;
    let code_at = path[..=at]
        .iter()
        .rposition(|f| user(f) && !is_allocator(f.0) && !is_unnamed(f.0))
        .unwrap_or(at);
    let code = path[code_at].0;
    let jit = path[..=code_at]
        .iter()
        .rev()
        .find(|&&(n, k)| k == FrameKind::Jit && is_program_jit(n))
        .map(|&(n, _)| n)
        .filter(|&n| n != code);
    Some(Cause3 { site, code, jit })
}

/// What [`cause`] found in one stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause3<'a> {
    /// The program's first frame above the kernel and its wrappers.
    pub site: &'a str,
    /// The code that wanted it, above the allocator's frames.
    pub code: &'a str,
    /// The JIT-compiled function above it, when there is one.
    pub jit: Option<&'a str>,
}

impl Cause3<'_> {
    /// `code ← jit (via site)`, each part when it says something new.
    pub fn label(&self) -> String {
        let mut s = self.code.to_string();
        if let Some(j) = self.jit {
            s.push_str(" ← ");
            s.push_str(j);
        }
        if self.site != self.code {
            s.push_str(" (via ");
            s.push_str(self.site);
            s.push(')');
        }
        s
    }
}

/// One cause and its share of the profile's weight.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// `site`, or `site ← jit function`.
    pub name: String,
    /// Its weight (bytes, events: the profile's unit).
    pub weight: u128,
    /// Its share of the profile's weight, percent.
    pub share: f64,
}

/// The `n` heaviest causes of `p`'s samples ([`cause`]); samples whose stack has no frame
/// of the program (a kernel thread's) count as `[kernel]`.
pub fn top_causes(p: &Profile, n: usize) -> Vec<Cause> {
    let mut memo: Vec<Option<String>> = vec![None; p.stacks.len()];
    let mut by_name: HashMap<String, u128> = HashMap::new();
    let mut total = 0u128;
    for (&st, &w) in p.samples.stack.iter().zip(&p.samples.weight) {
        let i = st.0 as usize;
        if memo[i].is_none() {
            let frames = p.named_path(st);
            let refs: Vec<(&str, FrameKind)> =
                frames.iter().map(|(s, k)| (s.as_str(), *k)).collect();
            memo[i] = Some(cause(&refs).map_or_else(|| "[kernel]".to_string(), |c| c.label()));
        }
        total += w as u128;
        if let Some(name) = &memo[i] {
            *by_name.entry(name.clone()).or_default() += w as u128;
        }
    }
    if total == 0 {
        return Vec::new();
    }
    let mut v: Vec<(String, u128)> = by_name.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter()
        .take(n)
        .map(|(name, weight)| Cause {
            name,
            weight,
            share: weight as f64 * 100.0 / total as f64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use FrameKind::*;

    #[test]
    fn the_program_frame_above_the_kernel_and_its_erlang_caller() {
        // What kiln recorded of RabbitMQ's mmap calls.
        let path = [
            ("beam.smp", Root),
            ("$global::process_main", Jit),
            ("$rabbit_msg_store:write/3", Jit),
            ("$global::call_light_bif_shared", Jit),
            ("erts_alcu_alloc", User),
            ("erts_mseg_alloc", User),
            ("__mmap", User),
            ("entry_SYSCALL_64_after_hwframe", Kernel),
            ("do_syscall_64", Kernel),
            ("syscall_trace_enter", Kernel),
        ];
        let c = cause(&path).unwrap();
        assert_eq!(c.label(), "$rabbit_msg_store:write/3 (via erts_mseg_alloc)");
        // Without the JIT's frames, the code above the allocator: a port's binary.
        let beam = [
            ("2_scheduler", Root),
            ("[unknown]", Unknown),
            ("erts_internal_port_control_3", User),
            ("beam.smp+0x290630", User),
            ("driver_alloc_binary", User),
            ("erts_alcu_alloc_thr_pref", User),
            ("beam.smp+0x119a90", User),
            ("erts_mseg_alloc_opt", User),
            ("erts_mmap", User),
            ("__mmap64", User),
            ("syscall_trace_enter", Kernel),
        ];
        assert_eq!(
            cause(&beam).unwrap().label(),
            "driver_alloc_binary (via erts_mmap)"
        );
        // A C program: its own function, past libc's wrapper.
        let c = [
            ("memhog", Root),
            ("main", User),
            ("map_and_touch", User),
            ("__GI___mmap64", User),
            ("syscall_trace_enter", Kernel),
        ];
        assert_eq!(cause(&c).unwrap().label(), "map_and_touch");
        // A kernel thread: nothing of a program.
        assert_eq!(cause(&[("kworker", Root), ("worker_thread", Kernel)]), None);
    }

    #[test]
    fn interrupt_reenable_sites() {
        assert!(reenables_interrupts("finish_task_switch.isra.0"));
        assert!(reenables_interrupts("_raw_spin_unlock_irqrestore"));
        assert!(!reenables_interrupts("copy_user_enhanced_fast_string"));
        assert!(is_syscall_wrapper("__GI___mmap64") && is_syscall_wrapper("mmap"));
        assert!(!is_syscall_wrapper("map_and_touch"));
    }
}
