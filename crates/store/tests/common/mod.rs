//! Runs to save, shared by the stores' tests.
#![allow(dead_code)]
use kiln_model::{FrameKind, Profile};
use kiln_store::{
    Attachment, Column, Headline, Histogram, RunData, RunMeta, RunStatus, SeriesTable, Window,
};

pub fn profile(event: &str, n: u64) -> Profile {
    let mut p = Profile::new(kiln_model::EventInfo {
        name: event.into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(2), b"1_scheduler");
    for i in 0..n {
        let frames = [
            p.frame(b"main", FrameKind::User),
            p.frame(format!("f{}", i % 50).as_bytes(), FrameKind::User),
            p.frame(b"leaf \xff bytes", FrameKind::Kernel),
        ];
        p.add_sample_path(&frames, 1_001_001, 1_000_000_000 + i * 1_001_001, th);
    }
    p
}

pub fn run(name: &str, group: &str, samples: u64) -> RunData {
    RunData {
        meta: RunMeta {
            name: name.into(),
            group: group.into(),
            repeat: (1, 1),
            started_unix_ms: 1_795_449_600_000,
            status: RunStatus {
                complete: true,
                reason: None,
            },
            command_line: vec!["kiln".into(), "run".into()],
            host: "h".into(),
            kernel: "6".into(),
            cpus: 2,
            kiln_version: "0".into(),
            events: vec!["cpu-clock".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: 1_000_000_000,
                end_ns: 31_000_000_000,
            },
            headline: Headline {
                throughput: Some(20_000.0),
                p99_us: Some(1234.0),
                ..Default::default()
            },
            note: Some("<b>note</b> & \"quotes\"".into()),
            tags: vec![("sbwt".into(), "none".into())],
            ..Default::default()
        },
        series: vec![SeriesTable {
            name: "load".into(),
            time_ns: vec![2_000_000_000, 3_000_000_000],
            columns: vec![Column {
                name: "received".into(),
                unit: "msg/s".into(),
                values: vec![Some(19_999.5), None],
            }],
        }],
        histograms: vec![Histogram {
            name: "consumer".into(),
            window: "measure".into(),
            unit: "us".into(),
            data: vec![1, 2, 3, 0, 255],
        }],
        profiles: vec![profile("cpu-clock", samples), profile("offcpu", 3)],
        attachments: vec![Attachment {
            name: "load.stdout".into(),
            data: b"Requests/sec: 1".to_vec(),
        }],
    }
}

pub fn folded(p: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
        .write(p, &mut out)
        .unwrap();
    out
}
