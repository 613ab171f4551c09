//! The comparison page judges a window dragged in the browser by a port of this crate's
//! rows and overall line (web/src/report/lib/verdict.ts). This writes what `compare()`
//! says for a set of inputs — runs as the store keeps them, the rules, the pairing by
//! round, the profile's clause — to `web/tests/fixtures/compare-verdicts.json`, and
//! web/tests/verdicts.test.ts asserts the port says the same words. A fixture that
//! differs from what is checked in is written again and the test fails: run it once more
//! and commit the file.
use kiln_compare::export::{change_text, group_text};
use kiln_compare::{
    compare, figures::FIGURES, not_comparable, profile_change, rounds, Change, Comparison, Group,
    Options, OverallVerdict, Role, Rounds, Rules, Verdict,
};
use kiln_model::{EventInfo, FrameKind, Profile, ThreadId, WeightUnit, NO_TIME};
use kiln_store::{Headline, RunMeta, SchedulerStates};
use serde_json::{json, Value};

/// A complete run of an AMQP load over a 10 s measurement: `rate` set (or open-ended),
/// its headline filled by `f`.
fn run(rate: Option<f64>, f: impl FnOnce(&mut Headline)) -> RunMeta {
    let mut m = RunMeta::default();
    m.status.complete = true;
    m.load.protocol = "amqp".into();
    m.load.unit = "msg".into();
    m.load.rate = rate;
    m.measure.end_ns = 10_000_000_000;
    m.host = "h".into();
    m.headline.kiln_cpu_s = Some(0.5);
    f(&mut m.headline);
    m
}

/// The usual figures of a run: throughput (sent as received), p99, CPU per message (the
/// target's CPU from them), the operations counted.
fn usual(tp: f64, p99: f64, cpu_per_op: f64) -> impl FnOnce(&mut Headline) {
    move |h| {
        h.throughput = Some(tp);
        h.send_rate = Some(tp);
        h.p99_us = Some(p99);
        h.cpu_per_op_us = Some(cpu_per_op);
        h.target_cpu_s = Some(tp * cpu_per_op / 1e6 * 10.0);
        h.operations = Some((tp * 10.0) as u64);
    }
}

fn group(label: &str, runs: Vec<RunMeta>) -> Group {
    Group {
        label: label.into(),
        runs,
        profiles: Vec::new(),
        findings: Vec::new(),
    }
}

/// Four runs: `f(i)` for i in 0..4.
fn four(f: impl Fn(f64) -> RunMeta) -> Vec<RunMeta> {
    (0..4).map(|i| f(i as f64)).collect()
}

/// A CPU profile of folded lines.
fn profile(lines: &[(&str, u64)]) -> Profile {
    let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Period));
    for (s, w) in lines {
        let f: Vec<_> = s
            .split(';')
            .map(|n| p.frame(n.as_bytes(), FrameKind::User))
            .collect();
        p.add_sample_path(&f, *w, NO_TIME, ThreadId::NONE);
    }
    p
}

/// Runs of one interleaved experiment: `rounds` rounds of `name`, on a machine slowing
/// down round by round, CPU per message scaled by `factor`.
fn variant(name: &str, rounds: u32, factor: f64, swap: bool) -> Vec<RunMeta> {
    (1..=rounds)
        .map(|round| {
            let level = 10.0 * 1.15f64.powi(round as i32);
            let wobble = if (round % 2 == 0) == swap { 1.01 } else { 0.99 };
            let mut m = run(
                Some(1000.0),
                usual(1000.0, 900.0 + round as f64, level * factor * wobble),
            );
            m.name = name.into();
            m.group = format!("{name}@1");
            m.experiment = Some("a/b@1".into());
            m.round = Some(round);
            m
        })
        .collect()
}

/// One input: its name, its groups and the rules.
struct Case {
    name: &'static str,
    groups: Vec<Group>,
    rules: Rules,
}

fn case(name: &'static str, groups: Vec<Group>) -> Case {
    Case {
        name,
        groups,
        rules: Rules::default(),
    }
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    // Better: CPU per message down at the same rate, held in both.
    all.push(case(
        "better: CPU per message down at a rate held in both",
        vec![
            group(
                "before",
                four(|i| run(Some(5000.0), usual(5000.0 - i, 900.0 + i, 40.0 + i * 0.1))),
            ),
            group(
                "after",
                four(|i| run(Some(5000.0), usual(4999.0 - i, 901.0 + i, 30.0 + i * 0.1))),
            ),
        ],
    ));
    // Worse: the same rate, not held by the candidate; its latency up.
    all.push(case(
        "worse: the rate not held, latency up",
        vec![
            group(
                "before",
                four(|i| run(Some(20000.0), usual(19990.0 + i, 900.0 + i, 40.0 + i * 0.1))),
            ),
            // The same CPU over fewer messages.
            group(
                "after",
                four(|i| {
                    run(Some(20000.0), |h| {
                        usual(15000.0 + i, 1400.0 + i, 53.3 + i * 0.1)(h);
                        h.target_cpu_s = Some(8.0 + i * 0.01);
                    })
                }),
            ),
        ],
    ));
    // Mixed: open-ended loads, latency better and CPU per message worse.
    all.push(case(
        "mixed: latency better, CPU per message worse",
        vec![
            group(
                "a",
                four(|i| run(None, usual(5000.0 + i, 900.0 + i, 40.0 + i * 0.1))),
            ),
            group(
                "b",
                four(|i| run(None, usual(5000.5 + i, 700.0 + i, 50.0 + i * 0.1))),
            ),
        ],
    ));
    // No change: the groups' values interleave.
    all.push(case(
        "no change: within noise",
        vec![
            group(
                "a",
                four(|i| {
                    run(
                        Some(5000.0),
                        usual(5000.0 - i, 900.0 + 4.0 * i, 40.0 + i * 0.4),
                    )
                }),
            ),
            group(
                "b",
                four(|i| {
                    run(
                        Some(5000.0),
                        usual(4999.0 - i, 902.0 + 4.0 * i, 40.2 + i * 0.4),
                    )
                }),
            ),
        ],
    ));
    // The profile: totals within noise, one function new and one dearer beyond noise.
    let with_profiles = |label: &str, cpu: f64, trace: u64, route: u64| {
        let runs = four(|i| {
            run(
                Some(5000.0),
                usual(5000.0 - i, 900.0 + 4.0 * i, cpu + i * 0.4),
            )
        });
        let profiles = (0..4)
            .map(|i| {
                let mut lines = vec![
                    (
                        "main;rabbit_channel:handle/3;rabbit_exchange:route/2",
                        route + i,
                    ),
                    ("main;rabbit_channel:handle/3;ets:lookup/2", 4000 + i),
                    ("main;rabbit_reader:recv/1", 5000 - i),
                ];
                if trace > 0 {
                    lines.push((
                        "main;rabbit_channel:handle/3;rabbit_trace:trace/5",
                        trace + i,
                    ));
                }
                vec![profile(&lines)]
            })
            .collect();
        Group {
            label: label.into(),
            runs,
            profiles,
            findings: Vec::new(),
        }
    };
    all.push(case(
        "the profile changed under figures within noise: a function named",
        vec![
            with_profiles("before", 40.0, 0, 1000),
            with_profiles("after", 40.2, 600, 1850),
        ],
    ));
    all.push(case(
        "regressed, and what moved in the profile",
        vec![
            with_profiles("before", 40.0, 0, 1000),
            with_profiles("after", 48.0, 600, 1850),
        ],
    ));
    // The BEAM's busy-wait share shrinking while its schedulers idle: context, never
    // "better".
    let beam = |other: f64, check_io: f64| {
        move |h: &mut Headline| {
            h.beam = Some(SchedulerStates {
                emulator_pct: 100.0 - other - check_io,
                check_io_pct: check_io,
                other_pct: other,
                samples: 1000,
                ..Default::default()
            });
            h.machine_busy_pct = Some(3.0 + other / 10.0);
        }
    };
    all.push(case(
        "a busy-wait share shrinking in an idle state",
        vec![
            group(
                "spinning",
                four(|i| {
                    run(Some(100.0), |h| {
                        usual(100.0, 900.0 + 4.0 * i, 400.0 + i * 4.0)(h);
                        beam(60.0 + i, 10.0 + i)(h);
                    })
                }),
            ),
            group(
                "idle",
                four(|i| {
                    run(Some(100.0), |h| {
                        usual(100.0, 902.0 + 4.0 * i, 402.0 + i * 4.0)(h);
                        beam(12.0 + i, 30.0 + i)(h);
                    })
                }),
            ),
        ],
    ));
    // Single runs: every outcome cannot be told, one reason for all.
    all.push(case(
        "single runs: cannot tell",
        vec![
            group("a", vec![run(None, usual(1000.0, 900.0, 40.0))]),
            group("b", vec![run(None, usual(1389.0, 900.0, 40.0))]),
        ],
    ));
    // A figure only some runs measured: too few of them, said with how many did.
    let p50 = |with: bool, v: f64| {
        move |h: &mut Headline| {
            if with {
                h.p50_us = Some(v);
            }
        }
    };
    all.push(case(
        "too few runs measured a figure, and noise wider than a change",
        vec![
            group(
                "a",
                four(|i| {
                    run(None, |h| {
                        usual(5000.0 + i, 900.0 + i, 40.0 + i * 0.1)(h);
                        p50(true, 300.0 + i)(h);
                        h.p999_us = Some([2000.0, 2600.0, 3100.0, 4000.0][i as usize]);
                        h.max_us = Some([9000.0, 15000.0, 21000.0, 30000.0][i as usize]);
                    })
                }),
            ),
            group(
                "b",
                four(|i| {
                    run(None, |h| {
                        usual(5000.0 + i, 901.0 + i, 40.0 + i * 0.1)(h);
                        p50(i < 2.0, 350.0 + i)(h);
                        h.p999_us = Some([2500.0, 3300.0, 3400.0, 4400.0][i as usize]);
                        h.max_us = Some([8000.0, 19000.0, 27000.0, 40000.0][i as usize]);
                    })
                }),
            ),
        ],
    ));
    // Three runs a side: too few repeats for any outcome.
    all.push(case(
        "groups of three: too few repeats",
        vec![
            group(
                "a",
                (0..3)
                    .map(|i| run(None, usual(5000.0 + i as f64, 900.0, 40.0)))
                    .collect(),
            ),
            group(
                "b",
                (0..3)
                    .map(|i| run(None, usual(6000.0 + i as f64, 700.0, 50.0)))
                    .collect(),
            ),
        ],
    ));
    // Variants of one experiment, paired by round: a real +25% under the machine's drift.
    all.push(case(
        "variants paired by round: a change under drift",
        vec![
            group("a", variant("a", 6, 1.0, false)),
            group("b", variant("b", 6, 1.25, true)),
        ],
    ));
    // A round missing on one side: compared as groups, and said why.
    all.push(case(
        "variants whose rounds differ: not paired",
        vec![
            group("a", variant("a", 6, 1.0, false)),
            group("b", variant("b", 5, 1.0, true)),
        ],
    ));
    // Different loads: nothing judged.
    all.push(case(
        "not comparable: different loads",
        vec![
            group("amqp", four(|i| run(None, usual(5000.0, 900.0, 40.0 + i)))),
            group(
                "http",
                four(|i| {
                    let mut m = run(None, usual(5000.0, 900.0, 80.0 + i));
                    m.load.protocol = "http".into();
                    m.load.unit = "req".into();
                    m
                }),
            ),
        ],
    ));
    // RSS 110 KiB apart, beyond noise and past the threshold: under its resolution; a
    // small significant change below the threshold.
    let mut small = case(
        "under the resolution, below the threshold",
        vec![
            group(
                "a",
                four(|i| {
                    run(Some(5000.0), |h| {
                        usual(5000.0, 900.0 + i, 40.0 + i * 0.01)(h);
                        h.rss_max_bytes = Some(1_040_384);
                    })
                }),
            ),
            group(
                "b",
                four(|i| {
                    run(Some(5000.0), |h| {
                        usual(5000.0, 900.0 + i, 40.5 + i * 0.01)(h);
                        h.rss_max_bytes = Some(1_150_976);
                    })
                }),
            ),
        ],
    );
    small.rules.threshold_pct = 10.0;
    all.push(small);
    // Two set rates: the rates are settings, total CPU is context, and a third group.
    all.push(case(
        "three groups at three rates",
        vec![
            group(
                "r5k",
                four(|i| run(Some(5000.0), usual(5000.0 - i, 900.0 + i, 40.0 + i * 0.1))),
            ),
            group(
                "r10k",
                four(|i| run(Some(10000.0), usual(9990.0 - i, 905.0 + i, 35.0 + i * 0.1))),
            ),
            group(
                "r15k",
                four(|i| {
                    run(
                        Some(15000.0),
                        usual(14990.0 - i, 901.0 + i * 3.0, 30.0 + i * 0.1),
                    )
                }),
            ),
        ],
    ));
    // A load that counts no operations (an external command): the target's CPU judged.
    all.push(case(
        "an external load: the target's CPU is the outcome",
        vec![
            group(
                "a",
                four(|i| {
                    let mut m = run(None, |h| h.target_cpu_s = Some(5.0 + i * 0.01));
                    m.load.protocol = "exec".into();
                    m.load.unit = String::new();
                    m
                }),
            ),
            group(
                "b",
                four(|i| {
                    let mut m = run(None, |h| h.target_cpu_s = Some(7.0 + i * 0.01));
                    m.load.protocol = "exec".into();
                    m.load.unit = String::new();
                    m
                }),
            ),
        ],
    ));
    all
}

/// What the page is given to judge: each run's figures, set rate and unit, the rules and
/// the pairing (as crates/report's `judging` writes them), the profile's clause.
fn input(c: &Case, opts: &Options) -> Value {
    let metas: Vec<(String, Vec<RunMeta>)> = c
        .groups
        .iter()
        .map(|g| (g.label.clone(), g.runs.clone()))
        .collect();
    let pairing: Vec<Rounds> = metas
        .iter()
        .enumerate()
        .map(|(i, (_, m))| {
            if i == 0 {
                Rounds::Unpaired
            } else {
                rounds(&metas[0].1, m)
            }
        })
        .collect();
    let runs: Vec<Vec<Value>> = c
        .groups
        .iter()
        .map(|g| {
            g.runs
                .iter()
                .map(|r| {
                    let figures: serde_json::Map<String, Value> = FIGURES
                        .iter()
                        .filter_map(|f| Some((f.key.to_string(), json!((f.get)(r)?))))
                        .collect();
                    json!({ "unit": r.load.unit, "rate": r.load.rate, "figures": figures })
                })
                .collect()
        })
        .collect();
    let profile = profile_change(&c.groups, opts).unwrap();
    json!({
        "labels": c.groups.iter().map(|g| g.label.clone()).collect::<Vec<_>>(),
        "runs": runs,
        "judging": {
            "alpha": opts.rules.alpha,
            "threshold_pct": opts.rules.threshold_pct,
            "not_comparable": not_comparable(&metas),
            "paired": pairing.iter().map(|r| match r {
                Rounds::Paired { experiment, pairs } => json!({ "experiment": experiment, "pairs": pairs }),
                _ => Value::Null,
            }).collect::<Vec<_>>(),
            "unmatched": pairing.iter().map(|r| match r {
                Rounds::Unmatched(why) => json!(why),
                _ => Value::Null,
            }).collect::<Vec<_>>(),
        },
        "profile": { "moved": profile.moved, "quiet": profile.quiet },
    })
}

/// A change as the page must say it: its verdict (and why), its words, its numbers.
fn change(row: &kiln_compare::Row, c: &Option<Change>) -> Value {
    let Some(ch) = c else {
        return Value::Null;
    };
    let (verdict, quiet, unsure) = match &ch.verdict {
        Verdict::Improved => ("improved", None, None),
        Verdict::Regressed => ("regressed", None, None),
        Verdict::NoChange { quiet } => ("no_change", Some(json!(quiet)), None),
        Verdict::CannotTell { why } => ("cannot_tell", None, Some(why.text())),
    };
    json!({
        "verdict": verdict,
        "quiet": quiet,
        "unsure": unsure,
        "text": change_text(row, c),
        "percent": ch.percent.is_finite().then_some(ch.percent),
        "p": ch.p,
        "ci_pct": ch.paired.as_ref().map(|p| p.ci_pct),
    })
}

/// What `kiln compare` says of the input.
fn said(cmp: &Comparison) -> Value {
    let rows: Vec<Value> = cmp
        .rows
        .iter()
        .map(|r| {
            json!({
                "key": r.key,
                "label": r.label,
                "role": r.role,
                "why": r.why,
                "cells": (0..r.groups.len()).map(|i| group_text(r, i)).collect::<Vec<_>>(),
                "changes": r.changes.iter().map(|c| change(r, c)).collect::<Vec<_>>(),
                "noise_pct": r.noise_pct,
            })
        })
        .collect();
    json!({
        "overall": { "verdict": cmp.overall.verdict, "line": cmp.overall.line },
        "rows": rows,
        "notes": cmp.notes,
    })
}

#[test]
fn the_verdicts_for_the_pages_own_test() {
    let mut out = Vec::new();
    for c in cases() {
        let opts = Options {
            rules: c.rules,
            ..Options::default()
        };
        let cmp = compare(&c.groups, &opts).unwrap();
        check(c.name, &cmp);
        let mut v = input(&c, &opts);
        v["name"] = json!(c.name);
        v["said"] = said(&cmp);
        out.push(v);
    }
    let fixture = json!({
        "about": "written by crates/compare (tests/web_verdicts.rs): inputs of kiln compare (each run's figures, the rules, the pairing by round, the profile's clause) and the overall line and rows it says of them; web/tests/verdicts.test.ts asserts the comparison page's port (web/src/report/lib/verdict.ts) says the same",
        "cases": out,
    });
    let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../web/tests/fixtures/compare-verdicts.json");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        kiln_os::io::write_atomically(&path, |w| -> std::io::Result<()> {
            w.write_all(text.as_bytes())
        })
        .unwrap();
        panic!(
            "{} was out of date and is written again: run the test once more and commit it",
            path.display()
        );
    }
}

/// Each case says what it was built to: a fixture of the wrong words would hold the page
/// to them.
fn check(name: &str, c: &Comparison) {
    let row = |key: &str| c.rows.iter().find(|r| r.key == key).unwrap();
    let verdict = |key: &str| row(key).changes.last().cloned().flatten().unwrap().verdict;
    let line = &c.overall.line;
    match name {
        n if n.starts_with("better") => {
            assert_eq!(c.overall.verdict, OverallVerdict::Improved, "{line}");
            assert!(line.contains("better: target CPU per msg -2"), "{line}");
            assert!(line.contains("rate 5000/s held in both"), "{line}");
        }
        n if n.starts_with("worse") => {
            assert_eq!(c.overall.verdict, OverallVerdict::Regressed, "{line}");
            assert!(line.contains("not held (\u{2212}25%)"), "{line}");
            assert_eq!(row("throughput").role, Role::Outcome);
        }
        n if n.starts_with("mixed") => {
            assert_eq!(c.overall.verdict, OverallVerdict::Mixed, "{line}");
            assert_eq!(verdict("p99"), Verdict::Improved);
            assert_eq!(verdict("cpu_per_op"), Verdict::Regressed);
        }
        n if n.starts_with("no change") => {
            assert_eq!(c.overall.verdict, OverallVerdict::NoChange, "{line}");
            assert!(!line.contains("profile"), "{line}");
        }
        n if n.starts_with("the profile changed") => {
            assert_eq!(c.overall.verdict, OverallVerdict::NoChange, "{line}");
            assert!(
                line.contains(
                    "but the profile changed (cpu-clock, beyond noise): rabbit_trace:trace/5 new"
                ),
                "{line}"
            );
        }
        n if n.starts_with("regressed, and") => {
            assert_eq!(c.overall.verdict, OverallVerdict::Regressed, "{line}");
            assert!(
                line.contains("; in the profile (cpu-clock): rabbit_trace:trace/5 new"),
                "{line}"
            );
        }
        n if n.starts_with("a busy-wait") => {
            let spin = row("beam_busy_wait");
            assert_eq!(spin.role, Role::Context);
            assert!(spin.changes[1].as_ref().unwrap().percent < -50.0);
            assert!(matches!(
                verdict("beam_busy_wait"),
                Verdict::NoChange { .. }
            ));
            assert_eq!(c.overall.verdict, OverallVerdict::NoChange, "{line}");
            assert!(!line.contains("better") && !line.contains("busy"), "{line}");
        }
        n if n.starts_with("single") => {
            assert_eq!(c.overall.verdict, OverallVerdict::CannotTell, "{line}");
            assert!(line.contains("(one run: noise unknown"), "{line}");
        }
        n if n.starts_with("too few runs measured") => {
            assert!(
                line.contains("latency p50 (too few repeats: 4 and 2 runs measured this figure"),
                "{line}"
            );
            assert!(line.contains("latency p99.9 (noise (±"), "{line}");
        }
        n if n.starts_with("groups of three") => {
            assert!(line.contains("(too few repeats: these groups"), "{line}");
        }
        n if n.starts_with("variants paired") => {
            assert_eq!(verdict("cpu_per_op"), Verdict::Regressed);
            let ch = row("cpu_per_op").changes[1].clone().unwrap();
            assert!(ch.paired.is_some(), "{ch:?}");
        }
        n if n.starts_with("variants whose") => {
            assert!(row("cpu_per_op").changes[1]
                .as_ref()
                .unwrap()
                .paired
                .is_none());
        }
        n if n.starts_with("not comparable") => {
            assert_eq!(c.overall.verdict, OverallVerdict::CannotTell, "{line}");
            assert!(
                line.contains("not comparable: runs of different loads"),
                "{line}"
            );
        }
        n if n.starts_with("under the resolution") => {
            assert!(matches!(
                verdict("rss"),
                Verdict::NoChange {
                    quiet: kiln_compare::Quiet::BelowResolution
                }
            ));
            assert!(matches!(
                verdict("cpu_per_op"),
                Verdict::NoChange {
                    quiet: kiln_compare::Quiet::BelowThreshold
                }
            ));
        }
        n if n.starts_with("three groups") => {
            assert_eq!(row("throughput").role, Role::Setting);
            assert_eq!(row("target_cpu").role, Role::Context);
            assert!(line.starts_with("r15k against r5k: improved."), "{line}");
        }
        n if n.starts_with("an external load") => {
            assert_eq!(row("target_cpu").role, Role::Outcome);
            assert_eq!(verdict("target_cpu"), Verdict::Regressed);
        }
        n => panic!("no check for case {n}"),
    }
}
