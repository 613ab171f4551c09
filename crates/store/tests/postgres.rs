//! The shared run store against a real PostgreSQL server started here (Debian's
//! PostgreSQL 15, private directory, 127.0.0.1, a free port): the same round trips as the
//! SQLite store, writers at once, a newer schema refused, and a server stopped and started
//! again under a saving client.
use kiln_store::{PgStore, RunData, Saved, SqliteStore, Store, StoreError};
use kiln_testkit::Postgres;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;
use common::{
    assert_listing_is_the_metadatas, commands_are_added_to_a_saved_run,
    damaged_runs_degrade_one_at_a_time, folded, listing, listing_columns_agree_with_the_metadata,
    run,
};
use kiln_testkit::have_postgres;

/// The same run read back from two stores is the same run.
fn assert_same(a: &RunData, b: &RunData) {
    let mut am = a.meta.clone();
    let mut bm = b.meta.clone();
    am.id = None;
    bm.id = None;
    assert_eq!(am, bm);
    assert_eq!(a.series, b.series);
    assert_eq!(a.histograms, b.histograms);
    assert_eq!(a.attachments, b.attachments);
    assert_eq!(a.profiles.len(), b.profiles.len());
    for (x, y) in a.profiles.iter().zip(&b.profiles) {
        assert_eq!(x.event.name, y.event.name);
        assert_eq!(x.samples.time, y.samples.time);
        assert_eq!(folded(x), folded(y));
    }
}

fn sql(url: &str, statement: &str) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(statement).unwrap();
}

#[test]
fn runs_read_back_as_from_sqlite_and_references_resolve() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    pg.create_database("runs").unwrap();
    // With a password (trust authentication ignores it): never shown.
    let url = format!("postgres://kiln:s3cret@127.0.0.1:{}/runs", pg.port());
    let dir = tempfile::tempdir().unwrap();
    let mut lite = SqliteStore::open(&dir.path().join("runs.db")).unwrap();
    let mut s = kiln_store::open(Path::new(&url)).unwrap();
    assert_eq!(
        s.location(),
        Path::new(&format!("postgres://kiln@127.0.0.1:{}/runs", pg.port()))
    );
    assert!(s.local_file().is_none());

    let r = run("before", "g1", 500);
    let id = s.save(&r).unwrap();
    let lite_id = lite.save(&r).unwrap();
    drop(s);
    let s = kiln_store::open_existing(Path::new(&url)).unwrap();
    let back = s.load(id).unwrap();
    assert_eq!(back.meta.id, Some(id));
    let mut meta = r.meta.clone();
    meta.id = Some(id);
    assert_eq!(back.meta, meta);
    assert_same(&back, &r);
    assert_same(&back, &lite.load(lite_id).unwrap());
    assert_eq!(s.list().unwrap().len(), 1);
    assert_eq!(s.meta(id).unwrap(), back.meta);
    assert_eq!(s.profiles(id).unwrap().len(), 2);
    drop(s);

    // The same references as the SQLite store's test.
    let mut s = PgStore::open(&url).unwrap();
    let a = s.save(&run("x-before", "old", 1)).unwrap();
    let b1 = s.save(&run("x-before", "new", 1)).unwrap();
    let b2 = s.save(&run("x-before", "new", 1)).unwrap();
    let c = s.save(&run("after", "x", 1)).unwrap();
    let ids = |s: &PgStore, r: &str| -> Vec<i64> {
        s.resolve(r)
            .unwrap()
            .into_iter()
            .map(|m| m.id.unwrap())
            .collect()
    };
    assert_eq!(ids(&s, "x-before"), [b1, b2], "the latest group of a name");
    assert_eq!(ids(&s, &a.to_string()), [a]);
    assert_eq!(ids(&s, &format!("#{c}")), [c]);
    let e = s.resolve("nope").unwrap_err().to_string();
    assert!(e.contains("no run 'nope'") && e.contains("after"), "{e}");
    assert!(!e.contains("s3cret"), "{e}");
    s.remove(c).unwrap();
    assert!(s.resolve("after").is_err());
    assert!(matches!(s.remove(c), Err(StoreError::NoSuchRun { .. })));
    assert!(matches!(s.load(c), Err(StoreError::NoSuchRun { .. })));
    // Its blobs went with it.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let orphans: i64 = client
        .query_one(
            "SELECT count(*) FROM kiln.blobs WHERE run_id NOT IN (SELECT id FROM kiln.runs)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(orphans, 0);
    // The bytes are the SQLite store's: the same compressed blobs.
    let pg_blob: Vec<u8> = client
        .query_one(
            "SELECT data FROM kiln.blobs WHERE run_id = $1 AND kind = 'series'",
            &[&id],
        )
        .unwrap()
        .get(0);
    let lite_blob: Vec<u8> = rusqlite::Connection::open(dir.path().join("runs.db"))
        .unwrap()
        .query_row(
            "SELECT data FROM blobs WHERE run_id = ?1 AND kind = 'series'",
            [lite_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pg_blob, lite_blob);

    // Exported from PostgreSQL: the one-file SQLite store of `kiln runs export`.
    let file = dir.path().join("before.kiln");
    kiln_store::export(&s, &[id], &file).unwrap();
    let exported = SqliteStore::open_existing(&file).unwrap();
    let runs = exported.list().unwrap();
    assert_eq!(runs.len(), 1);
    assert_same(&exported.load(runs[0].id.unwrap()).unwrap(), &r);
}

#[test]
fn missing_newer_and_unreachable_stores_are_clear_errors() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("empty").unwrap();
    // A reading command creates nothing.
    let Err(e) = kiln_store::open_existing(Path::new(&url)) else {
        panic!("an empty database opened as a store");
    };
    assert!(matches!(e, StoreError::Missing { .. }), "{e}");
    assert!(e.to_string().contains("kiln run creates it"), "{e}");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let schemas: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'kiln'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(schemas, 0, "nothing created by a reader");

    // Written by a newer kiln: refused, untouched.
    PgStore::open(&url)
        .unwrap()
        .save(&run("a", "g", 5))
        .unwrap();
    sql(&url, "UPDATE kiln.schema_version SET version = 99");
    for e in [
        PgStore::open(&url).unwrap_err(),
        PgStore::open_existing(&url).unwrap_err(),
    ] {
        assert!(matches!(e, StoreError::Newer { found: 99, .. }), "{e}");
        assert!(e.to_string().contains("newer"), "{e}");
    }
    let runs: i64 = c
        .query_one("SELECT count(*) FROM kiln.runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(runs, 1);

    // A database that is not there, a password in the URL: named, password hidden.
    let bad = format!("postgres://kiln:s3cret@127.0.0.1:{}/nodb", pg.port());
    let e = PgStore::open(&bad).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, StoreError::Postgres { .. }), "{msg}");
    assert!(!e.is_unreachable(), "{msg}");
    assert!(
        msg.contains("database \"nodb\" does not exist") && !msg.contains("s3cret"),
        "{msg}"
    );
    // Nothing listening: unreachable after the bounded retry.
    let port = kiln_testkit::free_port().unwrap();
    let t = Instant::now();
    let e = PgStore::open_with(
        &format!("postgres://kiln:s3cret@127.0.0.1:{port}/x"),
        true,
        Duration::from_millis(800),
    )
    .unwrap_err();
    assert!(e.is_unreachable(), "{e}");
    assert!(e.to_string().contains("Connection refused"), "{e}");
    assert!(t.elapsed() >= Duration::from_millis(800), "retried");
    assert!(!e.to_string().contains("s3cret"), "{e}");
    // A reading command (kiln runs, compare, report) says so after its shorter retry.
    let t = Instant::now();
    let Err(e) = kiln_store::open_existing(Path::new(&format!("postgres://127.0.0.1:{port}/x")))
    else {
        panic!("a store with no server opened");
    };
    assert!(e.is_unreachable(), "{e}");
    assert!(t.elapsed() >= kiln_store::READ_RETRY, "retried");
    // Not a URL kiln takes.
    assert!(PgStore::open("postgres://[::1").is_err());
}

#[test]
fn two_writers_at_once_both_land() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    // A new database: both writers create the schema at once, too.
    let url = pg.create_database("shared").unwrap();
    let ids: Vec<Vec<i64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let url = &url;
                s.spawn(move || {
                    let mut st = PgStore::open(url).unwrap();
                    (0..15)
                        .map(|i| {
                            let mut r = run(&format!("w{w}-{i}"), &format!("w{w}-{i}"), 300);
                            r.meta.host = format!("machine-{w}");
                            st.save(&r).unwrap()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<i64> = ids.concat();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 30, "distinct ids");
    let st = PgStore::open_existing(&url).unwrap();
    let runs = st.list().unwrap();
    assert_eq!(runs.len(), 30);
    for m in &runs {
        let r = st.load(m.id.unwrap()).unwrap();
        assert_eq!(r.profiles.len(), 2);
        assert_eq!(r.profiles[0].samples.len(), 300);
        assert!(m
            .name
            .starts_with(&format!("w{}", &m.host["machine-".len()..])));
    }
}

#[test]
fn a_server_restarted_under_a_saving_client_loses_no_run() {
    if !have_postgres() {
        return;
    }
    let mut pg = Postgres::start().unwrap();
    let url = pg.create_database("restart").unwrap();
    let mut st = PgStore::open(&url).unwrap();
    st.save(&run("first", "first", 100)).unwrap();

    // Stopped between two saves, started again 1.5 s later: the save waits for it.
    pg.stop();
    let saved = std::thread::scope(|s| {
        let pg = &mut pg;
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            pg.start_again().unwrap();
        });
        st.save(&run("second", "second", 100))
    });
    let second = saved.expect("saved once the server is back");
    assert_eq!(st.meta(second).unwrap().name, "second");

    // Restarted again and again while one client saves run after run: every save
    // returns, and each run is there once, whole.
    let mut names = Vec::new();
    std::thread::scope(|s| {
        let pg = &mut pg;
        let restarter = s.spawn(move || {
            for _ in 0..3 {
                std::thread::sleep(Duration::from_millis(400));
                pg.restart().unwrap();
            }
        });
        let t = Instant::now();
        let mut i = 0;
        while !restarter.is_finished() || t.elapsed() < Duration::from_secs(1) {
            let name = format!("through-{i}");
            st.save(&run(&name, &name, 20_000)).unwrap();
            names.push(name);
            i += 1;
        }
    });
    let runs = st.list().unwrap();
    for n in &names {
        let found: Vec<_> = runs.iter().filter(|m| &m.name == n).collect();
        assert_eq!(found.len(), 1, "{n} saved once");
        let r = st.load(found[0].id.unwrap()).unwrap();
        assert_eq!(r.profiles[0].samples.len(), 20_000, "{n} whole");
    }
    assert_eq!(runs.len(), names.len() + 2);

    // Down for longer than the retries: kept in a local file, pushed once it is back.
    let dir = tempfile::tempdir().unwrap();
    let fallback = dir.path().join("kiln-unsaved-runs.db");
    st.set_retry(Duration::from_secs(1));
    pg.stop();
    let r = run("while-down", "while-down", 100);
    let saved = kiln_store::save_or_keep(&mut st, &r, std::slice::from_ref(&fallback)).unwrap();
    let Saved::Kept {
        id,
        file,
        error,
        left_out: None,
    } = saved
    else {
        panic!("saved with the server down: {saved:?}");
    };
    assert_eq!(file, fallback);
    assert!(error.is_unreachable(), "{error}");
    let local = SqliteStore::open_existing(&fallback).unwrap();
    assert_same(&local.load(id).unwrap(), &r);
    pg.start_again().unwrap();
    // What `kiln runs import` does.
    for m in local.list().unwrap() {
        st.save(&local.load(m.id.unwrap()).unwrap()).unwrap();
    }
    let pushed = st.resolve("while-down").unwrap();
    assert_eq!(pushed.len(), 1);
    assert_same(&st.load(pushed[0].id.unwrap()).unwrap(), &r);
    // With the server there, the same call stores.
    let again = kiln_store::save_or_keep(
        &mut st,
        &run("up", "up", 10),
        std::slice::from_ref(&fallback),
    )
    .unwrap();
    assert!(matches!(again, Saved::Stored(_)), "{again:?}");
}

#[test]
fn a_damaged_run_degrades_only_itself() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("damaged").unwrap();
    let mut s = PgStore::open(&url).unwrap();
    let exec = |statement: &str| sql(&url, &statement.replace("{runs}", "kiln.runs"));
    damaged_runs_degrade_one_at_a_time(&mut s, &exec);
    let s = PgStore::open_existing(&url).unwrap();
    assert_eq!(s.stored(kiln_store::Select::All).unwrap().len(), 5);
    assert_eq!(s.list().unwrap().len(), 2);
}

#[test]
fn listing_columns_agree_with_the_metadata_and_find_configurations() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("listing").unwrap();
    let mut s = PgStore::open(&url).unwrap();
    let exec = |statement: &str| sql(&url, &statement.replace("{runs}", "kiln.runs"));
    listing_columns_agree_with_the_metadata(&mut s, &exec);
}

#[test]
fn commands_run_after_a_save_are_added_to_the_run() {
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("added").unwrap();
    let mut s = PgStore::open(&url).unwrap();
    commands_are_added_to_a_saved_run(&mut s);
}

/// A database of the schema before the listing columns (version 1) is migrated by the
/// first kiln to open it, reader or writer (under the schema lock): every run's columns
/// filled from its metadata, checked, and the same lines listed as before.
#[test]
fn an_older_database_is_migrated_and_lists_the_same_lines() {
    use kiln_store::Select;
    if !have_postgres() {
        return;
    }
    let pg = Postgres::start().unwrap();
    let url = pg.create_database("old").unwrap();
    let mut s = PgStore::open(&url).unwrap();
    let ids = [
        s.save(&run("before", "g1", 5)).unwrap(),
        s.save(&run("broken", "g2", 1)).unwrap(),
        s.save(&run("after", "g3", 5)).unwrap(),
    ];
    sql(
        &url,
        &format!(
            "UPDATE kiln.runs SET meta = replace(meta, '\"throughput\":20000.0', '\"throughput\":-1e300') WHERE id = {}",
            ids[1]
        ),
    );
    let want = listing(&s, Select::All);
    assert!(want[1]
        .damaged
        .as_deref()
        .unwrap()
        .contains("a rate cannot be negative"));
    drop(s);
    sql(
        &url,
        "DROP TRIGGER runs_meta_changed ON kiln.runs; DROP FUNCTION kiln.runs_meta_changed();
         DROP INDEX kiln.runs_by_config;
         ALTER TABLE kiln.runs DROP COLUMN target_comm, DROP COLUMN load_text,
             DROP COLUMN throughput, DROP COLUMN p50_us, DROP COLUMN p99_us,
             DROP COLUMN cpu_per_op_us, DROP COLUMN config, DROP COLUMN damaged;
         UPDATE kiln.schema_version SET version = 1;",
    );
    let s = PgStore::open_existing(&url).unwrap();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let row = c
        .query_one(
            "SELECT (SELECT max(version) FROM kiln.schema_version), \
             (SELECT count(*) FROM kiln.runs WHERE config IS NULL AND damaged IS NULL)",
            &[],
        )
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (2, 0));
    assert_eq!(listing(&s, Select::All), want);
    assert_listing_is_the_metadatas(&s);
    let same: Vec<i64> = listing(&s, Select::Config(&want[0].config))
        .iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(same, [ids[0], ids[2]]);
}
