//! Golden tests of the perf collapser on real recordings (see tests/data/perf/README.md):
//! every fixture with several option sets, each with 1 and 2 parser threads, and a check
//! that every sample of the file is counted as kept or skipped.
mod common;
use common::*;
use kiln_collapse::perf::{PerfOptions, PerfWeight};
use kiln_collapse::{perf, Options};

const FIXTURES: &[&str] = &[
    "cpu-fp",
    "cpu-dwarf",
    "mixed-events",
    "tracepoints",
    "no-callchain",
    "anon-cpp",
    "pid-tid",
    "erlang-jit",
    "system-wide",
];

fn variants() -> Vec<(&'static str, PerfOptions)> {
    let d = PerfOptions::default;
    vec![
        ("default", d()),
        (
            "pid",
            PerfOptions {
                include_pid: true,
                ..d()
            },
        ),
        (
            "tid",
            PerfOptions {
                include_pid: true,
                include_tid: true,
                ..d()
            },
        ),
        (
            "all",
            PerfOptions {
                annotate_kernel: true,
                annotate_jit: true,
                annotate_inline: true,
                ..d()
            },
        ),
        (
            "addrs",
            PerfOptions {
                include_addrs: true,
                ..d()
            },
        ),
        (
            "samples",
            PerfOptions {
                weight: PerfWeight::Samples,
                ..d()
            },
        ),
    ]
}

/// Samples in a perf script file, counted independently of the parser: a sample starts at
/// a line that does not begin with a tab and is not a comment or blank.
fn count_samples(text: &str) -> u64 {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t') && !l.starts_with('#'))
        .count() as u64
}

#[test]
fn golden_outputs_and_sample_accounting() {
    let dir = data_dir();
    for fx in FIXTURES {
        let path = dir.join(format!("perf/{fx}.txt"));
        let text = std::fs::read_to_string(&path).unwrap();
        for (name, popts) in variants() {
            let mut outs = Vec::new();
            for threads in [1, 2] {
                let opts = Options {
                    perf: PerfOptions {
                        threads,
                        ..popts.clone()
                    },
                    ..Default::default()
                };
                let c = run(&path, perf::collapse, &opts);
                assert_eq!(
                    c.stats.read,
                    count_samples(&text),
                    "{fx}/{name}: every sample is read"
                );
                assert_eq!(
                    c.stats.read,
                    c.stats.kept + c.stats.skipped_total(),
                    "{fx}/{name}: every sample kept or skipped"
                );
                assert_eq!(c.stats.warnings, 0, "{fx}/{name}: {:?}", c.warnings);
                outs.push(folded(&c.profile));
            }
            assert_eq!(
                outs[0], outs[1],
                "{fx}/{name}: 1 and 2 threads, per-sample and aggregated agree"
            );
            check_golden(
                &outs[0],
                &dir.join(format!("results/perf/{fx}.{name}.folded")),
            );
        }
    }
}

#[test]
fn event_filter_selects_each_event_of_a_mixed_recording() {
    let dir = data_dir();
    let path = dir.join("perf/tracepoints.txt");
    let mut total_kept = 0;
    let mut read = 0;
    for ev in ["syscalls:sys_enter_mmap", "sched:sched_switch"] {
        let opts = Options {
            perf: PerfOptions {
                event_filter: Some(ev.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let c = run(&path, perf::collapse, &opts);
        assert!(c.stats.kept > 0, "{ev} has samples");
        assert_eq!(c.profile.event.name, ev);
        total_kept += c.stats.kept;
        read = c.stats.read;
        check_golden(
            &folded(&c.profile),
            &dir.join(format!(
                "results/perf/tracepoints.{}.folded",
                ev.replace(':', "_")
            )),
        );
    }
    assert_eq!(total_kept, read, "the two events together are every sample");
    // cycles:ppp-style modifiers: the base name selects the event.
    let opts = Options {
        perf: PerfOptions {
            event_filter: Some("cpu-clock".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let c = run(&dir.join("perf/cpu-fp.txt"), perf::collapse, &opts);
    assert_eq!(c.stats.skipped_total(), 0);
}

#[test]
fn known_shapes() {
    let dir = data_dir();
    let c = run(
        &dir.join("perf/cpu-fp.txt"),
        perf::collapse,
        &Options {
            perf: PerfOptions {
                weight: PerfWeight::Samples,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let out = folded(&c.profile);
    // hot_a spins twice as long as hot_b.
    let sum = |pat: &str| -> u64 {
        out.lines()
            .filter(|l| l.contains(pat))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let (a, b) = (sum(";hot_a;"), sum(";hot_b;"));
    assert!(a > b * 3 / 2 && a < b * 3, "hot_a {a} vs hot_b {b}");
    // Thread names with a space, a colon and a leading parenthesis survive.
    assert!(out.lines().any(|l| l.starts_with("worker_1;")));
    assert!(out.lines().any(|l| l.starts_with("w:2;")));
    assert!(out.lines().any(|l| l.starts_with("(paren;")));
    // Erlang JIT frames with quoted atoms.
    let e = folded(
        &run(
            &dir.join("perf/erlang-jit.txt"),
            perf::collapse,
            &Options::default(),
        )
        .profile,
    );
    assert!(
        e.contains("$busy:work/1;$lists:foldl_1/3;$busy:'-work/1-fun-0-'/2 "),
        "{e}"
    );
    // C++ anonymous namespaces are frames.
    let a = folded(
        &run(
            &dir.join("perf/anon-cpp.txt"),
            perf::collapse,
            &Options::default(),
        )
        .profile,
    );
    assert!(a.contains(";main;(anonymous namespace)::churn "), "{a}");
    // `:-1` tasks and deleted modules.
    let s = folded(
        &run(
            &dir.join("perf/system-wide.txt"),
            perf::collapse,
            &Options::default(),
        )
        .profile,
    );
    assert!(s.lines().any(|l| l.starts_with(":-1;")));
    assert!(s.contains(";[memfd:sealed-91173221a7ea];"));
}

#[test]
fn malformed_lines_are_reported_with_file_and_line() {
    let text = b"prog 12 [000] 1.000001: 1 cpu-clock:\n\t1234 f (/bin/x)\n\tnot a frame line\n\nthis is not a header\n\t1234 f (/bin/x)\n\nprog 12 [000] 1.000002: 1 cpu-clock:\n\t1234 g (/bin/x)\n";
    let c = perf::collapse(
        kiln_collapse::Input {
            name: "bad.txt",
            data: text,
        },
        &Options::default(),
    )
    .unwrap();
    assert_eq!(c.stats.read, 3);
    assert_eq!(c.stats.kept, 2);
    assert_eq!(c.stats.skipped_total(), 1);
    assert_eq!(c.warnings.len(), 2);
    assert_eq!(
        c.warnings[0].to_string(),
        "bad.txt:3: unrecognised stack line (left out of its sample): \tnot a frame line"
            .replace('\t', "\\t")
    );
    assert_eq!(c.warnings[1].line, 5);
    assert_eq!(folded(&c.profile), "prog;f 1\nprog;g 1\n");
    // Strict: the first one is an error, naming file and line.
    let e = perf::collapse(
        kiln_collapse::Input {
            name: "bad.txt",
            data: text,
        },
        &Options {
            strict: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("bad.txt:3: "), "{e}");
}

/// The profile does not depend on how the input is cut and parsed: one or several parser
/// threads, tiny blocks (every block boundary inside the fixtures' samples is crossed),
/// one row per sample or per stack. Stats and warnings agree too.
#[test]
fn same_profile_whatever_the_blocks_threads_and_aggregation() {
    let dir = data_dir();
    // A malformed stack line and header among good samples, repeated so that a task's
    // next sample reuses lines of its previous one (and must warn again).
    let mut hostile = String::new();
    for i in 0..40 {
        hostile.push_str(&format!(
            "prog 12 [000] 1.{i:06}: 7 cpu-clock:\n\t1234 f (/bin/x)\n\tnot a frame\n\t99 main (/bin/x)\n\n"
        ));
        hostile.push_str(&format!(
            "other 13 [001] 1.{i:06}: 5 cpu-clock:\n\t1234 g (/bin/x)\n\t99 main (/bin/x)\n\n"
        ));
        if i % 7 == 0 {
            hostile.push_str("not a header\n\t1 x (/y)\n\n");
        }
    }
    let mut inputs: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|fx| {
            let p = dir.join(format!("perf/{fx}.txt"));
            (fx.to_string(), std::fs::read(p).unwrap())
        })
        .collect();
    inputs.push(("hostile".into(), hostile.into_bytes()));
    for (fx, data) in &inputs {
        for (name, popts) in variants() {
            let mut reference: Option<(String, String, Vec<String>)> = None;
            for (threads, block_bytes, aggregate) in [
                (1, 0, false),
                (1, 0, true),
                (2, 0, true),
                (1, 1, false),
                (2, 1, true),
                (3, 700, false),
                (3, 4096, true),
            ] {
                let opts = Options {
                    perf: PerfOptions {
                        threads,
                        block_bytes,
                        aggregate,
                        ..popts.clone()
                    },
                    ..Default::default()
                };
                let c = perf::collapse(kiln_collapse::Input { name: fx, data }, &opts).unwrap();
                if fx == "hostile" {
                    // 40 bad stack lines (each warned about, though its neighbours are
                    // reused from the task's previous sample) and 6 bad headers.
                    assert_eq!(c.stats.warnings, 46, "{name}: {:?}", c.warnings);
                    assert_eq!(c.stats.read, 86);
                }
                let got = (
                    folded(&c.profile),
                    format!("{} {:?}", c.stats, c.profile.event),
                    c.warnings.iter().map(|w| w.to_string()).collect(),
                );
                match &reference {
                    None => reference = Some(got),
                    Some(r) => pretty_assertions::assert_eq!(
                        r,
                        &got,
                        "{fx}/{name}: threads {threads}, blocks {block_bytes}, aggregate {aggregate}"
                    ),
                }
            }
        }
    }
}

/// A period beyond 64 bits is a malformed sample with that reason (it used to weigh 1,
/// silently); weights adding up beyond 64 bits are an error naming the line (they used
/// to saturate, drawing every frame at 100%).
#[test]
fn periods_that_do_not_fit_are_malformed_and_totals_do_not_saturate() {
    let text = b"prog 12 [000] 1.000001: 99999999999999999999 cpu-clock:\n\t1234 f (/bin/x)\n\nprog 12 [000] 1.000002: 7 cpu-clock:\n\t1234 g (/bin/x)\n";
    for threads in [1, 2] {
        let opts = Options {
            perf: PerfOptions {
                threads,
                ..Default::default()
            },
            ..Default::default()
        };
        let input = kiln_collapse::Input {
            name: "big.txt",
            data: text,
        };
        let c = perf::collapse(input, &opts).unwrap();
        assert_eq!((c.stats.read, c.stats.kept), (2, 1));
        assert_eq!(
            c.stats
                .skipped
                .get(&kiln_collapse::SkipReason::WeightTooLarge),
            Some(&1)
        );
        assert_eq!(c.stats.warnings, 1);
        assert_eq!(
            c.warnings[0].to_string(),
            "big.txt:1: sample period does not fit in 64 bits (sample left out): prog 12 [000] 1.000001: 99999999999999999999 cpu-clock:"
        );
        assert_eq!(folded(&c.profile), "prog;g 7\n");
        // Counting samples, the period does not matter.
        let samples = Options {
            perf: PerfOptions {
                weight: PerfWeight::Samples,
                threads,
                ..Default::default()
            },
            ..Default::default()
        };
        let c = perf::collapse(input, &samples).unwrap();
        assert_eq!((c.stats.kept, c.stats.warnings), (2, 0));
    }
    let max = u64::MAX;
    let text = format!(
        "prog 12 [000] 1.000001: {max} cpu-clock:\n\t1234 f (/bin/x)\n\nprog 12 [000] 1.000002: 1 cpu-clock:\n\t1234 g (/bin/x)\n"
    );
    for (threads, block_bytes) in [(1, 0), (2, 1)] {
        let opts = Options {
            perf: PerfOptions {
                threads,
                block_bytes,
                aggregate: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let e = perf::collapse(
            kiln_collapse::Input {
                name: "sum.txt",
                data: text.as_bytes(),
            },
            &opts,
        )
        .unwrap_err();
        assert!(
            matches!(e, kiln_collapse::CollapseError::WeightOverflow(_)),
            "{e}"
        );
        assert!(e.to_string().starts_with("sum.txt"), "{e}");
    }
}
