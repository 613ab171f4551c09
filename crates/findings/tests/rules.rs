//! Each rule alone, on runs built here to hold one cause, and on runs built to hold the
//! evidence that contradicts it (the rule must then be silent). The real programs and
//! their independent accounts are in `planted.rs`.
use kiln_findings::{rules, Class, Facts};
use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
use kiln_store::{Column, Headline, RunData, SchedulerStates, SeriesTable, Window};

const S: u64 = 1_000_000_000;

/// A run of `secs` seconds on a machine of `cpus` CPUs, measured from 0.
fn run(secs: u64, cpus: u32) -> RunData {
    let mut r = RunData::default();
    r.meta.name = "t".into();
    r.meta.cpus = cpus;
    r.meta.measure = Window {
        name: "measure".into(),
        start_ns: 0,
        end_ns: secs * S,
    };
    r.meta.load.unit = "req".into();
    r.meta.load.completed = "answered".into();
    r.meta.target.pids = vec![4242];
    r.meta.target.comm = "srv".into();
    r
}

/// A table with every column constant over `secs` seconds.
fn table(name: &str, secs: u64, cols: &[(&str, f64)]) -> SeriesTable {
    SeriesTable {
        name: name.into(),
        time_ns: (1..=secs).map(|i| i * S).collect(),
        columns: cols
            .iter()
            .map(|(c, v)| Column {
                name: c.to_string(),
                unit: String::new(),
                values: vec![Some(*v); secs as usize],
            })
            .collect(),
    }
}

/// The headline a run of `secs` seconds would have with these figures.
fn headline(r: &mut RunData, ops_per_s: f64, target_cpus: f64, busy_pct: f64, kiln_cpus: f64) {
    let secs = r.meta.measure.seconds();
    r.meta.headline = Headline {
        throughput: Some(ops_per_s),
        operations: Some((ops_per_s * secs) as u64),
        target_cpu_s: Some(target_cpus * secs),
        machine_busy_pct: Some(busy_pct),
        kiln_cpu_s: Some(kiln_cpus * secs),
        ..Default::default()
    };
}

/// One thread group's columns.
fn group(
    g: &str,
    threads: f64,
    cpu_pct: f64,
    runnable_pct: f64,
    busiest_pct: f64,
) -> Vec<(String, f64)> {
    vec![
        (format!("cpu user:{g}"), cpu_pct),
        (format!("cpu system:{g}"), 0.0),
        (format!("runnable:{g}"), runnable_pct),
        (format!("threads:{g}"), threads),
        (format!("busiest thread:{g}"), busiest_pct),
    ]
}

fn target(secs: u64, runnable_pct: f64, groups: &[Vec<(String, f64)>]) -> SeriesTable {
    let mut cols: Vec<(String, f64)> = vec![("runnable".into(), runnable_pct)];
    for g in groups {
        cols.extend(g.iter().cloned());
    }
    let refs: Vec<(&str, f64)> = cols.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    table("target", secs, &refs)
}

fn classes(r: &RunData) -> Vec<Class> {
    rules::run_all(&Facts::of(r, None))
        .findings
        .iter()
        .map(|f| f.class)
        .collect()
}

/// A CPU profile: `(stack root→leaf, thread name, samples)`.
fn cpu_profile(stacks: &[(&[&str], &str, u64)]) -> Profile {
    let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    for (frames, thread, n) in stacks {
        let ids: Vec<_> = frames
            .iter()
            .map(|f| {
                let kind = if f.starts_with("k:") {
                    FrameKind::Kernel
                } else {
                    FrameKind::User
                };
                p.frame(f.trim_start_matches("k:").as_bytes(), kind)
            })
            .collect();
        let th = p.thread(Some(4242), Some(1), thread.as_bytes());
        for i in 0..*n {
            p.add_sample_path(&ids, 1, i * 1_000_000, th);
        }
    }
    p
}

#[test]
fn one_saturated_thread_is_named_with_its_function() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 1.0, 70.0, 0.3);
    r.series = vec![target(10, 5.0, &[group("srv", 1.0, 97.0, 5.0, 97.0)])];
    r.profiles = vec![cpu_profile(&[
        (&["main", "serve", "parse_request"], "srv", 900),
        (&["main", "serve"], "srv", 100),
    ])];
    let found = rules::cpu::one_thread(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].claim.contains("parse_request"),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r)[0], Class::OneThreadSaturated);
    // The server used both CPUs: CPU-bound, not one thread.
    let mut r2 = r.clone();
    headline(&mut r2, 1000.0, 1.95, 99.0, 0.0);
    r2.series = vec![target(
        10,
        5.0,
        &[
            group("srv", 1.0, 97.0, 5.0, 97.0),
            group("worker", 4.0, 98.0, 5.0, 30.0),
        ],
    )];
    assert!(rules::cpu::one_thread(&Facts::of(&r2, None)).is_empty());
    assert_eq!(classes(&r2)[0], Class::CpuBound);
}

#[test]
fn starvation_names_who_took_the_cpu_and_needs_run_queue_time() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.4, 100.0, 0.1);
    r.meta.headline.operations = Some(10_000);
    r.series = vec![
        target(10, 60.0, &[group("srv", 8.0, 40.0, 60.0, 10.0)]),
        table("others", 10, &[("cpu:hog (777)", 150.0)]),
    ];
    let found = rules::cpu::starvation(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].claim.contains("hog (777) 1.50 CPUs"),
        "{}",
        found[0].claim
    );
    // Runnable a few percent of their ready time: not starved, whatever the machine.
    let mut r2 = r.clone();
    r2.series = vec![target(10, 2.0, &[group("srv", 8.0, 40.0, 2.0, 10.0)])];
    assert!(rules::cpu::starvation(&Facts::of(&r2, None)).is_empty());
    // A third of their ready time waiting on a machine 16% busy (a CPU idle all the
    // while): the scheduler's wake-up wait, not others holding the CPUs.
    let mut r3 = r.clone();
    headline(&mut r3, 1000.0, 0.14, 16.0, 0.2);
    r3.series = vec![
        target(10, 8.0, &[group("srv", 8.0, 14.0, 8.0, 3.0)]),
        table("others", 10, &[("cpu:kworker (9)", 17.0)]),
    ];
    assert!(
        rules::cpu::starvation(&Facts::of(&r3, None)).is_empty(),
        "{:#?}",
        rules::cpu::starvation(&Facts::of(&r3, None))
    );
}

/// A server whose threads wait for CPUs held by its own short-lived workers (forked for
/// one query and gone within the second: no count of the target's holds them) is not
/// starved by others: what the others were seen to use bounds their share.
#[test]
fn waiting_for_cpus_the_server_itself_held_is_not_starvation() {
    let mut r = run(10, 2);
    headline(&mut r, 100.0, 0.7, 100.0, 0.1);
    r.meta.headline.operations = Some(1_000);
    r.series = vec![
        target(10, 400.0, &[group("srv", 8.0, 70.0, 400.0, 12.0)]),
        table("others", 10, &[("cpu:perf (777)", 8.0)]),
    ];
    let found = rules::cpu::starvation(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    // Kiln 0.1 and perf 0.08 of 2 busy CPUs: under a tenth each, a fifth of its weight.
    let weak = found[0].score;
    r.series[1] = table("others", 10, &[("cpu:hog (777)", 110.0)]);
    let strong = rules::cpu::starvation(&Facts::of(&r, None))[0].score;
    assert!(weak < 0.25 * strong, "{weak} against {strong}");
}

/// A server of eight threads ready for more CPUs than the machine has, beside a neighbour
/// holding a third of them: its threads wait for each other more than for the neighbour.
/// Only the neighbour's share of the wait is starvation, and the server's own CPU-bound
/// work comes first.
#[test]
fn a_wait_for_cpus_is_the_others_only_in_their_share_of_them() {
    let mut r = run(10, 2);
    headline(&mut r, 100.0, 1.06, 100.0, 0.06);
    r.meta.headline.operations = Some(1_000);
    r.meta.load.concurrency = Some(8.0);
    r.series = vec![
        target(10, 390.0, &[group("srv", 8.0, 106.0, 390.0, 14.0)]),
        table(
            "others",
            10,
            &[("cpu:hog (777)", 56.0), ("cpu:perf (778)", 9.0)],
        ),
    ];
    let found = rules::cpu::starvation(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    let share = found[0].explains.as_ref().unwrap().pct;
    // 3.9 waiting of 8 connections' time is 49%; the others held 0.71 of 2 busy CPUs.
    assert!(
        (share - 48.75 * 0.355).abs() < 1.0,
        "{share}: {}",
        found[0].claim
    );
    assert!(
        found[0].claim.contains("others held 36% of the busy CPUs"),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r)[0], Class::CpuBound, "{:#?}", classes(&r));
    // The same wait with the neighbour holding nine tenths of the CPUs: nearly all of it
    // is the neighbour's, and starvation comes first.
    let mut r2 = r.clone();
    headline(&mut r2, 100.0, 0.14, 100.0, 0.06);
    r2.meta.headline.operations = Some(1_000);
    r2.series = vec![
        target(10, 390.0, &[group("srv", 8.0, 14.0, 390.0, 2.0)]),
        table("others", 10, &[("cpu:hog (777)", 180.0)]),
    ];
    let found = rules::cpu::starvation(&Facts::of(&r2, None));
    assert!(found[0].explains.as_ref().unwrap().pct > 40.0, "{found:#?}");
    assert!(
        !found[0].claim.contains("others held"),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r2)[0], Class::CpuStarvation, "{:#?}", classes(&r2));
}

/// "Limited by the client" only while the server's threads waited for work.
#[test]
fn the_client_is_the_limit_only_when_the_server_waited() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.2, 98.0, 1.6);
    r.series = vec![target(10, 1.0, &[group("srv", 4.0, 20.0, 1.0, 8.0)])];
    assert_eq!(rules::load::client(&Facts::of(&r, None)).len(), 1);
    // Its requests slow (11 ms, the server's threads 0.8 ms on each): the time outside the
    // server is the client's, and the client comes first.
    r.meta.load.concurrency = Some(16.0);
    let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for _ in 0..1000 {
        h.record(11_000).unwrap();
    }
    r.histograms = vec![kiln_store::StoredHistogram {
        name: "latency".into(),
        window: "measure".into(),
        unit: "us".into(),
        data: kiln_store::hdr::encode_histogram(&h).unwrap(),
    }];
    assert!(rules::waiting::outside(&Facts::of(&r, None)).is_empty());
    assert_eq!(classes(&r)[0], Class::ClientLimited, "{:#?}", classes(&r));
    // The server's thread ran a whole CPU: the server was the limit.
    let mut r2 = r.clone();
    headline(&mut r2, 1000.0, 1.0, 100.0, 1.0);
    r2.series = vec![target(10, 1.0, &[group("srv", 1.0, 98.0, 1.0, 98.0)])];
    assert!(rules::load::client(&Facts::of(&r2, None)).is_empty());
    assert!(!classes(&r2).contains(&Class::ClientLimited));
}

#[test]
fn a_growing_queue_is_explained_by_littles_law() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.3, 50.0, 0.3);
    r.meta.headline.send_rate = Some(3000.0);
    r.meta.load.unit = "msg".into();
    r.meta.load.argv = ["-x", "1", "-y", "2", "-u", "orders"]
        .map(String::from)
        .to_vec();
    let mut load = table("load", 10, &[("sent", 3000.0), ("answered", 1000.0)]);
    load.columns.push(Column {
        name: kiln_store::QUEUE_DEPTH.into(),
        unit: "msg".into(),
        values: (0..10).map(|i| Some(80.0 + 2000.0 * i as f64)).collect(),
    });
    r.series = vec![
        load,
        target(10, 1.0, &[group("beam", 2.0, 30.0, 1.0, 20.0)]),
    ];
    let found = rules::queues::queue(&Facts::of(&r, None));
    assert_eq!(found[0].class, Class::QueueGrowing);
    assert!(
        found[0]
            .claim
            .contains("queue 'orders' grew from 80 to 18,080"),
        "{}",
        found[0].claim
    );
    assert!(
        found[0].claim.contains("Little's law"),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r)[0], Class::QueueGrowing);
    // The messages' time is in the broker's queue, not outside the server.
    assert!(
        !classes(&r).contains(&Class::NetworkWait),
        "{:?}",
        classes(&r)
    );
}

/// A stream keeps what it was sent: its count (deep, not shrinking while consumers keep
/// pace) is what it retains, not a backlog anyone waits in.
#[test]
fn a_streams_retained_messages_are_no_queue() {
    let mut r = run(10, 2);
    headline(&mut r, 40000.0, 1.5, 50.0, 1.5);
    r.meta.headline.send_rate = Some(40000.0);
    r.meta.load.unit = "msg".into();
    r.meta.load.argv = [
        "-x",
        "1",
        "-y",
        "0",
        "--queue",
        "events",
        "--queue-args",
        "x-queue-type=stream",
    ]
    .map(String::from)
    .to_vec();
    let mut load = table("load", 10, &[("sent", 40000.0), ("answered", 40000.0)]);
    load.columns.push(Column {
        name: kiln_store::QUEUE_DEPTH.into(),
        unit: "msg".into(),
        values: (0..10).map(|_| Some(244_379.0)).collect(),
    });
    r.series = vec![
        load,
        target(10, 1.5, &[group("beam", 2.0, 75.0, 1.0, 70.0)]),
    ];
    assert!(
        rules::queues::queue(&Facts::of(&r, None)).is_empty(),
        "{:?}",
        rules::queues::queue(&Facts::of(&r, None))
    );
    // The same count in a classic queue is a backlog that did not drain, said so.
    r.meta.load.argv.truncate(6);
    let found = rules::queues::queue(&Facts::of(&r, None));
    assert_eq!(found[0].class, Class::QueueGrowing);
    assert!(
        found[0]
            .claim
            .contains("queue 'events' held 244,379 msgs and did not drain"),
        "{}",
        found[0].claim
    );
}

#[test]
fn an_accept_backlog_is_named() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.9, 90.0, 0.5);
    r.meta.load.concurrency = Some(64.0);
    let mut t = target(10, 2.0, &[group("srv", 1.0, 90.0, 2.0, 90.0)]);
    t.columns.push(Column {
        name: "accept queue".into(),
        unit: "count".into(),
        values: vec![Some(31.0); 10],
    });
    r.series = vec![t];
    let found = rules::queues::accept(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].claim.contains("31.0 on average") && found[0].claim.contains("of the 64 the load"),
        "{}",
        found[0].claim
    );
    // More queued than the load held open: the ones it gave up on, said so.
    let mut fewer = r.clone();
    fewer.meta.load.concurrency = Some(16.0);
    let found = rules::queues::accept(&Facts::of(&fewer, None));
    assert!(
        found[0]
            .claim
            .contains("more than the 16 the load kept open")
            && !found[0].claim.contains("of the 16"),
        "{}",
        found[0].claim
    );
    // Its one thread is never idle: each finding names the other's figure.
    let mut busy = group("srv", 1.0, 90.0, 9.0, 90.0);
    busy.push(("busiest thread busy:srv".into(), 99.0));
    let mut t = target(10, 9.0, &[busy]);
    t.columns.push(Column {
        name: "accept queue".into(),
        unit: "count".into(),
        values: vec![Some(31.0); 10],
    });
    r.series = vec![t];
    let f = Facts::of(&r, None);
    let found = rules::queues::accept(&f);
    assert!(
        found[0].claim.contains("busiest 'srv' thread busy 99%"),
        "{}",
        found[0].claim
    );
    let one = rules::cpu::one_thread(&f);
    assert!(
        one[0]
            .claim
            .contains("accept queue for it (31.0 on average"),
        "{one:#?}"
    );
    // A queue of a few of many clients (a step's new connections, waiting a moment to be
    // accepted) weighs what it explains: under a wait that holds half their time.
    let mut t = target(10, 2.0, &[group("srv", 1.0, 90.0, 2.0, 90.0)]);
    t.columns.push(Column {
        name: "accept queue".into(),
        unit: "count".into(),
        values: vec![Some(1.6); 10],
    });
    r.series = vec![t];
    r.meta.load.concurrency = Some(16.0);
    let few = rules::queues::accept(&Facts::of(&r, None));
    assert!(few[0].score < 0.5 * 0.95, "{few:#?}");
    assert!((few[0].explains.as_ref().unwrap().pct - 10.0).abs() < 1e-9);
    // Empty: nothing said.
    r.series = vec![target(10, 2.0, &[group("srv", 1.0, 90.0, 2.0, 90.0)])];
    assert!(rules::queues::accept(&Facts::of(&r, None)).is_empty());
}

#[test]
fn garbage_collection_outranks_the_generic_cpu_bound() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 1.9, 99.0, 0.05);
    r.series = vec![target(10, 2.0, &[group("srv", 8.0, 190.0, 2.0, 60.0)])];
    r.profiles = vec![cpu_profile(&[
        (
            &[
                "runtime.goexit",
                "runtime.gcBgMarkWorker",
                "runtime.scanobject",
            ],
            "srv",
            460,
        ),
        (&["runtime.goexit", "main.handle", "main.work"], "srv", 540),
    ])];
    let c = classes(&r);
    assert_eq!(c[0], Class::GarbageCollection, "{c:?}");
    assert!(c.contains(&Class::CpuBound));
    // The same share of a server that barely ran (0.03 CPU: collecting 1.4% of a core).
    headline(&mut r, 10.0, 0.03, 5.0, 0.05);
    r.series = vec![target(10, 0.1, &[group("srv", 8.0, 3.0, 0.1, 1.0)])];
    assert!(rules::runtime::gc(&Facts::of(&r, None)).is_empty());
}

#[test]
fn page_fault_churn_is_named_with_who_faulted() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 1.0, 95.0, 0.3);
    let mut t = target(10, 2.0, &[group("srv", 8.0, 100.0, 2.0, 20.0)]);
    t.columns.push(Column {
        name: "minor faults".into(),
        unit: "1/s".into(),
        values: vec![Some(256_000.0); 10],
    });
    r.series = vec![t];
    r.profiles = vec![cpu_profile(&[
        (
            &[
                "main",
                "serve",
                "k:asm_exc_page_fault",
                "k:handle_mm_fault",
                "k:clear_page_erms",
            ],
            "srv",
            350,
        ),
        (
            &["main", "serve", "k:__x64_sys_munmap", "k:zap_pte_range"],
            "srv",
            100,
        ),
        (&["main", "serve", "work"], "srv", 550),
    ])];
    let found = rules::runtime::churn(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].claim.contains("256 new pages per req"),
        "{}",
        found[0].claim
    );
    assert!(
        found[0].evidence.iter().any(|e| e.value.contains("serve")),
        "{:?}",
        found[0].evidence
    );
}

/// No flag advice the command line already has: a VM started with +sbwt none does not
/// spin in its busy-wait, whatever its `other` share.
#[test]
fn beam_busy_wait_only_when_the_flags_allow_it() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.8, 60.0, 0.3);
    r.meta.target.comm = "beam.smp".into();
    r.meta.headline.beam = Some(SchedulerStates {
        emulator_pct: 50.0,
        other_pct: 35.0,
        ..Default::default()
    });
    r.series = vec![target(10, 2.0, &[group("scheduler", 2.0, 80.0, 2.0, 45.0)])];
    let found = rules::runtime::busy_wait(&Facts::of(&r, None));
    assert_eq!(found.len(), 1);
    assert!(found[0].claim.contains("+sbwt none"));
    r.meta.target.cmdline = "/usr/lib/erlang/erts/bin/beam.smp -W w +sbwt none +sbwtdcpu none +sbwtdio none -- -root /usr/lib/erlang"
        .split(' ')
        .map(String::from)
        .collect();
    assert!(rules::runtime::busy_wait(&Facts::of(&r, None)).is_empty());
    // As erlexec passes them on to beam.smp (what /proc/PID/cmdline shows of RabbitMQ).
    r.meta.target.cmdline = "/usr/lib/erlang/erts-13.1.5/bin/beam.smp -W w -MBas ageffcbf -stbt db -zdbbl 128000 -sbwt none -sbwtdcpu none -sbwtdio none -JPperf map -- -root /usr/lib/erlang"
        .split(' ')
        .map(String::from)
        .collect();
    assert!(rules::runtime::busy_wait(&Facts::of(&r, None)).is_empty());
}

/// A pool starved of CPU: each thread "never idle" (waiting for a CPU), none serialising
/// the work. Starvation, never one thread.
#[test]
fn a_starved_pool_is_not_one_saturated_thread() {
    let mut r = run(10, 2);
    headline(&mut r, 500.0, 0.2, 100.0, 0.1);
    let mut g = group("server", 16.0, 20.0, 1500.0, 2.0);
    g.push(("busiest thread busy:server".into(), 100.0));
    r.series = vec![target(10, 1500.0, &[g])];
    let f = Facts::of(&r, None);
    assert!(rules::cpu::one_thread(&f).is_empty());
    // One thread never idle while its 15 siblings wait for work: one thread.
    let mut g = group("server", 16.0, 20.0, 30.0, 2.0);
    g.push(("busiest thread busy:server".into(), 100.0));
    r.series = vec![target(10, 30.0, &[g])];
    assert_eq!(rules::cpu::one_thread(&Facts::of(&r, None)).len(), 1);
}

/// One thread busy all the time on a machine others keep busy (three spinning shells):
/// on a CPU 60%, waiting for one 40%, while the server's other threads, woken for each
/// request, wait for a CPU too. Their waits are the others' doing, not work of the
/// server's: the thread is the limit, and what it explains leaves the others' part out.
#[test]
fn one_thread_saturated_beside_others_that_hold_the_cpus() {
    let mut r = run(10, 2);
    headline(&mut r, 1186.0, 0.93, 100.0, 0.19);
    let mut pricer = group("pricer", 1.0, 60.0, 40.0, 60.0);
    pricer.push(("busiest thread busy:pricer".into(), 99.0));
    r.series = vec![
        target(
            10,
            122.0,
            &[
                pricer,
                group("pool", 16.0, 14.0, 44.0, 1.0),
                group("compiler", 1.0, 12.0, 22.0, 12.0),
                group("dispatcher", 1.0, 6.0, 8.0, 6.0),
            ],
        ),
        table("others", 10, &[("cpu:sh (777)", 83.0)]),
    ];
    r.profiles = vec![cpu_profile(&[
        (&["run", "price"], "pricer", 600),
        (&["run", "handle"], "pool", 140),
    ])];
    let found = rules::cpu::one_thread(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].claim.contains("busy 99%") && found[0].claim.contains("on a CPU 60%"),
        "{}",
        found[0].claim
    );
    // Its 40% waiting for a CPU, 51% of it the others' (their share of the busy CPUs).
    let e = found[0].explains.as_ref().unwrap();
    assert!((e.pct - 79.1).abs() < 1.0, "{e:?}");
    assert!(e.of.contains("CPUs others held"), "{e:?}");
    // The same waits on a machine only the server keeps busy (1.8 of its 2 CPUs) are its
    // own threads' work: CPU-bound, no one thread the limit.
    r.series.truncate(1);
    headline(&mut r, 1186.0, 1.8, 100.0, 0.19);
    assert!(rules::cpu::one_thread(&Facts::of(&r, None)).is_empty());
}

/// Two threads each nearly a CPU (a cluster's two workers, each an event loop, on a
/// machine others keep busy): the work is spread, not serialised on one thread.
#[test]
fn two_hot_threads_are_not_one_saturated_thread() {
    let mut r = run(10, 2);
    headline(&mut r, 700.0, 1.18, 99.0, 0.2);
    let mut main = group("main", 3.0, 120.0, 60.0, 70.0);
    main.push(("busiest thread busy:main".into(), 100.0));
    r.series = vec![
        target(10, 60.0, &[main]),
        table("others", 10, &[("cpu:cc1 (777)", 56.0)]),
    ];
    let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    let frames: Vec<_> = ["main", "hashPassword"]
        .iter()
        .map(|f| p.frame(f.as_bytes(), FrameKind::User))
        .collect();
    for (pid, n) in [(4242u32, 700u64), (4243, 500)] {
        let th = p.thread(Some(pid), Some(pid), b"main");
        for i in 0..n {
            p.add_sample_path(&frames, 1, i * 1_000_000, th);
        }
    }
    r.profiles = vec![p];
    assert!(rules::cpu::one_thread(&Facts::of(&r, None)).is_empty());
}

/// A broker whose own threads ran 78% of the CPUs and were ready for the rest (queued
/// behind each other, the machine 85% busy, no one else on it) is CPU-bound; the same
/// share with its threads seldom ready is not.
#[test]
fn a_server_whose_own_threads_queue_for_the_rest_of_the_cpus_is_cpu_bound() {
    let mut r = run(10, 2);
    headline(&mut r, 80000.0, 1.56, 85.0, 0.06);
    r.series = vec![target(
        10,
        80.0,
        &[group("scheduler", 2.0, 156.0, 80.0, 70.0)],
    )];
    r.profiles = vec![cpu_profile(&[(
        &["process_main", "route"],
        "scheduler",
        1000,
    )])];
    assert_eq!(rules::cpu::cpu_bound(&Facts::of(&r, None)).len(), 1);
    r.series = vec![target(
        10,
        10.0,
        &[group("scheduler", 2.0, 156.0, 10.0, 70.0)],
    )];
    assert!(rules::cpu::cpu_bound(&Facts::of(&r, None)).is_empty());
}

/// Spinning is where a stack runs (a spin lock, sched_yield under the program), never a
/// caller's name: Node's main thread runs under node::SpinEventLoop whatever it does, and
/// `_raw_spin_unlock_irqrestore` is where cpu-clock samples land when interrupts come back.
#[test]
fn busy_wait_is_the_running_frame_not_a_caller() {
    let mut r = run(10, 2);
    headline(&mut r, 300.0, 0.4, 60.0, 0.1);
    r.profiles = vec![cpu_profile(&[
        (
            &[
                "node",
                "node::SpinEventLoop",
                "uv_run",
                "pbkdf2",
                "sha256_block",
            ],
            "node",
            900,
        ),
        (
            &[
                "node",
                "node::SpinEventLoop",
                "write",
                "k:_raw_spin_unlock_irqrestore",
            ],
            "node",
            100,
        ),
    ])];
    let found = rules::runtime::busy_wait(&Facts::of(&r, None));
    assert!(found.is_empty(), "{found:#?}");
    // A spin lock where the threads run: busy-wait, named under its caller.
    r.profiles = vec![cpu_profile(&[
        (
            &["main", "worker", "take_slot", "pthread_spin_lock"],
            "srv",
            600,
        ),
        (
            &[
                "main",
                "worker",
                "k:__x64_sys_write",
                "k:native_queued_spin_lock_slowpath",
            ],
            "srv",
            100,
        ),
        (&["main", "worker", "compute"], "srv", 300),
    ])];
    let found = rules::runtime::busy_wait(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].claim.starts_with("70%"), "{}", found[0].claim);
    assert!(found[0].claim.contains("take_slot"), "{}", found[0].claim);
}

/// A lock from the off-CPU profile, named at the program's frame, weighed against the
/// requests' time.
#[test]
fn a_lock_is_named_at_the_programs_frame() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.5, 60.0, 0.3);
    r.meta.load.concurrency = Some(16.0);
    r.series = vec![target(10, 2.0, &[group("srv", 16.0, 50.0, 2.0, 10.0)])];
    let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
    let (root, read_block, lock, futex) = (
        p.frame(b"srv", FrameKind::Root),
        p.frame(b"read_block", FrameKind::User),
        p.frame(b"pthread_mutex_lock", FrameKind::User),
        p.frame(b"futex_wait", FrameKind::Kernel),
    );
    let th = p.thread(Some(4242), Some(2), b"srv");
    // 120 s of the 160 s the 16 connections spent: 75%.
    p.add_sample_path(&[root, read_block, lock, futex], 120_000_000, 0, th);
    r.profiles = vec![p];
    let found = rules::waiting::blocked(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].class, Class::LockContention);
    assert!(
        found[0]
            .claim
            .contains("pthread_mutex_lock under read_block"),
        "{}",
        found[0].claim
    );
    assert!((found[0].explains.as_ref().unwrap().pct - 75.0).abs() < 1.0);
    assert_eq!(classes(&r)[0], Class::LockContention);
}

/// A JVM whose off-CPU profile named no lock (its pool's threads runnable on a saturated
/// machine, or no off-CPU profile at all), while its own thread dumps caught most of the
/// pool BLOCKED on one monitor: the dumps alone name it, with their counts; caught in a
/// single dump of four, or a few threads of the pool, it is not said.
#[test]
fn a_java_monitor_is_named_from_the_jvms_thread_dumps() {
    use kiln_store::{Attachment, JvmDump, JvmDumps, MonitorWait, JVM_DUMPS_ATTACHMENT};
    let jvm = |blocked_per_dump: &[usize]| {
        let mut r = run(10, 2);
        headline(&mut r, 700.0, 0.9, 95.0, 0.1);
        r.meta.load.concurrency = Some(16.0);
        r.meta.target.comm = "java".into();
        r.series = vec![target(
            10,
            150.0,
            &[group("pool-N-thread", 16.0, 80.0, 140.0, 6.0)],
        )];
        let wait = |i: usize| MonitorWait {
            thread: format!("pool-1-thread-{i}"),
            group: "pool-N-thread-N".into(),
            method: "Ledger.post".into(),
            address: "0x1".into(),
            class: "Ledger".into(),
            holder: Some("pool-1-thread-16".into()),
            holder_method: Some("Ledger.post".into()),
            parked: false,
        };
        let dumps = JvmDumps {
            pid: 4242,
            asked: blocked_per_dump.len() as u32,
            dumps: blocked_per_dump
                .iter()
                .enumerate()
                .map(|(k, &n)| JvmDump {
                    at_ns: (2 + 2 * k as u64) * S,
                    groups: vec![("pool-N-thread-N".into(), 16), ("main".into(), 1)],
                    blocked: (0..n).map(wait).collect(),
                    ..JvmDump::default()
                })
                .collect(),
            failures: Vec::new(),
        };
        r.attachments = vec![Attachment {
            name: JVM_DUMPS_ATTACHMENT.into(),
            data: serde_json::to_vec(&dumps).unwrap(),
        }];
        r
    };
    let r = jvm(&[12, 9, 10, 8]);
    let found = rules::waiting::monitors(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].class, Class::LockContention);
    assert!(
        found[0].claim.contains(
            "waited to enter the monitor of a Ledger in Ledger.post (synchronized, held in \
             Ledger.post): the JVM's thread dumps found 61% of the pool-N-thread-N threads \
             serving them BLOCKED on it (39 of 64 dumped, in 4 of 4 dumps)"
        ),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r).first(), Some(&Class::LockContention));
    // One dump of four, or three of the sixteen threads: not said.
    for quiet in [&[12, 0, 0, 0][..], &[1, 0, 1, 1][..]] {
        let found = rules::waiting::monitors(&Facts::of(&jvm(quiet), None));
        assert!(found.is_empty(), "{quiet:?}: {found:#?}");
    }
    // Not a JVM: the attachment is not read.
    let mut r = jvm(&[12, 9, 10, 8]);
    r.meta.target.comm = "srv".into();
    assert!(rules::waiting::monitors(&Facts::of(&r, None)).is_empty());
}

/// One Erlang process (a gen_server every request calls) on a machine busy with other
/// work: its function ran on one scheduler thread at a time, 0.45 of a CPU, and waited
/// for a CPU in the middle of it 0.45 more (the runnable profile): serialised, the time
/// waiting for a CPU counted with it. Without the runnable profile, 0.45 of a CPU is not
/// enough to say it.
#[test]
fn serialised_work_counts_its_wait_for_a_cpu() {
    let mut r = run(10, 2);
    headline(&mut r, 800.0, 0.6, 100.0, 0.05);
    r.meta.load.concurrency = Some(16.0);
    r.meta.target.comm = "beam.smp".into();
    r.series = vec![target(
        10,
        60.0,
        &[group("scheduler", 2.0, 60.0, 60.0, 40.0)],
    )];
    // 99 Hz: 990 periods in 10 s, the work in 450 of them, each on one of the two
    // schedulers in turn; the idle loop in others, on both at once.
    let period = 1_000_000_000 / 99;
    let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    cpu.event.sample_period_ns = Some(period);
    // The callee's frame made first: of two functions of equal weight, the caller is
    // named, whatever their ids.
    let (root, spin, work, idle) = (
        cpu.frame(b"beam.smp", FrameKind::Root),
        cpu.frame(b"$ledger:spin/2", FrameKind::User),
        cpu.frame(b"$ledger:handle_call/3", FrameKind::User),
        cpu.frame(b"erts_schedule", FrameKind::User),
    );
    let th = [
        cpu.thread(Some(4242), Some(11), b"1_scheduler"),
        cpu.thread(Some(4242), Some(12), b"2_scheduler"),
    ];
    for i in 0..990u64 {
        let t = i * period + period / 2;
        if i % 11 < 5 {
            cpu.add_sample_path(&[root, work, spin], 1, t, th[(i % 2) as usize]);
        } else if i % 11 == 5 {
            cpu.add_sample_path(&[root, idle], 1, t, th[0]);
        }
    }
    let mut runnable = Profile::new(EventInfo::new("runnable", WeightUnit::Microseconds));
    let (rr, rw, rs) = (
        runnable.frame(b"beam.smp", FrameKind::Root),
        runnable.frame(b"$ledger:handle_call/3", FrameKind::User),
        runnable.frame(b"$ledger:spin/2", FrameKind::User),
    );
    let rth = runnable.thread(Some(4242), Some(11), b"1_scheduler");
    runnable.add_sample_path(&[rr, rw, rs], 4_500_000, 0, rth);
    r.profiles = vec![cpu.clone(), runnable];
    let found = rules::cpu::serialised(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].claim.contains(
            "the work under $ledger:handle_call/3 ran on one thread at a time (45% of a CPU, \
             76% of the server's, and 45% of the time waiting for one in it"
        ) && found[0].claim.contains("serialised on one Erlang process"),
        "{}",
        found[0].claim
    );
    assert!((found[0].explains.as_ref().unwrap().pct - 90.0).abs() < 2.0);
    // Each second's busiest scheduler at 92% of a CPU, the work passed between the two
    // over the window (neither ran a quarter of it): not one thread's, still serialised.
    let mut hopping = r.clone();
    hopping.series = vec![target(
        10,
        60.0,
        &[group("scheduler", 2.0, 60.0, 60.0, 92.0)],
    )];
    assert!(rules::cpu::one_thread(&Facts::of(&hopping, None)).is_empty());
    let found = rules::cpu::serialised(&Facts::of(&hopping, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    // Without the runnable profile: 0.45 of a CPU, though 76% of the server's, is not
    // enough to say it (half a CPU at least).
    r.profiles = vec![cpu];
    assert!(rules::cpu::serialised(&Facts::of(&r, None)).is_empty());
}

/// The server idle while each request took 40 ms: the time is outside it, and 40 ms is
/// the delayed-ACK timer.
#[test]
fn an_idle_server_with_slow_requests_points_outside() {
    let mut r = run(10, 2);
    headline(&mut r, 400.0, 0.02, 30.0, 0.1);
    r.meta.load.concurrency = Some(16.0);
    r.series = vec![target(10, 0.1, &[group("srv", 16.0, 2.0, 0.1, 1.0)])];
    let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for _ in 0..1000 {
        h.record(40_100).unwrap();
    }
    let data = kiln_store::hdr::encode_histogram(&h).unwrap();
    r.histograms = vec![kiln_store::StoredHistogram {
        name: "latency".into(),
        window: "measure".into(),
        unit: "us".into(),
        data,
    }];
    let found = rules::waiting::outside(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].claim.contains("delayed-ACK"), "{}", found[0].claim);
    assert_eq!(classes(&r)[0], Class::NetworkWait);
    // A busy server (its one thread at a whole CPU) is not "outside".
    r.series = vec![target(10, 0.1, &[group("srv", 1.0, 98.0, 0.1, 98.0)])];
    assert!(rules::waiting::outside(&Facts::of(&r, None)).is_empty());
}

/// A load command's own latency (wrk's summary, `kiln run … exec --`) is the operations'
/// time where kiln's load measured none: the idle server's slow requests point outside as
/// they do under kiln's own load.
#[test]
fn a_load_commands_latency_weighs_the_findings() {
    let mut r = run(10, 2);
    headline(&mut r, 360.0, 0.02, 30.0, 0.1);
    r.meta.load.unit = "req".into();
    r.meta.load.completed = String::new();
    r.series = vec![target(10, 0.1, &[group("srv", 16.0, 2.0, 0.1, 1.0)])];
    let found = rules::waiting::outside(&Facts::of(&r, None));
    assert!(found.is_empty(), "no latency, no claim: {found:#?}");
    r.meta.load.report = serde_json::json!({"parsed": {
        "tool": "wrk", "latency": "request", "requests_per_s": 360.0,
        "latency_us": [[50.0, 44000.0], [99.0, 48000.0]],
        "mean_latency_us": 44100.0, "max_latency_us": 52000.0
    }});
    let found = rules::waiting::outside(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].claim.contains("delayed-ACK"), "{}", found[0].claim);
    assert!(
        found[0].claim.contains("44.1 ms on average"),
        "{}",
        found[0].claim
    );
}

/// A concurrency sweep is explained at the step where throughput stopped following the
/// connections, by the findings of that step.
#[test]
fn a_sweep_is_explained_at_the_step_where_it_broke() {
    let mut r = run(9, 2);
    r.meta.windows = [(1.0, 0, 3), (2.0, 3, 6), (16.0, 6, 9)]
        .iter()
        .map(|&(c, a, b)| Window {
            name: format!("connections={c}"),
            start_ns: a * S,
            end_ns: b * S,
        })
        .collect();
    let mut load = table("load", 9, &[]);
    load.columns.push(Column {
        name: "answered".into(),
        unit: "req/s".into(),
        values: [
            1000.0, 1000.0, 1000.0, 1900.0, 1900.0, 1900.0, 2000.0, 2000.0, 2000.0,
        ]
        .iter()
        .map(|v| Some(*v))
        .collect(),
    });
    r.series = vec![load, target(9, 2.0, &[group("srv", 16.0, 50.0, 2.0, 10.0)])];
    let found = rules::sweep::knee(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .claim
            .starts_with("at connections=16 the outcome broke"),
        "{}",
        found[0].claim
    );
    assert!(found[0].claim.contains("only queued"), "{}", found[0].claim);
}

/// A sweep's steps as `r`'s windows, `(value, from s, to s, latency µs)` each, with `n`
/// latencies per step stored for the step and for the whole measurement.
fn sweep_steps(r: &mut RunData, param: &str, steps: &[(f64, u64, u64, u64)], n: usize) {
    let stored = |window: String, values: &[u64]| {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for &us in values {
            for _ in 0..n {
                h.record(us).unwrap();
            }
        }
        kiln_store::StoredHistogram {
            name: "latency".into(),
            window,
            unit: "us".into(),
            data: kiln_store::hdr::encode_histogram(&h).unwrap(),
        }
    };
    r.meta.windows = steps
        .iter()
        .map(|&(v, a, b, _)| Window {
            name: format!("{param}={v}"),
            start_ns: a * S,
            end_ns: b * S,
        })
        .collect();
    r.histograms = steps
        .iter()
        .map(|&(v, _, _, us)| stored(format!("{param}={v}"), &[us]))
        .collect();
    let all: Vec<u64> = steps.iter().map(|s| s.3).collect();
    r.histograms.push(stored("measure".into(), &all));
}

/// A rate sweep that broke where the rate was not held: the step's latency in flight by
/// Little's law, and the broker's queue holding few of them (the rest waited before it).
#[test]
fn a_rate_sweeps_wall_counts_what_was_in_flight() {
    let mut r = run(9, 2);
    r.meta.load.unit = "msg".into();
    r.meta.load.completed = "received".into();
    sweep_steps(
        &mut r,
        "rate",
        &[
            (1000.0, 0, 3, 500),
            (2000.0, 3, 6, 600),
            (3000.0, 6, 9, 400_000),
        ],
        1000,
    );
    let col = |name: &str, v: [f64; 9]| Column {
        name: name.into(),
        unit: String::new(),
        values: v.iter().map(|x| Some(*x)).collect(),
    };
    let mut load = table("load", 9, &[]);
    let got = [
        1000.0, 1000.0, 1000.0, 2000.0, 2000.0, 2000.0, 2000.0, 2000.0, 2000.0,
    ];
    load.columns.push(col("received", got));
    load.columns.push(col(
        kiln_store::QUEUE_DEPTH,
        [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 40.0, 50.0, 60.0],
    ));
    r.series = vec![load, target(9, 2.0, &[group("srv", 4.0, 50.0, 2.0, 10.0)])];
    let found = rules::sweep::knee(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    let claim = &found[0].claim;
    assert!(
        claim.starts_with("at rate=3000 the outcome broke"),
        "{claim}"
    );
    assert!(
        claim.contains("Little's law: at 2,000/s a median of 400 ms is 800 msgs in flight, the broker's queue held 50 of them on average (the rest waited before it"),
        "{claim}"
    );
}

/// A sweep's goroutine waits, traced without times, are a step's in the proportion of the
/// operations' time it held: a first step of 1 connection holds little of them.
#[test]
fn untimed_waits_are_a_steps_by_the_operations_time_it_held() {
    let mut r = run(8, 2);
    // Two steps of 4 s: 1 connection at 1 ms, then 15 at 15 ms; 4,000 requests each.
    sweep_steps(
        &mut r,
        "connections",
        &[(1.0, 0, 4, 1000), (15.0, 4, 8, 15_000)],
        4000,
    );
    let mut load = table("load", 8, &[]);
    load.columns.push(Column {
        name: "answered".into(),
        unit: "req/s".into(),
        values: vec![Some(1000.0); 8],
    });
    r.series = vec![load, target(8, 2.0, &[group("srv", 4.0, 50.0, 2.0, 10.0)])];
    let mut p = Profile::new(EventInfo::new(
        kiln_store::GOROUTINE_WAITS_EVENT,
        WeightUnit::Nanoseconds,
    ));
    let ids = [
        p.frame(b"main.(*cache).get", FrameKind::User),
        p.frame(b"sync.(*Mutex).Lock", FrameKind::User),
    ];
    let th = p.thread(None, None, b"");
    p.add_sample_path(&ids, 64_000_000_000, kiln_model::NO_TIME, th);
    r.profiles = vec![p];
    let first = r.meta.windows[0].clone();
    let f = Facts::of(&r, Some(&first));
    let w: u64 = f.goroutine_waits().unwrap().samples.weight.iter().sum();
    // 4 s of 1 ms requests against 4 s + 60 s: a sixteenth, not half.
    assert!((w as f64 / 64e9 - 1.0 / 16.0).abs() < 0.01, "{w}");
}

/// Without an off-CPU profile, threads asleep in disk waits (their state and wchan) still
/// name the disk; a futex is named only when the waiting threads could all be requests.
#[test]
fn disk_waits_are_named_from_thread_states_alone() {
    let mut r = run(10, 2);
    headline(&mut r, 200.0, 0.1, 30.0, 0.1);
    r.meta.load.concurrency = Some(8.0);
    let mut t = target(10, 1.0, &[group("srv", 9.0, 10.0, 1.0, 3.0)]);
    for (b, n) in [("disk", 6.0), ("futex", 40.0), ("network", 1.0)] {
        t.columns.push(Column {
            name: format!("waiting:{b}"),
            unit: "count".into(),
            values: vec![Some(n); 10],
        });
    }
    r.series = vec![t];
    let found = rules::waiting::sleeping(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].class, Class::DiskIo);
    assert!((found[0].explains.as_ref().unwrap().pct - 75.0).abs() < 1.0);
}

#[test]
fn a_cap_below_the_machine_is_named_as_the_limit() {
    // A server at one CPU of two: without a cap it is not CPU-bound (a CPU stood idle).
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 0.97, 60.0, 0.2);
    r.meta.load.concurrency = Some(16.0);
    r.series = vec![target(10, 3.0, &[group("srv", 4.0, 97.0, 3.0, 60.0)])];
    assert!(rules::cpu::cpu_bound(&Facts::of(&r, None)).is_empty());
    // Allowed one CPU (taskset, a cpuset): that CPU is all it may use, and kiln says so.
    r.meta.target.cpus_allowed = Some(1);
    let found = rules::cpu::cpu_bound(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].claim.contains("its CPU affinity (1 CPUs allowed)")
            && found[0].claim.contains("0.97 CPU of 1.00 CPU"),
        "{}",
        found[0].claim
    );
    assert_eq!(classes(&r)[0], Class::CpuBound);
    // Two allowed of two: no cap.
    r.meta.target.cpus_allowed = Some(2);
    assert!(rules::cpu::cpu_bound(&Facts::of(&r, None)).is_empty());
    // A cgroup's quota of one CPU throttling it: starvation's to say (the threads wait
    // ready to run), not a cap the program set.
    let mut q = target(10, 3.0, &[group("srv", 4.0, 97.0, 3.0, 60.0)]);
    q.columns.push(Column {
        name: "cpu quota".into(),
        unit: "count".into(),
        values: vec![Some(1.0); 10],
    });
    q.columns.push(Column {
        name: "throttled".into(),
        unit: "%".into(),
        values: vec![Some(90.0); 10],
    });
    r.series = vec![q];
    assert!(rules::cpu::cpu_bound(&Facts::of(&r, None))
        .iter()
        .all(|x| !x.claim.contains("quota")));
    r.series = vec![target(10, 3.0, &[group("srv", 4.0, 97.0, 3.0, 60.0)])];
    // The BEAM's schedulers online, as erlexec passes `+S 2:1` to beam.smp.
    r.meta.target.cpus_allowed = None;
    r.meta.target.comm = "beam.smp".into();
    r.meta.target.cmdline = [
        "/usr/lib/erlang/erts-13/bin/beam.smp",
        "-SDio",
        "1",
        "-S",
        "2:1",
        "--",
        "-root",
    ]
    .map(String::from)
    .to_vec();
    let found = rules::cpu::cpu_bound(&Facts::of(&r, None));
    assert!(
        found[0].claim.contains("+S 1 (schedulers online)"),
        "{found:#?}"
    );
    // Go's GOMAXPROCS, from the environment kiln keeps of the target.
    r.meta.target.comm = "srv".into();
    r.meta.target.cmdline = vec!["./srv".into()];
    r.meta.target.env = vec!["GOMAXPROCS=1".into()];
    r.profiles = vec![cpu_profile(&[(&["runtime.main", "main.work"], "srv", 100)])];
    let found = rules::cpu::cpu_bound(&Facts::of(&r, None));
    assert!(
        found[0]
            .claim
            .contains("GOMAXPROCS=1 lets it run on 1.00 CPU"),
        "{found:#?}"
    );
}

#[test]
fn beam_schedulers_online_read_from_the_command_line() {
    let s = |a: &[&str]| {
        rules::beam_schedulers_online(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>())
    };
    assert_eq!(s(&["beam.smp", "-S", "4:2"]), Some(2));
    assert_eq!(s(&["beam.smp", "+S", "3"]), Some(3));
    assert_eq!(s(&["beam.smp", "-S1"]), Some(1));
    assert_eq!(s(&["beam.smp", "-SP", "50:50", "-SDcpu", "1:1"]), None);
    assert_eq!(s(&["beam.smp", "-S"]), None);
    assert_eq!(s(&["beam.smp"]), None);
}

/// A Node server on a machine others keep busy: its event loop (the first thread) polled
/// 30% of the window, ran 10%, and waited for a CPU 60% of it (the kernel's count); no
/// thread was occupied in the work. The requests waited with the loop for a CPU: not
/// 'held by the program on a timer', and starvation says the loop.
#[test]
fn a_starved_event_loop_holds_the_requests_not_a_timer() {
    let mut r = run(10, 2);
    headline(&mut r, 2000.0, 0.3, 100.0, 0.2);
    r.meta.load.concurrency = Some(16.0);
    r.meta.target.comm = "node".into();
    let mut cols = group("node", 7.0, 30.0, 120.0, 10.0);
    cols.push(("main thread runnable".into(), 60.0));
    r.series = vec![
        target(10, 120.0, &[cols]),
        table("others", 10, &[("cpu:hog (777)", 150.0)]),
    ];
    let mut off = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
    let root = off.frame(b"node", FrameKind::Root);
    let run_loop = off.frame(b"uv_run", FrameKind::User);
    let epoll = off.frame(b"epoll_wait", FrameKind::User);
    let ep = off.frame(b"do_epoll_wait", FrameKind::Kernel);
    let main = off.thread(Some(4242), Some(4242), b"node");
    off.add_sample_path(&[root, run_loop, epoll, ep], 3_000_000, 0, main);
    let period = 10_000_000;
    let mut cpu = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    cpu.event.sample_period_ns = Some(period);
    let (croot, handler) = (
        cpu.frame(b"node", FrameKind::Root),
        cpu.frame(b"JS:*handle server.js:3", FrameKind::Jit),
    );
    let cmain = cpu.thread(Some(4242), Some(4242), b"node");
    for i in 0..100u64 {
        cpu.add_sample_path(&[croot, handler], 1, i * period, cmain);
    }
    r.profiles = vec![off, cpu];
    let f = Facts::of(&r, None);
    assert_eq!(rules::queues::starved_loop(&f), Some((4242, 0.6)));
    let found = rules::run_all(&f).findings;
    assert!(
        found.iter().all(|x| x.class != Class::SleepInPath),
        "{found:#?}"
    );
    let starved = found
        .iter()
        .find(|x| x.class == Class::CpuStarvation)
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert!(
        starved
            .claim
            .contains("its event loop (thread 4242) waited for a CPU 60% of the time"),
        "{}",
        starved.claim
    );
}

/// Five threads that serve requests, on a lock 12% of the time, beside twelve event loops
/// of the same name polling for events, on a machine others keep busy: 7.75 of the group's
/// threads wait for a CPU on average, most of them the event loops. Their wait is not the
/// pool's: the five are not 'occupied all the time', and no pool is said to be the limit.
#[test]
fn event_loops_waiting_for_a_cpu_do_not_fill_the_pool_beside_them() {
    let mut r = run(10, 2);
    headline(&mut r, 6000.0, 0.6, 100.0, 0.3);
    r.meta.load.concurrency = Some(16.0);
    r.series = vec![target(10, 775.0, &[group("srv", 17.0, 40.0, 775.0, 20.0)])];
    let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
    let root = p.frame(b"srv", FrameKind::Root);
    let start = p.frame(b"start_thread", FrameKind::User);
    let serve = p.frame(b"serve", FrameKind::User);
    let work = p.frame(b"locked_work", FrameKind::User);
    let lock = p.frame(b"__lll_lock_wait", FrameKind::User);
    let futex = p.frame(b"futex_wait", FrameKind::Kernel);
    let looping = p.frame(b"event_loop", FrameKind::User);
    let epoll = p.frame(b"epoll_wait", FrameKind::User);
    let ep = p.frame(b"do_epoll_wait", FrameKind::Kernel);
    for i in 0..5u32 {
        let th = p.thread(Some(4242), Some(10 + i), b"srv");
        p.add_sample_path(&[root, start, serve, work, lock, futex], 1_200_000, 0, th);
    }
    for i in 0..12u32 {
        let th = p.thread(Some(4242), Some(20 + i), b"srv");
        p.add_sample_path(&[root, start, looping, epoll, ep], 6_000_000, 0, th);
    }
    r.profiles = vec![p];
    let f = Facts::of(&r, None);
    eprintln!(
        "DEBUG {:?} {:?} {:?}",
        f.groups,
        rules::queues::most_occupied(&f),
        f.request_time_s()
    );
    let found = rules::queues::pool(&f);
    assert!(found.is_empty(), "{found:#?}");
}

/// A pool of 4 threads, each asleep in the handler's work nearly all the time, with 32
/// requests in flight: 28 of them wait inside the server for a thread. Not "outside".
#[test]
fn a_saturated_pool_is_the_limit_not_the_outside() {
    let mut r = run(10, 2);
    headline(&mut r, 365.0, 0.17, 40.0, 0.3);
    r.meta.load.concurrency = Some(32.0);
    r.meta.target.comm = "java".into();
    let pool = |cpu: f64, runnable: f64| {
        target(
            10,
            runnable,
            &[
                group("pool-N-thread", 4.0, cpu, runnable, 2.0),
                group("GC Thread", 2.0, 0.1, 0.0, 0.1),
            ],
        )
    };
    let offcpu = |asleep_s: f64, idle_s: f64| {
        let mut p = Profile::new(EventInfo::new("offcpu", WeightUnit::Microseconds));
        let root = p.frame(b"java", FrameKind::Root);
        let handler = p.frame(
            b"void com.sun.net.httpserver.Filter$Chain.doFilter(com.sun.net.httpserver.HttpExchange)",
            FrameKind::User,
        );
        let sleep = p.frame(b"JVM_Sleep", FrameKind::User);
        let cond = p.frame(b"__futex_abstimed_wait_common", FrameKind::User);
        let getter = p.frame(
            b"java.lang.Runnable java.util.concurrent.ThreadPoolExecutor.getTask()",
            FrameKind::User,
        );
        let park = p.frame(b"Unsafe_Park", FrameKind::User);
        let gc = p.frame(b"WorkerThread::run", FrameKind::User);
        let futex = p.frame(b"futex_wait", FrameKind::Kernel);
        for i in 0..4u32 {
            let th = p.thread(
                Some(4242),
                Some(10 + i),
                format!("pool-1-thread-{}", i + 1).as_bytes(),
            );
            p.add_sample_path(
                &[root, handler, sleep, cond, futex],
                (asleep_s / 4.0 * 1e6) as u64,
                0,
                th,
            );
            p.add_sample_path(
                &[root, getter, park, futex],
                (idle_s / 4.0 * 1e6) as u64,
                0,
                th,
            );
        }
        for i in 0..2u32 {
            let th = p.thread(
                Some(4242),
                Some(20 + i),
                format!("GC Thread#{i}").as_bytes(),
            );
            p.add_sample_path(&[root, gc, cond, futex], 9_900_000, 0, th);
        }
        p
    };
    // Asleep in the work 37 of the pool's 40 thread-seconds.
    r.series = vec![pool(6.0, 20.0)];
    r.profiles = vec![offcpu(37.0, 0.5)];
    let f = Facts::of(&r, None);
    let found = rules::queues::pool(&f);
    assert_eq!(found.len(), 1, "{found:#?}");
    let c = &found[0].claim;
    assert!(
        c.starts_with("all 4 'pool-N-thread' threads were occupied"),
        "{c}"
    );
    assert!(
        c.contains("slept") && c.contains("32.0 reqs were in flight"),
        "{c}"
    );
    assert!(c.contains("the other 28.0 waited inside the server"), "{c}");
    assert_eq!(found[0].class, Class::SleepInPath);
    assert!(rules::waiting::outside(&f).is_empty());
    assert_eq!(classes(&r)[0], Class::SleepInPath);
    // The same pool idle half the time (its threads in getTask): not the limit.
    r.profiles = vec![offcpu(18.0, 19.5)];
    assert!(rules::queues::pool(&Facts::of(&r, None)).is_empty());
    // As many threads as requests in flight (a thread per connection): no pool's queue.
    r.meta.load.concurrency = Some(4.0);
    r.profiles = vec![offcpu(37.0, 0.5)];
    assert!(rules::queues::pool(&Facts::of(&r, None)).is_empty());
}

/// Responses that came in two parts 41 ms apart (the load's receive times): the
/// delayed-ACK stall, named even while a lock holds the server's threads busy.
#[test]
fn responses_in_parts_a_delayed_ack_apart_are_the_stall() {
    let mut r = run(10, 2);
    headline(&mut r, 176.0, 0.6, 60.0, 0.2);
    r.meta.load.concurrency = Some(16.0);
    r.series = vec![
        target(10, 2.0, &[group("srv", 16.0, 60.0, 2.0, 10.0)]),
        table(
            "load",
            10,
            &[
                ("answered", 176.0),
                ("split_responses", 170.0),
                ("split_wait_us", 170.0 * 41_000.0),
            ],
        ),
    ];
    let found = rules::waiting::split(&Facts::of(&r, None)).expect("a split finding");
    assert!(
        found.claim.starts_with(
            "97% of the responses arrived in parts, their last bytes 41.0 ms after their first"
        ),
        "{}",
        found.claim
    );
    assert!(found.claim.contains("delayed-ACK"), "{}", found.claim);
    // 170 × 41 ms of the 160 s the 16 connections spent each second: 44%.
    assert!(
        (found.explains.as_ref().unwrap().pct - 43.6).abs() < 0.5,
        "{found:#?}"
    );
    // Parts 5 ms apart: the server's own pace, not the stall, and too little to say.
    r.series[1] = table(
        "load",
        10,
        &[
            ("answered", 176.0),
            ("split_responses", 170.0),
            ("split_wait_us", 170.0 * 5_000.0),
        ],
    );
    assert!(rules::waiting::split(&Facts::of(&r, None)).is_none());
}

/// A run of a server at 1,000 requests a second whose resident memory read `mib` MiB, a
/// second at a time.
fn with_rss_mib(mib: Vec<f64>) -> RunData {
    let secs = mib.len() as u64;
    let mut r = run(secs, 2);
    headline(&mut r, 1000.0, 1.0, 60.0, 0.1);
    let mut t = target(secs, 0.0, &[group("srv", 4.0, 100.0, 0.0, 30.0)]);
    t.columns.push(Column {
        name: "rss".into(),
        unit: "bytes".into(),
        values: mib.into_iter().map(|v| Some(v * 1048576.0)).collect(),
    });
    r.series.push(t);
    r
}

/// Memory that grew and stayed is growth; a collector's sawtooth read at two of its tops
/// (145 → 290 MiB and back every two seconds) is not, however far apart its ends.
#[test]
fn growth_is_memory_kept_not_a_sawtooth() {
    let with_rss = |values: Vec<f64>| classes(&with_rss_mib(values));
    let leak: Vec<f64> = (0..10).map(|i| 150.0 + 15.0 * i as f64).collect();
    assert!(with_rss(leak).contains(&Class::MemoryGrowth));
    let saw: Vec<f64> = (0..10)
        .map(|i| if i % 2 == 1 || i == 9 { 290.0 } else { 145.0 })
        .collect();
    assert!(!with_rss(saw).contains(&Class::MemoryGrowth));
}

/// A cache filling to its size (fast, then flat) is said to have filled a bound, not to
/// leak; a leak at a steady pace keeps the leak's words.
#[test]
fn memory_that_grew_to_a_bound_and_held_is_not_called_a_leak() {
    let claim = |values: Vec<f64>| {
        rules::runtime::growth(&Facts::of(&with_rss_mib(values), None))
            .pop()
            .map(|x| x.claim)
            .unwrap_or_default()
    };
    let cache: Vec<f64> = (0..12)
        .map(|i| 20.0 + 260.0 * (1.0 - (-(i as f64) / 1.5).exp()))
        .collect();
    let said = claim(cache);
    assert!(said.contains("then held"), "{said}");
    assert!(!said.contains("did not come back"), "{said}");
    let leak: Vec<f64> = (0..12).map(|i| 150.0 + 15.0 * i as f64).collect();
    let said = claim(leak);
    assert!(said.contains("did not come back"), "{said}");
}

/// Others holding the CPUs (the machine's state) ranks below a cause of the server's own
/// that explains more of the same outcome, however its own rule ranked it; above one that
/// explains less, or the same share of something else.
#[test]
fn a_cause_outside_the_server_ranks_below_its_own_causes_that_explain_more() {
    use kiln_findings::Finding;
    fn disk(_: &Facts) -> Vec<Finding> {
        vec![Finding::new("disk", Class::DiskIo, 0.3, "disk").explains(
            29.0,
            "of the reqs' time: waiting inside the server for its threads",
        )]
    }
    fn lock(_: &Facts) -> Vec<Finding> {
        vec![Finding::new("lock", Class::LockContention, 0.2, "lock")
            .explains(10.0, "of the reqs' time")]
    }
    fn cpu(_: &Facts) -> Vec<Finding> {
        vec![Finding::new("cpu", Class::CpuBound, 0.25, "cpu")
            .explains(90.0, "of the CPUs it could use")]
    }
    fn starved(_: &Facts) -> Vec<Finding> {
        let mut x = Finding::new("starvation", Class::CpuStarvation, 0.5, "starved")
            .explains(16.0, "of the reqs' time");
        x.outside = true;
        vec![x]
    }
    let r = run(10, 2);
    let f = Facts::of(&r, None);
    let ranked: Vec<Class> = rules::run_rules(
        &f,
        &[
            ("lock", lock),
            ("cpu", cpu),
            ("starved", starved),
            ("disk", disk),
        ],
    )
    .findings
    .iter()
    .map(|x| x.class)
    .collect();
    assert_eq!(
        ranked,
        [
            Class::DiskIo,
            Class::CpuStarvation,
            Class::CpuBound,
            Class::LockContention
        ]
    );
    // Without the disk, nothing of its own explains more: the machine's state comes first.
    let ranked = rules::run_rules(&f, &[("lock", lock), ("starved", starved)]).findings;
    assert_eq!(ranked[0].class, Class::CpuStarvation);
}

/// A server whose own threads were ready for every CPU (on one or waiting for one) is
/// CPU-bound though others held more of the CPUs than it ran on; with its threads ready
/// for less, the others filled the machine and the rule is silent.
#[test]
fn a_server_ready_for_the_whole_machine_is_cpu_bound_beside_others() {
    let mut r = run(10, 2);
    headline(&mut r, 1000.0, 1.2, 100.0, 0.1);
    let others = table("others", 10, &[("cpu:rustc (777)", 124.0)]);
    r.series = vec![
        target(10, 100.0, &[group("srv", 4.0, 120.0, 100.0, 30.0)]),
        others.clone(),
    ];
    let found = rules::cpu::cpu_bound(&Facts::of(&r, None));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].claim.contains("other processes (1.24 CPUs)"),
        "{}",
        found[0].claim
    );
    r.series = vec![
        target(10, 20.0, &[group("srv", 4.0, 120.0, 20.0, 30.0)]),
        others,
    ];
    assert!(rules::cpu::cpu_bound(&Facts::of(&r, None)).is_empty());
}
