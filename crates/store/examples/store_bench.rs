//! The run store's speed, SQLite against PostgreSQL on the same machine, in the same run:
//! saving a run of 60 s at 999 Hz (two profiles, series, histograms), listing 1,000 runs
//! (what `kiln runs` reads) and loading one run. PostgreSQL is a private server started here
//! (Debian's PostgreSQL 15, 127.0.0.1, `kiln_testkit::Postgres`).
//!
//! ```text
//! cargo run --release -p kiln-store --example store_bench [ROUNDS]
//! ```
use kiln_model::{FrameKind, Profile};
use kiln_store::{
    Column, Headline, RunData, RunMeta, RunStatus, SeriesTable, SqliteStore, Store,
    StoredHistogram, Window,
};
use std::time::Instant;

/// A profile of `n` samples over 60 stacks of 12 frames.
fn profile(event: &str, n: u64) -> Profile {
    let mut p = Profile::new(kiln_model::EventInfo {
        name: event.into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(2), b"1_scheduler");
    for i in 0..n {
        let frames: Vec<_> = (0..12)
            .map(|d| {
                p.frame(
                    format!("mod:fun_{}_{}", d, (i + d) % 60).as_bytes(),
                    FrameKind::User,
                )
            })
            .collect();
        p.add_sample_path(&frames, 1_001_001, 1_000_000_000 + i * 1_001_001, th);
    }
    p
}

fn run(name: &str, samples: u64) -> RunData {
    let secs = 60usize;
    RunData {
        meta: RunMeta {
            name: name.into(),
            group: name.into(),
            repeat: (1, 1),
            started_unix_ms: 1_795_449_600_000,
            status: RunStatus {
                complete: true,
                reason: None,
            },
            command_line: "kiln run --name x -p 1 -d 60 load amqp -x 1 -y 1 -r 5000"
                .split(' ')
                .map(String::from)
                .collect(),
            host: "testbox".into(),
            kernel: "6.1.0".into(),
            cpus: 2,
            kiln_version: "0.1.0".into(),
            events: vec!["cpu-clock".into(), "offcpu".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: 1_000_000_000,
                end_ns: 61_000_000_000,
            },
            headline: Headline {
                throughput: Some(5000.0),
                p50_us: Some(310.0),
                p99_us: Some(1234.0),
                target_cpu_s: Some(47.0),
                ..Default::default()
            },
            tags: vec![("machine".into(), "testbox".into())],
            ..Default::default()
        },
        series: vec![SeriesTable {
            name: "load".into(),
            time_ns: (0..secs as u64).map(|s| (s + 2) * 1_000_000_000).collect(),
            columns: (0..8)
                .map(|c| Column {
                    name: format!("col{c}"),
                    unit: "msg/s".into(),
                    values: (0..secs).map(|s| Some((s * c) as f64 + 0.5)).collect(),
                })
                .collect(),
        }],
        histograms: vec![StoredHistogram {
            name: "consumer".into(),
            window: "measure".into(),
            unit: "us".into(),
            data: (0..4000u32).map(|i| (i * 7 % 251) as u8).collect(),
        }],
        profiles: vec![
            profile("cpu-clock", samples),
            profile("offcpu", samples / 4),
        ],
        attachments: Vec::new(),
    }
}

/// Median, min and max of `f` over `rounds` rounds, ms.
fn time(rounds: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    let mut t: Vec<f64> = (0..rounds)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    (t[t.len() / 2], t[0], t[t.len() - 1])
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9);
    let pg = kiln_testkit::Postgres::start().expect("PostgreSQL 15 installed");
    let url = pg.create_database("bench").expect("createdb");
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut stores: Vec<(&str, Box<dyn Store>)> = vec![
        (
            "SQLite",
            Box::new(SqliteStore::open(&dir.path().join("runs.db")).expect("sqlite")),
        ),
        (
            "PostgreSQL",
            kiln_store::open(std::path::Path::new(&url)).expect("postgres"),
        ),
    ];
    let big = run("big", 60_000);
    let small = run("small", 10);
    println!("{rounds} rounds each, ms: median (min–max)");
    // One store after the other, in the same process and minute.
    let mut results = vec![Vec::new(); stores.len()];
    for (i, (_, s)) in stores.iter_mut().enumerate() {
        for _ in 0..1000 {
            s.save(&small).expect("save");
        }
        let id = s.save(&big).expect("save");
        results[i].push((
            "save a 60 s run",
            time(rounds, || {
                s.save(&big).expect("save");
            }),
        ));
        results[i].push((
            "load it",
            time(rounds, || {
                s.load(id).expect("load");
            }),
        ));
        results[i].push((
            "list 1,000+ runs",
            time(rounds, || {
                assert!(s.list().expect("list").len() > 1000);
            }),
        ));
    }
    for (i, (name, _)) in stores.iter().enumerate() {
        for (what, (med, min, max)) in &results[i] {
            println!("{name:>10}  {what:<18} {med:8.1} ({min:.1}–{max:.1})");
        }
    }
}
