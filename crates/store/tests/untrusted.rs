//! Stores and exported runs as untrusted files: a tampered blob is an error, never an
//! abort; a damaged store is refused for writing and left as it is, and described to
//! readers; names and ids are told apart by one rule.
use kiln_store::{check_name, Reference, SqliteStore, Store, StoreError};
use std::path::Path;

mod common;
use common::run;

/// A store with one run, and a connection to change its rows behind kiln's back.
fn tampered(dir: &Path, sql: &str) -> std::path::PathBuf {
    let path = dir.join("b.kiln");
    let mut s = SqliteStore::open(&path).unwrap();
    s.save(&run("b", "g", 200)).unwrap();
    drop(s);
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(sql).unwrap();
    drop(c);
    path
}

#[test]
fn a_tampered_blob_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    for (sql, says) in [
        // What the probe did: 4 EiB, which `Vec::with_capacity` aborts on.
        (
            "UPDATE blobs SET size = 4611686018427387904 WHERE kind = 'profile'",
            "exceeds the input limit",
        ),
        (
            "UPDATE blobs SET size = -1 WHERE kind = 'profile'",
            "negative size",
        ),
        // Smaller than the data: the zstd frame says otherwise.
        (
            "UPDATE blobs SET size = 3 WHERE kind = 'profile'",
            "its size says 3 bytes",
        ),
        (
            "UPDATE blobs SET data = zeroblob(64) WHERE kind = 'profile'",
            "not zstd data",
        ),
        (
            "UPDATE blobs SET codec = 'none', size = 5 WHERE kind = 'profile'",
            "its size says 5 bytes but it holds",
        ),
        (
            "UPDATE blobs SET codec = 'lz\u{1b}[31m' WHERE kind = 'profile'",
            "unknown codec",
        ),
    ] {
        let sub = tempfile::tempdir_in(dir.path()).unwrap();
        let path = tampered(sub.path(), sql);
        let s = SqliteStore::open_existing(&path).unwrap();
        let id = s.list().unwrap()[0].id.unwrap();
        for outcome in [s.profiles(id).map(|_| ()), s.load(id).map(|_| ())] {
            let e = outcome.expect_err(sql);
            assert!(matches!(e, StoreError::Corrupt { .. }), "{sql}: {e:?}");
            let text = e.to_string();
            assert!(text.contains(says), "{sql}: {text}");
            assert!(!text.contains('\u{1b}'), "escaped: {text}");
        }
    }
}

#[test]
fn a_blob_that_inflates_past_its_size_stops_there() {
    // The frame's content size left out (a streamed frame) and the size lowered: the
    // data would inflate further than the row says.
    let dir = tempfile::tempdir().unwrap();
    let big = vec![7u8; 1 << 20];
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    std::io::Write::write_all(&mut enc, &big).unwrap();
    let frame = enc.finish().unwrap();
    let path = tampered(dir.path(), "SELECT 1");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute(
        "UPDATE blobs SET size = 1000, data = ?1 WHERE kind = 'attachment'",
        [&frame],
    )
    .unwrap();
    drop(c);
    let s = SqliteStore::open_existing(&path).unwrap();
    let e = s
        .load(s.list().unwrap()[0].id.unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("inflates to more than its size, 1000 bytes"),
        "{e}"
    );
}

#[test]
fn a_truncated_store_is_refused_for_writing_untouched_and_described_to_readers() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.db");
    let mut s = SqliteStore::open(&good).unwrap();
    let mut i = 0;
    while std::fs::metadata(&good).unwrap().len() <= 32_768 {
        s.save(&run(&format!("r{i}"), "g", 2_000)).unwrap();
        i += 1;
    }
    drop(s);
    let bytes = std::fs::read(&good).unwrap();
    assert!(bytes.len() > 32_768, "{}", bytes.len());
    // Cut mid-page, as the probe did (32,768 to 30,000 bytes).
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..30_000]).unwrap();
    let before = std::fs::read(&cut).unwrap();
    let e = SqliteStore::open(&cut).unwrap_err();
    assert!(matches!(e, StoreError::Damaged { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("is damaged")
            && text.contains("30000 bytes")
            && text.contains("left as it is"),
        "{text}"
    );
    assert!(SqliteStore::open_existing_to_write(&cut).is_err());
    let e = SqliteStore::open_existing(&cut).unwrap_err().to_string();
    assert!(e.contains("is damaged") && e.contains("cut short"), "{e}");
    assert_eq!(std::fs::read(&cut).unwrap(), before, "never written to");
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = cut.as_os_str().to_owned();
        p.push(suffix);
        assert!(!Path::new(&p).exists(), "{suffix} left beside it");
    }
}

#[test]
fn a_store_with_damaged_pages_is_refused_for_writing() {
    // Whole pages, but one of them overwritten: PRAGMA quick_check finds it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages.db");
    let mut s = SqliteStore::open(&path).unwrap();
    for i in 0..3 {
        s.save(&run(&format!("r{i}"), "g", 2_000)).unwrap();
    }
    drop(s);
    let mut bytes = std::fs::read(&path).unwrap();
    // Page 2 onward: the tables' b-tree pages.
    for b in &mut bytes[4096..4096 + 4096] {
        *b = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::Damaged { .. }), "{e:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "never written to");
}

#[test]
fn readers_open_read_only_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    SqliteStore::open(&path)
        .unwrap()
        .save(&run("a", "g", 10))
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let s = SqliteStore::open_existing(&path).unwrap();
    assert_eq!(s.list().unwrap().len(), 1);
    drop(s);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // An empty file is no store to a reader (and a reader makes it none).
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        SqliteStore::open_existing(&empty),
        Err(StoreError::NotAStore(_))
    ));
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

#[test]
fn ids_and_names_are_told_apart_by_one_rule() {
    assert_eq!(Reference::parse("#3"), Reference::Id(3));
    assert_eq!(Reference::parse("id:3"), Reference::Id(3));
    assert_eq!(Reference::parse("name:3"), Reference::Name("3"));
    assert_eq!(Reference::parse("3"), Reference::IdOrName(3, "3"));
    assert_eq!(Reference::parse("before"), Reference::Name("before"));
    assert_eq!(Reference::parse("+3"), Reference::Name("+3"));
    for bad in [
        "",
        "  ",
        "3",
        "#x",
        "id:x",
        "name:x",
        "a\nb",
        "esc\u{1b}]2;x\u{7}",
    ] {
        assert!(check_name(bad).is_err(), "{bad:?}");
    }
    assert!(check_name(&"n".repeat(129)).is_err());
    assert!(check_name(&"n".repeat(128)).is_ok());
    assert!(check_name("r3").is_ok() && check_name("before@2").is_ok());
    let e = check_name("a\u{202e}b").unwrap_err();
    assert!(e.contains("\\u{202e}") && !e.contains('\u{202e}'), "{e}");

    // A store written before names were checked: a run named "3" beside run #3.
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    let mut ids = Vec::new();
    for n in ["a", "b", "c", "3"] {
        ids.push(s.save(&run(n, n, 1)).unwrap());
    }
    let one = |r: &str| -> Vec<String> {
        s.resolve(r)
            .unwrap()
            .into_iter()
            .map(|m| format!("#{} {}", m.id.unwrap(), m.name))
            .collect()
    };
    assert_eq!(one("#3"), ["#3 c"]);
    assert_eq!(one("id:4"), ["#4 3"]);
    assert_eq!(one("name:3"), ["#4 3"]);
    assert_eq!(one("4"), ["#4 3"], "an id no name shadows");
    let e = s.resolve("3").unwrap_err();
    assert!(matches!(e, StoreError::Ambiguous { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("#3") && text.contains("name:3"), "{text}");
    assert!(s.resolve("#9").is_err());
}

#[test]
fn two_stores_in_one_process_keep_their_own_input_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered(dir.path(), "SELECT 1");
    let c = rusqlite::Connection::open(&path).unwrap();
    let largest: i64 = c
        .query_row(
            "SELECT max(size) FROM blobs WHERE kind = 'profile'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(c);
    let largest = largest as u64;
    let mut small = SqliteStore::open_existing(&path).unwrap();
    let mut large = SqliteStore::open_existing(&path).unwrap();
    // The small limit set first, the large one after: each store keeps its own.
    small.set_max_input(largest - 1);
    large.set_max_input(largest);
    let id = small.list().unwrap()[0].id.unwrap();
    let e = small.profiles(id).expect_err("read past its limit");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
    assert!(
        e.to_string().contains(&format!(
            "exceeds the input limit of {} (--max-input raises it",
            kiln_model::input::format_size(largest - 1)
        )),
        "{e}"
    );
    assert!(!large.profiles(id).unwrap().is_empty());
    assert!(small.profiles(id).is_err());
}
