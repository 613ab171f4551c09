//! A run's samples by category over its seconds (the report's category chart), and each
//! frame's category for the flame graphs' colouring. The rules themselves, and what
//! category a sample is in, are the model's ([`kiln_model::categories`]): the findings
//! read the same categories.
pub use kiln_model::categories::*;
use kiln_model::waits::{self, WaitReason};
use kiln_model::{FrameKind, Profile, Quantity, NO_TIME};
use serde::Serialize;

/// Where a profile's weight went per interval, by category.
#[derive(Clone, Debug, Serialize)]
pub struct CategorySeries {
    /// The profile's event (`cpu-clock`, `offcpu`).
    pub event: String,
    /// What the values are: `% of one CPU` (CPU time), `threads` (off-CPU time: the mean
    /// number of threads blocked), or `/s` (other events per second).
    pub unit: String,
    /// Category names, largest total first; `other` and `other (kernel)` last.
    pub names: Vec<String>,
    /// The interval edges, ns relative to the page's origin: interval `i` is
    /// `[edges[i], edges[i + 1])`.
    pub edges: Vec<i64>,
    /// `values[c][i]`: category `c` in interval `i`, in `unit`.
    pub values: Vec<Vec<f64>>,
    /// Each category's share of the profile's weight inside the intervals, percent.
    pub shares: Vec<f64>,
    /// Samples outside every interval (before the first or after the last), not charted.
    pub outside: u64,
    /// Samples without a timestamp, not charted.
    pub untimed: u64,
}

/// Categorises `p`'s samples with `rules` and sums them over the intervals whose edges
/// are `edges` (absolute ns on the profile's clock, increasing), writing times relative to
/// `origin`. Samples weighing time (off-CPU blocks) cover `[t, t + weight]` and are
/// spread over the intervals they overlap. `None` when there are fewer than two edges or
/// the profile has no timestamps.
pub fn categorise(
    p: &Profile,
    rules: &Rules,
    edges: &[u64],
    origin: u64,
) -> Result<Option<CategorySeries>, RulesError> {
    if edges.len() < 2 || !p.samples.has_time() {
        return Ok(None);
    }
    let c = Categoriser::new(rules)?;
    let other = c.categories().len();
    // Off-CPU time goes by why it waited (kiln_model::waits), after the rules' categories.
    let reasons_at = other + 2;
    let n_cat = reasons_at + WaitReason::ALL.len();
    let is_offcpu = is_offcpu(p);
    // Each sample's category: why it waited (off-CPU), else the rules' decision.
    let of_sample: Vec<usize> = if is_offcpu {
        let r = waits::stack_reasons(p);
        p.samples
            .stack
            .iter()
            .map(|st| {
                let reason = r.get(st.0 as usize).copied().unwrap_or(WaitReason::Other);
                reasons_at
                    + WaitReason::ALL
                        .iter()
                        .position(|&x| x == reason)
                        .unwrap_or(0)
            })
            .collect()
    } else {
        c.samples(p)
    };

    // ns each unit of weight stands for, and whether samples cover a span.
    let ns_per_weight = p.event.ns_per_weight();
    let spans = matches!(p.event.quantity(), Quantity::Time { .. });
    let unit = match (ns_per_weight, is_offcpu) {
        (Some(_), true) => "threads",
        (Some(_), false) => "% of one CPU",
        (None, _) => "/s",
    };
    let category = |i: usize| -> usize { of_sample[i] };
    let span_ns = spans.then_some(ns_per_weight.unwrap_or(1.0));
    let Binned {
        sums,
        outside,
        untimed,
    } = bin_samples(p, edges, n_cat, span_ns, category);
    let values = in_chart_unit(&sums, edges, ns_per_weight, is_offcpu);
    let totals: Vec<f64> = sums.iter().map(|r| r.iter().sum()).collect();
    let all: f64 = totals.iter().sum();
    let mut names = c.categories().to_vec();
    names.push("other".into());
    names.push("other (kernel)".into());
    names.extend(WaitReason::ALL.iter().map(|r| r.name().to_string()));
    let order = chart_order(&totals, is_offcpu, other, reasons_at);
    Ok(Some(CategorySeries {
        event: p.event.name.clone(),
        unit: unit.to_string(),
        names: order.iter().map(|&i| names[i].clone()).collect(),
        edges: edges.iter().map(|&e| e as i64 - origin as i64).collect(),
        values: order.iter().map(|&i| values[i].clone()).collect(),
        shares: order
            .iter()
            .map(|&i| {
                if all > 0.0 {
                    totals[i] / all * 100.0
                } else {
                    0.0
                }
            })
            .collect(),
        outside,
        untimed,
    }))
}

/// Samples summed by category (rows) and interval (columns), and the samples left out.
struct Binned {
    sums: Vec<Vec<f64>>,
    outside: u64,
    untimed: u64,
}

/// Sums `p`'s samples into `n_cat` rows by `category` (of a sample's index) over the
/// intervals of `edges`. With `span_ns` (ns per unit of weight), a sample covers
/// `[t, t + weight × span_ns)` and is spread over the intervals it overlaps.
fn bin_samples(
    p: &Profile,
    edges: &[u64],
    n_cat: usize,
    span_ns: Option<f64>,
    category: impl Fn(usize) -> usize,
) -> Binned {
    let nb = edges.len() - 1;
    let mut sums = vec![vec![0.0f64; nb]; n_cat];
    let (lo, hi) = (edges[0], edges[nb]);
    let mut outside = 0u64;
    let mut untimed = 0u64;
    let bin_of = |t: u64| -> usize { edges.partition_point(|&e| e <= t).saturating_sub(1) };
    for i in 0..p.samples.len() {
        let t = p.samples.time[i];
        if t == NO_TIME {
            untimed += 1;
            continue;
        }
        let cat = category(i);
        let w = p.samples.weight[i] as f64;
        let len = span_ns.map_or(0.0, |ns| w * ns);
        if len <= 0.0 {
            if t < lo || t >= hi {
                outside += 1;
                continue;
            }
            sums[cat][bin_of(t)] += w;
            continue;
        }
        // A span [t, t + len): its weight spread over the intervals it overlaps.
        let (a, b) = (t as f64, t as f64 + len);
        if b <= lo as f64 || a >= hi as f64 {
            outside += 1;
            continue;
        }
        let mut k = bin_of(t.max(lo));
        while k < nb && (edges[k] as f64) < b {
            let (s, e) = (edges[k] as f64, edges[k + 1] as f64);
            let overlap = b.min(e) - a.max(s);
            if overlap > 0.0 {
                sums[cat][k] += w * overlap / len;
            }
            k += 1;
        }
    }
    Binned {
        sums,
        outside,
        untimed,
    }
}

/// `sums` in the chart's unit, per interval: time as a share of the interval (threads,
/// or % of one CPU), counts per second.
fn in_chart_unit(
    sums: &[Vec<f64>],
    edges: &[u64],
    ns_per_weight: Option<f64>,
    is_offcpu: bool,
) -> Vec<Vec<f64>> {
    let mut values = sums.to_vec();
    for row in values.iter_mut() {
        for (k, v) in row.iter_mut().enumerate() {
            let dt = (edges[k + 1] - edges[k]) as f64;
            *v = match (ns_per_weight, is_offcpu) {
                (Some(ns), true) => *v * ns / dt,
                (Some(ns), false) => *v * ns / dt * 100.0,
                (None, _) => *v / (dt / 1e9),
            };
        }
    }
    values
}

/// The rows to chart: largest first, the "other"s last; empty categories dropped.
fn chart_order(totals: &[f64], is_offcpu: bool, other: usize, reasons_at: usize) -> Vec<usize> {
    let other_kernel = other + 1;
    let (firsts, lasts) = if is_offcpu {
        let last = reasons_at + WaitReason::ALL.len() - 1;
        ((reasons_at..last).collect::<Vec<_>>(), vec![last])
    } else {
        ((0..other).collect(), vec![other, other_kernel])
    };
    let mut order: Vec<usize> = firsts.into_iter().filter(|&i| totals[i] > 0.0).collect();
    order.sort_by(|&a, &b| totals[b].total_cmp(&totals[a]).then(a.cmp(&b)));
    order.extend(lasts.into_iter().filter(|&i| totals[i] > 0.0));
    order
}

/// What kind of work each frame is, for the flame graphs' "by category" colouring: the
/// rules' decision per frame, which the viewer applies along each stack as [`categorise`]
/// does (a frame's own category, else its caller's; an unnamed frame's or a yield's only
/// when nothing above decides), so a frame's colour is the category its self time counts
/// in.
#[derive(Clone, Debug, Serialize)]
pub struct FrameCategories {
    /// Category names: the category chart's order first (and so its colours), then the
    /// rest of the rules' and `other`, `other (kernel)`.
    pub names: Vec<String>,
    /// `(frame name, 1 for a kernel frame else 0, category)` of every frame a rule names.
    pub frames: Vec<(String, u8, usize)>,
    /// `(thread name, category)` of every thread a `thread:` rule names.
    pub threads: Vec<(String, usize)>,
    /// The category of a stack no rule decides, its leaf a user frame.
    pub other: usize,
    /// The category of a stack no rule decides, its leaf a kernel frame.
    pub other_kernel: usize,
    /// The category of `sched_yield`, which decides only when no user frame above does.
    pub yield_category: Option<usize>,
    /// The category of garbage collection, which decides on any thread (a thread's own
    /// category gives way to it).
    pub gc_category: Option<usize>,
}

/// `p`'s frames by category under `rules`, names in `order` first (the profile's
/// [`CategorySeries::names`]). `None` for off-CPU profiles, whose categories are why
/// each stack waited, not its frames.
pub fn frame_categories(
    p: &Profile,
    rules: &Rules,
    order: &[String],
) -> Result<Option<FrameCategories>, RulesError> {
    if is_offcpu(p) {
        return Ok(None);
    }
    let c = Categoriser::new(rules)?;
    let mut all = c.categories().to_vec();
    all.push("other".into());
    all.push("other (kernel)".into());
    let mut names: Vec<String> = order.iter().filter(|n| all.contains(n)).cloned().collect();
    for n in &all {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let at = |i: usize| names.iter().position(|n| *n == all[i]).unwrap_or(0);
    let frames = p
        .frames
        .iter()
        .zip(c.frames(p))
        .filter_map(|((_, f), cat)| {
            let name = String::from_utf8_lossy(p.strings.get(f.name)).into_owned();
            cat.map(|k| (name, u8::from(f.kind == FrameKind::Kernel), at(k)))
        })
        .collect();
    let threads = p
        .threads
        .iter()
        .filter_map(|(_, t)| {
            let name = String::from_utf8_lossy(p.strings.get(t.name)).into_owned();
            c.thread(&name).map(|k| (name, at(k)))
        })
        .collect();
    Ok(Some(FrameCategories {
        other: at(all.len() - 2),
        other_kernel: at(all.len() - 1),
        yield_category: c.categories().iter().position(|n| n == YIELD).map(at),
        gc_category: c.categories().iter().position(|n| n == GC).map(at),
        names,
        frames,
        threads,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, WeightUnit};

    fn category_of(rules: &Rules, stack: &[(&str, FrameKind)], thread: &str) -> String {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let frames: Vec<_> = stack
            .iter()
            .map(|(n, k)| p.frame(n.as_bytes(), *k))
            .collect();
        let th = p.thread(Some(1), Some(2), thread.as_bytes());
        p.add_sample_path(&frames, 1, 1_500, th);
        let s = categorise(&p, rules, &[1_000, 2_000], 0).unwrap().unwrap();
        assert_eq!(s.names.len(), 1);
        s.names[0].clone()
    }

    const U: FrameKind = FrameKind::User;
    const J: FrameKind = FrameKind::Jit;
    const K: FrameKind = FrameKind::Kernel;

    #[test]
    fn frame_categories_name_each_frame_a_rule_decides_in_the_chart_s_order() {
        let rules = Rules::parse(
            "gc = user:^gc$\nread = kernel:^sys_read$\ndirty = thread:^dirty\nunused = ^never$\n",
            "test",
        )
        .unwrap();
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let frames: Vec<_> = [("main", U), ("gc", U), ("sys_read", K), ("sys_read", U)]
            .iter()
            .map(|(n, k)| p.frame(n.as_bytes(), *k))
            .collect();
        p.thread(Some(1), Some(2), b"dirty_cpu_s");
        let th = p.thread(Some(1), Some(3), b"main");
        p.add_sample_path(&frames[..2], 1, 1_500, th);
        // The chart's order first (largest first), then the rest, the others last.
        let order = ["read".to_string(), "gc".to_string(), "other".to_string()];
        let c = frame_categories(&p, &rules, &order).unwrap().unwrap();
        assert_eq!(
            c.names,
            ["read", "gc", "other", "dirty", "unused", "other (kernel)"]
        );
        // Kernel rules name kernel frames only, user rules user frames only.
        assert_eq!(
            c.frames,
            [("gc".to_string(), 0, 1), ("sys_read".to_string(), 1, 0)]
        );
        assert_eq!(c.threads, [("dirty_cpu_s".to_string(), 3)]);
        assert_eq!((c.other, c.other_kernel, c.yield_category), (2, 5, None));
        // Off-CPU time goes by why it waited: no frame categories.
        let off = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        assert!(frame_categories(&off, &rules, &[]).unwrap().is_none());
    }

    #[test]
    fn builtin_sets_name_what_the_seeds_saw() {
        let r = Rules::builtin();
        // The BEAM poller in epoll: I/O polling, not the context switch inside it.
        let poller = [
            ("erts_check_io", U),
            ("erts_poll_wait", U),
            ("epoll_wait", U),
            ("entry_SYSCALL_64_after_hwframe", K),
            ("do_syscall_64", K),
            ("__x64_sys_epoll_wait", K),
            ("do_epoll_wait", K),
            ("schedule", K),
            ("__schedule", K),
            ("finish_task_switch.isra.0", K),
        ];
        assert_eq!(
            category_of(&r, &poller, "0_poller"),
            "I/O polling (poll/epoll)"
        );
        // Erlang code calling a BIF that copies memory: the BIF.
        let bif = [
            ("$rabbit_reader:recvloop/4", J),
            ("$global::call_light_bif_shared", J),
            ("setelement_3", U),
            ("__memcpy_avx_unaligned_erms", U),
        ];
        assert_eq!(category_of(&r, &bif, "1_scheduler"), "BIFs and NIFs");
        let gc = [
            ("$lists:foldl/3", J),
            ("erts_garbage_collect_nobump", U),
            ("sweep_one_area", U),
            ("memcpy", U),
        ];
        assert_eq!(category_of(&r, &gc, "1_scheduler"), "garbage collection");
        let erl = [("$proc_lib:init_p_do_apply/3", J), ("$lists:foldl/3", J)];
        assert_eq!(category_of(&r, &erl, "2_scheduler"), "Erlang code");
        let spin = [
            ("process_main", U),
            ("erts_schedule", U),
            ("ethr_event_twait", U),
        ];
        assert_eq!(
            category_of(&r, &spin, "1_scheduler"),
            "BEAM scheduler (busy-wait, spin)"
        );
        // The spin of a stripped VM: an unnamed function under erts_schedule is the
        // scheduler's; an unnamed function under nothing named is the runtime's.
        let stripped = [
            ("[unknown]", U),
            ("erts_schedule", U),
            ("beam.smp+0x73ee0", U),
        ];
        assert_eq!(
            category_of(&r, &stripped, "1_scheduler"),
            "BEAM scheduler (busy-wait, spin)"
        );
        let unnamed = [("[unknown]", U), ("beam.smp+0x1c6740", U)];
        assert_eq!(
            category_of(&r, &unnamed, "1_scheduler"),
            "BEAM runtime (other)"
        );
        let futex = [
            ("erts_schedule", U),
            ("syscall", U),
            ("__x64_sys_futex", K),
            ("futex_wait", K),
        ];
        assert_eq!(
            category_of(&r, &futex, "1_scheduler"),
            "syscall: futex (locks, sleeping)"
        );
        // A yield is its caller's: a process lock that spun (the stack a RabbitMQ under
        // load gave, between the syscall's entry frames and the libc wrapper), the
        // scheduler's own spin, and only with no caller known the system call's.
        let yield_in = |caller: &[(&'static str, FrameKind)]| -> String {
            let mut s = caller.to_vec();
            s.extend([
                ("__GI___sched_yield", U),
                ("entry_SYSCALL_64_after_hwframe", K),
                ("do_syscall_64", K),
                ("__do_sys_sched_yield", K),
                ("schedule", K),
                ("__schedule", K),
                ("finish_task_switch.isra.0", K),
            ]);
            category_of(&r, &s, "1_scheduler")
        };
        assert_eq!(
            yield_in(&[
                ("$global::process_main", U),
                ("erts_schedule", U),
                ("beam.smp+0x69830", U),
                ("erts_proc_lock_failed", U),
            ]),
            "BEAM lock contention (spin, yield)"
        );
        assert_eq!(
            yield_in(&[("erts_schedule", U), ("beam.smp+0x69830", U)]),
            "BEAM scheduler (busy-wait, spin)"
        );
        assert_eq!(yield_in(&[("main", U)]), YIELD);
        let x64 = [("sched_yield", U), ("__x64_sys_sched_yield", K)];
        assert_eq!(category_of(&r, &x64, "t"), YIELD);
        let dirty = [("erts_call_dirty_nif", U)];
        assert_eq!(
            category_of(&r, &dirty, "1_dirty_cpu_sch"),
            "BEAM dirty schedulers"
        );
        // A large heap collected on a dirty scheduler is garbage collection, as msacc
        // counts it (its `gc` column for the dirty_cpu threads).
        let dirty_gc = [
            ("erts_dirty_process_main", U),
            ("erts_execute_dirty_system_task", U),
            ("erts_garbage_collect_nobump", U),
            ("beam.smp+0x204e00", U),
        ];
        assert_eq!(
            category_of(&r, &dirty_gc, "2_dirty_cpu_sch"),
            "garbage collection"
        );
        let pf = [
            ("erts_alloc", U),
            ("asm_exc_page_fault", K),
            ("clear_page_erms", K),
        ];
        assert_eq!(category_of(&r, &pf, "1_scheduler"), "kernel page faults");
        // Go.
        let go_gc = [
            ("runtime.gcBgMarkWorker", U),
            ("runtime.gcDrain", U),
            ("runtime.scanobject", U),
        ];
        assert_eq!(category_of(&r, &go_gc, "server"), "garbage collection");
        let go_net = [("runtime.findRunnable", U), ("runtime.netpoll", U)];
        assert_eq!(
            category_of(&r, &go_net, "server"),
            "I/O polling (poll/epoll)"
        );
        let go_app = [("main.main", U), ("main.handle", U)];
        assert_eq!(category_of(&r, &go_app, "server"), "other");
        // The JVM.
        let java = [("Lcom/example/Server;::handle", J)];
        assert_eq!(category_of(&r, &java, "pool-1-thread-3"), "Java code");
        let jit = [("CompileBroker::invoke_compiler_on_method", U)];
        assert_eq!(category_of(&r, &jit, "C2 CompilerThre"), "JVM JIT compiler");
        // Nothing known, leaf in the kernel.
        let k = [("mystery", U), ("some_kernel_fn", K)];
        assert_eq!(category_of(&r, &k, "x"), "other (kernel)");
    }

    #[test]
    fn user_rules_come_first_and_errors_name_the_line() {
        let mut r = Rules::parse(
            "# mine\n\nqueue index = ^rabbit_queue_index:\nTLS = user:^ssl_\nsched = thread:^1_sch\n",
            "cats.txt",
        )
        .unwrap();
        assert_eq!(r.rules.len(), 3);
        assert_eq!(r.rules[1].target, Target::User);
        assert_eq!(r.rules[2].origin, "cats.txt:5");
        r.rules.extend(Rules::builtin().rules);
        let s = [("rabbit_queue_index:publish/6", J)];
        assert_eq!(category_of(&r, &s, "2_scheduler"), "queue index");
        assert_eq!(category_of(&r, &[("x", U)], "1_scheduler"), "sched");
        for (text, what) in [
            ("no equals sign", "expected CATEGORY = REGEX"),
            ("= x", "the category name is empty"),
            ("a = ", "the regular expression is empty"),
            ("a = (unclosed", "invalid regular expression"),
            ("a = kernel:", "the regular expression is empty"),
        ] {
            let e = Rules::parse(&format!("ok = x\n{text}\n"), "f.rules").unwrap_err();
            let m = e.to_string();
            assert!(m.starts_with("f.rules:2: "), "{m}");
            assert!(m.contains(what), "{m}");
        }
    }

    #[test]
    fn blocks_are_spread_over_the_intervals_they_cover() {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Nanoseconds));
        let lock = p.frame(b"___pthread_mutex_lock", FrameKind::User);
        let f = p.frame(b"futex_do_wait", K);
        let th = p.thread(Some(1), Some(1), b"t");
        // A 1.5 s block from 0.5 s: half a second in the first interval, one in the second.
        // Off-CPU time goes by why it waited: here a lock.
        p.add_sample_path(&[lock, f], 1_500_000_000, 500_000_000, th);
        let s = categorise(&p, &Rules::builtin(), &[0, 1_000_000_000, 2_000_000_000], 0)
            .unwrap()
            .unwrap();
        assert_eq!(s.unit, "threads");
        assert_eq!(s.names, ["lock"]);
        assert!((s.values[0][0] - 0.5).abs() < 1e-9, "{:?}", s.values);
        assert!((s.values[0][1] - 1.0).abs() < 1e-9, "{:?}", s.values);
        assert!(matches("^a", "abc"));
    }
}
