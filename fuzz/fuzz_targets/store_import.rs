//! An exported run (`.kiln`, an SQLite file) as `kiln runs import` and `run:` inputs read
//! it, with every row value hostile: blob sizes, codecs, kinds and names, blob data
//! (compressed or not, so the profile, series and attachment readers see any bytes), the
//! run's metadata, or the whole file. No panic, no abort, no allocation past the input
//! limit: every damage is an error.
#![no_main]
use kiln_model::{EventInfo, FrameKind, Profile};
use kiln_store::{
    Attachment, Column, RunData, RunMeta, SeriesTable, SqliteStore, Store, StoredHistogram,
};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// A store file with one run that has every kind of blob.
fn base() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("base.kiln");
        let mut p = Profile::new(EventInfo {
            name: "cpu-clock".into(),
            ..Default::default()
        });
        let th = p.thread(Some(1), Some(2), b"main");
        let frames = [p.frame(b"main", FrameKind::User), p.frame(b"leaf", FrameKind::User)];
        p.add_sample_path(&frames, 3, 1_000, th);
        let run = RunData {
            meta: RunMeta {
                name: "b".into(),
                group: "b@1".into(),
                ..Default::default()
            },
            series: vec![SeriesTable {
                name: "load".into(),
                time_ns: vec![1, 2],
                columns: vec![Column {
                    name: "sent".into(),
                    unit: "msg/s".into(),
                    values: vec![Some(1.0), None],
                }],
            }],
            histograms: vec![StoredHistogram {
                name: "latency".into(),
                window: "measure".into(),
                unit: "us".into(),
                data: vec![1, 2, 3],
            }],
            profiles: vec![p],
            attachments: vec![Attachment {
                name: "load.stdout".into(),
                data: b"hello".to_vec(),
            }],
        };
        let mut s = SqliteStore::open(&path).expect("a new store");
        s.save(&run).expect("a save");
        drop(s);
        let c = rusqlite::Connection::open(&path).expect("open");
        c.execute_batch("PRAGMA journal_mode = DELETE;").expect("no WAL");
        drop(c);
        std::fs::read(&path).expect("read back")
    })
}

fn word(d: &mut &[u8]) -> i64 {
    let mut b = [0u8; 8];
    let n = d.len().min(8);
    b[..n].copy_from_slice(&d[..n]);
    *d = &d[n..];
    i64::from_le_bytes(b)
}

/// A length byte and that many bytes (as many as there are).
fn take<'a>(d: &mut &'a [u8]) -> &'a [u8] {
    let Some((&n, rest)) = d.split_first() else {
        return &[];
    };
    let (v, r) = rest.split_at((n as usize).min(rest.len()));
    *d = r;
    v
}

fuzz_target!(|data: &[u8]| {
    // In memory where the system has it: a file per run, written and read at once.
    let dir = tempfile::Builder::new()
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("a temporary directory");
    let path = dir.path().join("x.kiln");
    let Some((&mode, mut d)) = data.split_first() else {
        return;
    };
    if mode == 0xff {
        std::fs::write(&path, d).expect("write");
    } else {
        std::fs::write(&path, base()).expect("write");
        let c = rusqlite::Connection::open(&path).expect("open");
        // One transaction, no syncs: the changes are the input, not what is tested.
        let _ = c.execute_batch("PRAGMA synchronous = OFF; BEGIN;");
        while let Some((&op, rest)) = d.split_first() {
            d = rest;
            let kind = ["profile", "series", "histogram", "attachment"][(op >> 4) as usize % 4];
            let _ = match op & 0x0f {
                0 => c.execute("UPDATE blobs SET size = ?1 WHERE kind = ?2", rusqlite::params![word(&mut d), kind]),
                1 => {
                    let raw = take(&mut d);
                    let z = zstd::bulk::compress(raw, 1).unwrap_or_default();
                    c.execute(
                        "UPDATE blobs SET data = ?1, size = ?2 WHERE kind = ?3",
                        rusqlite::params![z, raw.len() as i64, kind],
                    )
                }
                2 => c.execute("UPDATE blobs SET data = ?1 WHERE kind = ?2", rusqlite::params![take(&mut d), kind]),
                3 => c.execute(
                    "UPDATE blobs SET codec = ?1 WHERE kind = ?2",
                    rusqlite::params![String::from_utf8_lossy(take(&mut d)).into_owned(), kind],
                ),
                4 => c.execute(
                    "UPDATE blobs SET name = ?1 WHERE kind = ?2",
                    rusqlite::params![String::from_utf8_lossy(take(&mut d)).into_owned(), kind],
                ),
                5 => c.execute(
                    "UPDATE runs SET meta = ?1",
                    [String::from_utf8_lossy(take(&mut d)).into_owned()],
                ),
                6 => c.execute("UPDATE blobs SET kind = ?1 WHERE kind = ?2", rusqlite::params![["profile", "series", "histogram", "attachment", "x"][(word(&mut d) as usize) % 5], kind]),
                7 => {
                    let raw = take(&mut d);
                    c.execute(
                        "UPDATE blobs SET data = ?1, size = ?2, codec = 'none' WHERE kind = ?3",
                        rusqlite::params![raw, raw.len() as i64, kind],
                    )
                }
                _ => c.execute("PRAGMA user_version = 1", []),
            };
        }
        let _ = c.execute_batch("COMMIT;");
        drop(c);
    }
    // What `kiln runs import` reads, and what a profile input (`kiln collapse x.kiln`)
    // reads: errors are fine, a panic or an abort is not.
    if let Ok(mut s) = SqliteStore::open_existing(&path) {
        // Hostile sizes within the input limit must not cost gigabytes either.
        s.set_max_input(64 << 20);
        if let Ok(runs) = s.list() {
            for m in runs {
                if let Some(id) = m.id {
                    let _ = s.load(id);
                    let _ = s.resolve(&m.name);
                }
            }
        }
    }
    let _ = kiln_formats::read(Some(path.as_path()), &kiln_run::read_options(64 << 20));
});
