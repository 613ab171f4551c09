//! Writes the report of a synthetic one-hour run: 3,600 seconds of twenty load series
//! (rates and latency percentiles with spikes), the target's CPU by four thread groups,
//! memory and switches, and a CPU profile of 3.6 million samples' worth of seconds kept to
//! 360,000 samples (100 Hz), for the chart-density benchmark (bench/report/):
//!
//! ```text
//! cargo run --release -p kiln-report --example hour -- hour.html
//! ```
use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
use kiln_report::{write_run_report_file, ReportOptions};
use kiln_store::{Column, Headline, LoadInfo, RunData, RunMeta, SeriesTable, Window};

fn main() {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "hour.html".into());
    let s = 1_000_000_000u64;
    let t0 = 1_000 * s;
    let n = 3600usize;
    let time: Vec<u64> = (1..=n as u64).map(|i| t0 + i * s).collect();
    // A small deterministic generator: the series look like a real run's, with spikes.
    let mut x = 12345u64;
    let mut rnd = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut load = Vec::new();
    for k in 0..6 {
        load.push(Column {
            name: format!("rate{k}"),
            unit: "msg/s".into(),
            values: (0..n)
                .map(|i| {
                    Some(20000.0 + 3000.0 * (i as f64 / 300.0 + k as f64).sin() + 500.0 * rnd())
                })
                .collect(),
        });
    }
    for fam in [
        "consumer_latency",
        "consumer_latency_intended",
        "confirm_latency",
    ] {
        for (q, base) in [
            ("p50", 300.0),
            ("p99", 3000.0),
            ("p99.9", 9000.0),
            ("max", 20000.0),
        ] {
            load.push(Column {
                name: format!("{fam} {q}"),
                unit: "us".into(),
                values: (0..n)
                    .map(|i| {
                        let spike = if i % 397 == 0 { 40.0 } else { 1.0 };
                        Some(base * (1.0 + rnd()) * spike)
                    })
                    .collect(),
            });
        }
    }
    load.push(Column {
        name: "blocked".into(),
        unit: "bool".into(),
        values: (0..n)
            .map(|i| Some(if i % 600 < 5 { 1.0 } else { 0.0 }))
            .collect(),
    });
    let mut target = vec![
        Column {
            name: "rss".into(),
            unit: "bytes".into(),
            values: (0..n).map(|i| Some(1e8 + 1e4 * i as f64)).collect(),
        },
        Column {
            name: "voluntary switches".into(),
            unit: "1/s".into(),
            values: (0..n).map(|_| Some(5000.0 + 1000.0 * rnd())).collect(),
        },
    ];
    for g in ["scheduler", "dirty_io_sch", "poller", "aux"] {
        for part in ["user", "system"] {
            target.push(Column {
                name: format!("cpu {part}:{g}"),
                unit: "%".into(),
                values: (0..n).map(|_| Some(10.0 * rnd())).collect(),
            });
        }
    }
    let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    let names: Vec<Vec<u8>> = (0..400)
        .map(|i| format!("$mod{}:fun{}/{}", i % 40, i, i % 4).into_bytes())
        .collect();
    let th = p.thread(Some(1), Some(2), b"1_scheduler");
    let frames: Vec<_> = names.iter().map(|nm| p.frame(nm, FrameKind::Jit)).collect();
    for i in 0..(n as u64 * 100) {
        let a = (i * 7919) as usize % frames.len();
        let b = (i * 104729) as usize % frames.len();
        p.add_sample_path(
            &[frames[a / 10], frames[a], frames[b]],
            1,
            t0 + i * s / 100,
            th,
        );
    }
    let run = RunData {
        meta: RunMeta {
            name: "one hour".into(),
            id: Some(1),
            frequency: 100,
            cpus: 2,
            events: vec!["cpu-clock".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: t0,
                end_ns: t0 + n as u64 * s,
            },
            load: LoadInfo {
                protocol: "amqp".into(),
                unit: "msg".into(),
                ..Default::default()
            },
            headline: Headline {
                throughput: Some(20000.0),
                latency: Some("consumer_latency".into()),
                ..Default::default()
            },
            ..Default::default()
        },
        series: vec![
            SeriesTable {
                name: "load".into(),
                time_ns: time.clone(),
                columns: load,
            },
            SeriesTable {
                name: "target".into(),
                time_ns: time,
                columns: target,
            },
        ],
        profiles: vec![p],
        ..Default::default()
    };
    if let Err(e) =
        write_run_report_file(&run, &ReportOptions::default(), std::path::Path::new(&out))
    {
        eprintln!("hour: {e}");
        std::process::exit(1);
    }
    eprintln!("wrote {out}");
}
