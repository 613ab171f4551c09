//! Hostile inputs end to end: compressed bombs, tampered exported runs, escape bytes in
//! names and in servers' answers, a pprof endpoint that never answers, a full disk during
//! a save, `kill -9` of kiln, a damaged store, a store read by another user, names that
//! look like ids. No input may make kiln abort, exhaust memory, rewrite the terminal, hang
//! a stop or lose a run.
use kiln_model::{EventInfo, FrameKind, Profile};
use kiln_store::{Attachment, RunData, RunMeta, RunStatus, SqliteStore, Store, Window};
use kiln_testkit::Started;
use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kiln_testkit::kiln_in as kiln;
use kiln_testkit::text;

/// Bytes a terminal would obey, or that reorder a line: none may come out of kiln.
fn assert_no_raw_controls(what: &str, out: &[u8]) {
    let s = text(out);
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\r'] {
        assert!(!s.contains(bad), "{what}: raw {bad:?} in {s:?}");
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A gzip file of a few hundred KiB that inflates to `mib` MiB: a pprof message's first
/// field, then a string field that runs on in zeros (gzip members, one per MiB of zeros,
/// as `gzip -c` concatenates them).
fn pprof_bomb(mib: u64) -> Vec<u8> {
    let mut head = vec![0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32];
    varint(mib << 20, &mut head);
    let mut out = gzip(&head);
    let zeros = gzip(&vec![0u8; 1 << 20]);
    for _ in 0..mib {
        out.extend_from_slice(&zeros);
    }
    out
}

/// A run as a store holds it, with names and texts as given (no check: an old kiln, a
/// hand-edited file or another tool could have written them).
fn stored_run(name: &str, note: Option<&str>, tags: &[(&str, &str)]) -> RunData {
    let mut p = Profile::new(EventInfo {
        name: "cpu-clock".into(),
        ..Default::default()
    });
    let th = p.thread(Some(1), Some(1), b"main");
    let frames = [
        p.frame(b"main", FrameKind::User),
        p.frame(b"evil\x1b]2;PWNED\x07", FrameKind::User),
    ];
    p.add_sample_path(&frames, 1_000_000, 1_000_000_000, th);
    RunData {
        meta: RunMeta {
            name: name.into(),
            group: format!("{name}@1"),
            repeat: (1, 1),
            started_unix_ms: 1_795_449_600_000,
            status: RunStatus {
                complete: true,
                reason: None,
            },
            command_line: vec!["kiln".into(), "run".into(), "--note".into()],
            note: note.map(String::from),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            host: "h\x1b[2J".into(),
            events: vec!["cpu-clock".into()],
            measure: Window {
                name: "measure".into(),
                start_ns: 1_000_000_000,
                end_ns: 2_000_000_000,
            },
            ..Default::default()
        },
        profiles: vec![p],
        attachments: vec![Attachment {
            name: "load.stdout\x1b[31m".into(),
            data: b"hello".to_vec(),
        }],
        ..Default::default()
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_input_limit_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.pb.gz");
    std::fs::write(&bomb, pprof_bomb(48)).unwrap();
    for cmd in [&["collapse"][..], &["flamegraph", "-o", "x.svg"], &["diff"]] {
        let mut c = kiln(&dir.path().join("none.db"));
        c.current_dir(dir.path()).args(cmd).arg(&bomb);
        if cmd[0] == "diff" {
            c.arg(&bomb);
        }
        let out = c.args(["--max-input", "16M"]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(
            err.contains("bomb.pb.gz': the inflated data exceeds the input limit of 16 MiB (--max-input raises it)"),
            "{cmd:?}: {err}"
        );
    }
    // On standard input too; and a limit raised lets it through to the pprof reader.
    let out = kiln(&dir.path().join("none.db"))
        .args(["collapse", "--max-input", "16M"])
        .write_stdin(std::fs::read(&bomb).unwrap())
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("'<stdin>': the inflated data exceeds"),
        "{}",
        text(&out.stderr)
    );
    let out = kiln(&dir.path().join("none.db"))
        .args(["collapse", "--max-input", "64M"])
        .arg(&bomb)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("not a valid") && !err.contains("exceeds"),
        "{err}"
    );
    // Zeros are no format: recognised as such from their first 64 KiB, not inflated on.
    let zeros = dir.path().join("zeros.gz");
    let member = gzip(&vec![0u8; 1 << 20]);
    std::fs::write(&zeros, member.repeat(48)).unwrap();
    kiln(&dir.path().join("none.db"))
        .args(["collapse", "--max-input", "16M"])
        .arg(&zeros)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("cannot tell the input format"));
    kiln(&dir.path().join("none.db"))
        .args(["collapse", "--max-input", "1.5G"])
        .arg(&zeros)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("expected a size"));
}

#[test]
fn a_stack_of_millions_of_frames_is_a_counted_skip() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("deep.folded");
    let mut data = "f;".repeat(1_100_000);
    data.push_str("leaf 1\nmain;ok 5\n");
    std::fs::write(&f, data).unwrap();
    let out = kiln(&dir.path().join("none.db"))
        .arg("collapse")
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "main;ok 5\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("deep.folded:1: stack deeper than")
            && err.contains("skipped 1: stack deeper than 1048576 frames"),
        "{err}"
    );
    kiln(&dir.path().join("none.db"))
        .args(["collapse", "--strict"])
        .arg(&f)
        .assert()
        .code(1);
}

#[test]
fn a_tampered_export_is_a_clear_error_everywhere_and_an_import_leaves_no_store() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.kiln");
    SqliteStore::open(&file)
        .unwrap()
        .save(&stored_run("b", None, &[]))
        .unwrap();
    let c = rusqlite::Connection::open(&file).unwrap();
    c.execute_batch("UPDATE blobs SET size = 4611686018427387904; PRAGMA journal_mode = DELETE;")
        .unwrap();
    drop(c);
    let new = dir.path().join("new.db");
    let out = kiln(&new)
        .current_dir(dir.path())
        .args(["runs", "import"])
        .arg(&file)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Cannot import run #1 of") && err.contains("exceeds the input limit of 1 GiB"),
        "{err}"
    );
    assert!(!new.exists(), "an import that failed left a store behind");
    for args in [
        vec!["collapse".to_string(), file.display().to_string()],
        vec!["collapse".to_string(), "run:b".to_string()],
        vec![
            "flamegraph".to_string(),
            file.display().to_string(),
            "-o".to_string(),
            "x.svg".to_string(),
        ],
        vec!["runs".to_string(), "show".to_string(), "b".to_string()],
    ] {
        let out = kiln(&file)
            .current_dir(dir.path())
            .args(&args)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("exceeds the input limit"), "{args:?}: {err}");
        // The message is said once.
        assert_eq!(err.matches("exceeds the input limit").count(), 1, "{err}");
    }
}

#[test]
fn names_and_texts_from_a_store_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    let evil = "esc\x1b]2;PWNED\x07\x1b[31mred";
    s.save(&stored_run(
        evil,
        Some("note \u{202e}txt.exe\r\nfake line"),
        &[("k\x1b[1m", "v\u{9b}2J")],
    ))
    .unwrap();
    s.save(&stored_run(&"long".repeat(25_000), None, &[]))
        .unwrap();
    drop(s);
    let list = kiln(&store).arg("runs").output().unwrap();
    assert!(list.status.success());
    assert_no_raw_controls("kiln runs", &list.stdout);
    let listed = text(&list.stdout);
    assert!(listed.contains("esc\\x1b]2;PWNED"), "{listed}");
    assert_eq!(listed.lines().count(), 3, "one line a run: {listed}");
    for reference in ["#1", "#2"] {
        let show = kiln(&store)
            .args(["runs", "show", reference])
            .output()
            .unwrap();
        assert!(show.status.success(), "{}", text(&show.stderr));
        assert_no_raw_controls("kiln runs show", &show.stdout);
        let shown = text(&show.stdout);
        assert!(shown.lines().all(|l| l.chars().count() < 1000), "{shown}");
        if reference == "#1" {
            assert!(
                shown.contains("note \\u{202e}txt.exe\\r\\nfake line")
                    && shown.contains("k\\x1b[1m=v\\u{9b}2J")
                    && shown.contains("evil\\x1b]2;PWNED\\x07")
                    && shown.contains("attachment 'load.stdout\\x1b[31m'"),
                "{shown}"
            );
        } else {
            assert!(shown.contains("… [100000 chars]"), "{shown}");
        }
    }
    let nope = kiln(&store)
        .args(["runs", "show", "nope"])
        .output()
        .unwrap();
    assert_eq!(nope.status.code(), Some(1));
    assert_no_raw_controls("a missing run's hint", &nope.stderr);
    assert!(
        text(&nope.stderr).contains("latest names:"),
        "{}",
        text(&nope.stderr)
    );
    let att = kiln(&store)
        .args(["runs", "attachment", "#1", "--list"])
        .output()
        .unwrap();
    assert_no_raw_controls("attachment list", &att.stdout);
    let rm = kiln(&store).args(["runs", "rm", "#1"]).output().unwrap();
    assert!(rm.status.success());
    assert_no_raw_controls("kiln runs rm", &rm.stderr);
    assert!(
        text(&rm.stderr).contains("removed run #1 'esc\\x1b]2;PWNED"),
        "{}",
        text(&rm.stderr)
    );
}

#[test]
fn names_are_checked_ids_are_distinct_and_rm_says_what_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let pid = std::process::id().to_string();
    for (name, says) in [
        ("", "cannot be empty"),
        ("3", "cannot be a number"),
        ("#3", "cannot start with '#'"),
        ("a\nb", "control or invisible formatting characters"),
        (
            "esc\x1b]2;PWNED\x07",
            "control or invisible formatting characters",
        ),
        ("a\u{202e}b", "control or invisible formatting characters"),
        (
            &"n".repeat(100_000),
            "at most 128 characters; this one has 100000",
        ),
    ] {
        let out = kiln(&store)
            .args(["run", "--name", name, "-p", &pid, "-d", "1"])
            .args(["exec", "--", "true"])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name:?}: {err}");
        assert!(err.contains(says), "{name:?}: {err}");
        assert_no_raw_controls("a refused name", &out.stderr);
        assert!(err.len() < 1000, "{err}");
    }
    kiln(&store)
        .args([
            "run", "--tag", "k=a\x1bb", "-p", &pid, "-d", "1", "exec", "--", "true",
        ])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("tag value cannot hold control"));
    assert!(!store.exists(), "nothing was run");

    // A store from before names were checked: run #4 is named "3".
    let mut s = SqliteStore::open(&store).unwrap();
    for n in ["a", "b", "c", "3"] {
        s.save(&stored_run(n, None, &[])).unwrap();
    }
    drop(s);
    kiln(&store)
        .args(["runs", "rm", "3"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "is both the id of run #3 ('c') and the name of another run: say #3 for the id or name:3 for the name",
        ));
    kiln(&store)
        .args(["runs", "rm", "name:3", "#1"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "removed run #4 '3' (2026-11-23 16:00 UTC)",
        ))
        .stderr(predicates::str::contains("removed run #1 'a'"));
    // Now "3" is the id only.
    kiln(&store)
        .args(["runs", "rm", "3"])
        .assert()
        .success()
        .stderr(predicates::str::contains("removed run #3 'c'"));
    let left: Vec<String> = SqliteStore::open_existing(&store)
        .unwrap()
        .list()
        .unwrap()
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(left, ["b"]);

    // `-o -` is standard output, here as everywhere.
    let out = kiln(&store)
        .current_dir(dir.path())
        .args(["runs", "export", "b", "-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.starts_with(b"SQLite format 3\0"));
    assert!(!dir.path().join("-").exists(), "a file named '-'");
    let back = dir.path().join("back.kiln");
    std::fs::write(&back, &out.stdout).unwrap();
    assert_eq!(
        SqliteStore::open_existing(&back).unwrap().list().unwrap()[0].name,
        "b"
    );
    let out = kiln(&store)
        .current_dir(dir.path())
        .args(["runs", "report", "b", "-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("<!DOCTYPE html>"));
    assert!(!dir.path().join("-").exists());
}

#[test]
fn a_damaged_store_is_refused_for_writing_untouched_and_readers_say_what_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    let mut i = 0;
    while std::fs::metadata(&store).unwrap().len() <= 32_768 {
        let mut r = stored_run(&format!("r{i}"), None, &[]);
        r.attachments[0].data = (0..20_000u32).flat_map(|x| x.to_le_bytes()).collect();
        s.save(&r).unwrap();
        i += 1;
    }
    drop(s);
    let bytes = std::fs::read(&store).unwrap();
    std::fs::write(&store, &bytes[..30_000]).unwrap();
    let before = std::fs::read(&store).unwrap();
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["5"]);
    let out = kiln(&store)
        .args(["run", "--name", "x", "-d", "1", "-p", &t.pid()])
        .args(["exec", "--", "true"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is damaged") && err.contains("30000 bytes"),
        "{err}"
    );
    assert!(!err.contains("measuring"), "refused before the run: {err}");
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "the damaged store was written"
    );
    for args in [
        &["runs"][..],
        &["runs", "show", "r0"],
        &["runs", "rm", "r0"],
    ] {
        let out = kiln(&store).args(args).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("is damaged: its size, 30000 bytes, is not a whole number"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

/// One run's metadata damaged in place (a NaN where kiln writes numbers, as a hand edit or
/// another tool would leave it): every command still works on the other runs; the run is
/// listed as damaged, with its field; naming it is an error that says so; `kiln runs check`
/// finds it, and once it is removed the store is whole.
#[test]
fn a_run_with_a_nan_among_good_ones_degrades_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    for (i, name) in ["good-a", "good-b", "broken", "good-c"].iter().enumerate() {
        let mut r = stored_run(name, None, &[]);
        r.meta.headline.throughput = Some(1000.0 + i as f64);
        r.meta.headline.p99_us = Some(250.0);
        s.save(&r).unwrap();
    }
    drop(s);
    let changed = rusqlite::Connection::open(&store)
        .unwrap()
        .execute(
            "UPDATE runs SET meta = replace(meta, '\"throughput\":1002.0', '\"throughput\":NaN') WHERE id = 3",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let run = |args: &[&str]| {
        let out = kiln(&store).args(args).output().unwrap();
        let (o, e) = (text(&out.stdout), text(&out.stderr));
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        (out.status.code(), o, e)
    };

    let (code, out, err) = run(&["runs"]);
    assert_eq!(code, Some(0), "{err}");
    for name in ["good-a", "good-b", "good-c"] {
        assert!(out.contains(name), "{out}");
    }
    let line = out.lines().find(|l| l.contains("broken")).expect(&out);
    assert!(
        line.trim_start().starts_with("3 ") && line.ends_with("DAMAGED"),
        "{line}"
    );
    assert!(
        err.contains("run #3 'broken' is damaged: metadata does not parse at headline.throughput"),
        "{err}"
    );
    let (code, out, _) = run(&["runs", "--json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 4);
    assert!(runs[2]["damaged"]
        .as_str()
        .unwrap()
        .contains("headline.throughput"));
    assert_eq!(runs[3]["headline"]["throughput"], 1003.0);

    let (code, out, err) = run(&["compare", "1", "2", "--table", "0"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("throughput"), "{out}");
    let (code, _, err) = run(&["compare", "good-a", "good-c", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");

    for args in [
        &["runs", "show", "3"][..],
        &["runs", "show", "broken"],
        &["compare", "3", "4"],
        &["compare", "4", "broken"],
        &["runs", "export", "3", "-o", "x.kiln"],
        &["flamegraph", "run:broken", "-o", "x.svg"],
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.contains(
                "run #3 ('broken') is damaged: metadata does not parse at headline.throughput"
            ),
            "{args:?}: {err}"
        );
    }

    let (code, out, err) = run(&["runs", "check"]);
    assert_eq!(code, Some(1), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("run #3 'broken' is damaged: metadata does not parse at headline.throughput: expected value"),
        "{out}"
    );
    assert!(
        err.contains("4 run(s) read") && err.contains("1 damaged"),
        "{err}"
    );

    let (code, _, err) = run(&["runs", "rm", "3"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("removed run #3 'broken'"), "{err}");
    let (code, out, err) = run(&["runs", "check"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.is_empty() && err.contains("0 damaged"), "{out} {err}");
}

/// Runs `kiln` as the unprivileged user `nobody` (setpriv), when this test runs as root.
fn as_nobody() -> Option<std::process::Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || kiln_testkit::which("setpriv").is_none() {
        kiln_testkit::skip("running kiln as another user needs root and setpriv");
        return None;
    }
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(kiln_testkit::kiln_bin());
    Some(c)
}

#[test]
fn a_store_in_a_read_only_directory_is_read_by_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let store = shared.join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    s.save(&stored_run("before", None, &[])).unwrap();
    drop(s);
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [(dir.path(), 0o755), (&shared, 0o755), (&store, 0o644)] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let before = std::fs::read(&store).unwrap();
    let Some(_) = as_nobody() else { return };
    let nobody = |args: &[&str]| {
        let out = as_nobody()
            .unwrap()
            .args(args)
            .env("KILN_STORE", &store)
            .current_dir(&shared)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = nobody(&["runs"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("before"), "{out}");
    let (code, out, err) = nobody(&["runs", "show", "before"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("run 'before' #1"), "{out}");
    let (code, out, err) = nobody(&["runs", "report", "before", "-o", "-"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("<!DOCTYPE html>"));
    let (code, out, err) = nobody(&["collapse", "run:before"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("main;evil"), "{out}");
    // Writing is refused with a reason, not attempted.
    let (code, _, err) = nobody(&["runs", "rm", "before"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("read-only for this user"), "{err}");
    assert_eq!(std::fs::read(&store).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["runs.db"], "nothing created beside the store");
}

#[test]
fn a_full_disk_during_the_save_keeps_the_run_where_kiln_says_and_it_imports() {
    if kiln_testkit::which("bash").is_none() {
        kiln_testkit::skip("bash is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["5"]);
    let bin = kiln_testkit::kiln_bin();
    // 2,000 KiB per file: the load's 12 MB of incompressible output cannot be saved.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -f 2000; exec '{}' run --name big -p {} -d 1 --no-report \
             exec -- sh -c 'head -c 12000000 /dev/urandom; exec sleep 600'",
            bin.display(),
            t.pid()
        ))
        .env("KILN_STORE", work.join("runs.db"))
        .env("TMPDIR", &tmp)
        .current_dir(&work)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    // Not killed by SIGXFSZ (rc 153): an error handled, the run kept, exit 1.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("could not save the run: run store '")
            && err.contains("runs.db': disk I/O error (File too large"),
        "{err}"
    );
    assert!(
        err.contains("the run is kept in kiln-unsaved-runs.db as #1 (its attachments (load.stdout, load.stderr")
            && err.contains("kiln runs import kiln-unsaved-runs.db --store '"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("stored in kiln-unsaved-runs.db as #1"));
    // No half-made fallback left in the temporary directory.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    let fresh = dir.path().join("fresh.db");
    kiln(&fresh)
        .current_dir(&work)
        .args(["runs", "import", "kiln-unsaved-runs.db"])
        .assert()
        .success();
    let s = SqliteStore::open_existing(&fresh).unwrap();
    let runs = s.list().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].name, "big");
    assert!(
        runs[0].warnings.iter().any(|w| w.contains("attachments")),
        "{:?}",
        runs[0].warnings
    );
    assert!(!s.load(runs[0].id.unwrap()).unwrap().profiles.is_empty());
}

#[test]
fn kill_9_of_kiln_leaves_no_load_process() {
    let dir = tempfile::tempdir().unwrap();
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["5"]);
    let bin = kiln_testkit::kiln_bin();
    // The load, and a process the load started: both must go with kiln.
    let marker = format!("60{}.5", std::process::id());
    let mut child = std::process::Command::new(&bin)
        .env("KILN_STORE", dir.path().join("runs.db"))
        .args(["run", "--name", "k9", "-d", "60", "-p", &t.pid()])
        .args(["exec", "--", "sh", "-c"])
        .arg(format!("sleep {marker} & exec sleep {marker}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("measuring") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "kiln ended early");
    }
    let running = || -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| text(&c) == format!("sleep\0{marker}\0"))
                    && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .is_ok_and(|s| s.contains(") Z "))
            })
            .collect()
    };
    let t0 = Instant::now();
    while running().len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the load never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let t0 = Instant::now();
    while !running().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the load outlived kiln: {:?}",
            running()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A server in the test on a free port of 127.0.0.1: each connection goes to `handle`
/// on a thread of its own, until the server is dropped.
struct Served {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Served {
    fn start(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Served {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = Arc::new(handle);
        std::thread::spawn(move || {
            for c in l.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(c) = c else { continue };
                let h = handle.clone();
                std::thread::spawn(move || h(c));
            }
        });
        Served { port, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A tiny HTTP server: answers each path with a canned status and body.
fn canned(answer: fn(&str) -> (u16, Vec<u8>)) -> Served {
    Served::start(move |mut c| {
        let mut buf = Vec::new();
        let mut b = [0u8; 4096];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match c.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        }
        // The request's body too (an OTLP export posts one): a socket closed with unread
        // bytes sends a reset, which can reach the client before the answer does.
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
        let head = text(&buf[..head_end]);
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match c.read(&mut b) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&b[..n]),
            }
        }
        let req = text(&buf[..head_end]);
        let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
        let (status, body) = answer(&path);
        let _ = write!(
            c,
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = c.write_all(&body);
    })
}

#[test]
fn server_answers_are_bounded_and_shown_escaped() {
    let server = canned(|path| {
        if path.ends_with("/heap") {
            (200, pprof_bomb(40))
        } else if path.ends_with("/mutex") {
            (
                500,
                format!("boom\x1b]2;PWNED\x07{}", "x".repeat(100_000)).into_bytes(),
            )
        } else {
            (200, b"<html>\x1b[31mnot a profile</html>".to_vec())
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["5"]);
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "answers",
            "-d",
            "1",
            "--no-report",
            "--max-input",
            "16M",
        ])
        .arg("-p")
        .arg(t.pid())
        .arg("--pprof")
        .arg(server.url("/debug/pprof/"))
        .args(["exec", "--", "sleep", "600"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_no_raw_controls("kiln run's warnings", &out.stderr);
    assert_no_raw_controls("kiln run's summary", &out.stdout);
    assert!(
        err.contains("/debug/pprof/heap at the window's start: '")
            && err.contains("exceeds the input limit of 16 MiB"),
        "{err}"
    );
    assert!(
        err.contains("HTTP 500 Internal Server Error: boom\\x1b]2;PWNED\\x07xxx")
            && err.contains("… [100014 bytes]"),
        "{err}"
    );
    assert!(
        err.contains("the answer is not a pprof profile: '<html>\\x1b[31mnot a profile</html>'"),
        "{err}"
    );
    assert!(err.lines().all(|l| l.chars().count() < 1000), "{err}");
}

#[test]
fn an_otlp_collectors_words_are_shown_escaped_and_cut() {
    let server = canned(|_| {
        (
            400,
            format!("bad\x1b[2J{}", "y".repeat(100_000)).into_bytes(),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.folded");
    std::fs::write(&f, "a;b 1\n").unwrap();
    let out = kiln(&dir.path().join("none.db"))
        .current_dir(dir.path())
        .arg("collapse")
        .arg(&f)
        .arg("--otlp-endpoint")
        .arg(server.url(""))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_no_raw_controls("the collector's answer", &out.stderr);
    assert!(
        err.contains("HTTP 400: bad\\x1b[2Jyyy") && err.contains("bytes]"),
        "{err}"
    );
    assert!(err.len() < 2000, "{}", err.len());
}

#[test]
fn a_hung_pprof_endpoint_never_holds_a_stop_and_the_run_is_stored() {
    let hung = kiln_testkit::FaultServer::start(kiln_testkit::Fault::NeverAnswers).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let exe = kiln_testkit::build_ticker(dir.path());
    let t = Started::new(&exe, &["5"]);
    let bin = kiln_testkit::kiln_bin();
    let mut child = std::process::Command::new(&bin)
        .env("KILN_STORE", &store)
        .args([
            "run",
            "--name",
            "hung",
            "-d",
            "30",
            "--no-report",
            "-p",
            &t.pid(),
        ])
        .arg("--pprof")
        .arg(hung.url("/debug/pprof/"))
        .args(["exec", "--", "sleep", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut lines = String::new();
    let mut line = String::new();
    // The window starts without waiting for the server's answers.
    while !line.contains("measuring") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "kiln ended: {lines}");
        lines.push_str(&line);
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    let took = t0.elapsed();
    lines.push_str(&rest);
    eprintln!("SIGINT to exit: {:.2} s", took.as_secs_f64());
    // Every fetch has a 10 s deadline of its own: the stop waited for none of them.
    assert!(took < Duration::from_secs(8), "{took:?}: {lines}");
    assert_eq!(status.code(), Some(130), "{lines}");
    assert!(out.contains("interrupted by SIGINT"), "{out}");
    assert!(
        lines.contains("no answer before the run was interrupted"),
        "{lines}"
    );
    // The progress line and the summary agree on the measured seconds.
    let progress: f64 = lines
        .lines()
        .rev()
        .filter_map(|l| l.split("(measured ").nth(1))
        .find_map(|r| r.split(' ').next()?.parse().ok())
        .expect("a progress line");
    let summary: f64 = out
        .split(" s measured")
        .next()
        .and_then(|h| h.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the summary's seconds");
    assert!(
        (progress - summary).abs() <= 1.0,
        "{progress} vs {summary}: {lines}\n{out}"
    );
    let s = SqliteStore::open_existing(&store).unwrap();
    assert_eq!(s.list().unwrap()[0].name, "hung");
}

/// An MQTT "broker" that accepts CONNECT, grants it, then sends what `after` gives.
fn fake_broker(after: &'static [u8]) -> Served {
    Served::start(move |mut c| {
        let mut b = [0u8; 1024];
        if matches!(c.read(&mut b), Ok(n) if n > 0) {
            let _ = c.write_all(&[0x20, 0x02, 0x00, 0x00]);
            std::thread::sleep(Duration::from_millis(300));
            let _ = c.write_all(after);
        }
        // Then silence, as long as the client stays.
        while matches!(c.read(&mut b), Ok(n) if n > 0) {}
    })
}

#[test]
fn mqtt_conn_names_every_drops_reason_and_sigterm_is_143_in_the_handshake() {
    // A remaining length of five bytes: no MQTT packet has one.
    let broker = fake_broker(&[0x30, 0xff, 0xff, 0xff, 0xff, 0x01]);
    let dir = tempfile::tempdir().unwrap();
    let out = kiln(&dir.path().join("none.db"))
        .args([
            "load",
            "mqtt",
            "conn",
            "-h",
            "127.0.0.1",
            "-c",
            "4",
            "-z",
            "2",
        ])
        .arg("-p")
        .arg(broker.port.to_string())
        .output()
        .unwrap();
    let summary = text(&out.stdout);
    assert!(summary.contains("dropped"), "{summary}");
    assert!(
        summary.contains("dropped: malformed packet from the broker: ") && summary.contains(" × 4"),
        "{summary}\n{}",
        text(&out.stderr)
    );
    drop(broker);
    // A broker that never answers CONNECT: SIGTERM in the handshake exits 143, sent once
    // both clients' CONNECTs have come.
    let connects = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = connects.clone();
    let broker = Served::start(move |mut c| {
        let mut b = [0u8; 1024];
        if matches!(c.read(&mut b), Ok(n) if n > 0) {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        while matches!(c.read(&mut b), Ok(n) if n > 0) {}
    });
    let bin = kiln_testkit::kiln_bin();
    let mut child = std::process::Command::new(&bin)
        .args([
            "load",
            "mqtt",
            "conn",
            "-h",
            "127.0.0.1",
            "-c",
            "2",
            "-z",
            "60",
        ])
        .arg("-p")
        .arg(broker.port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let connected = kiln_testkit::poll_until(Duration::from_secs(30), || {
        connects.load(Ordering::SeqCst) >= 2
    });
    assert!(connected.is_some(), "kiln's clients never sent CONNECT");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    drop(broker);
}

/// `kiln run` of `target` in `work` (its store `work/runs.db`), once it measures; its
/// standard error followed.
fn run_until_measuring(
    work: &std::path::Path,
    target: &Started,
) -> (std::process::Child, kiln_testkit::Lines) {
    let mut child = kiln_testkit::kiln_process()
        .env("KILN_STORE", work.join("runs.db"))
        .current_dir(work)
        .args([
            "run",
            "--name",
            "kept",
            "-d",
            "2",
            "--no-report",
            "--unwind",
            "copy",
        ])
        .args(["-p", &target.pid(), "exec", "--", "sleep", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = kiln_testkit::Lines::follow(child.stderr.take().unwrap());
    assert!(
        lines
            .wait_for(Duration::from_secs(300), |l| l.starts_with("measuring"))
            .is_some(),
        "kiln run never measured"
    );
    (child, lines)
}

/// The run in the fallback file `kiln-unsaved-runs.db` of `work`.
fn kept_run(work: &std::path::Path) -> Vec<RunMeta> {
    SqliteStore::open_existing(&work.join("kiln-unsaved-runs.db"))
        .unwrap()
        .list()
        .unwrap()
}

/// The store's `-shm` file made immutable while kiln measures: the save is refused
/// before SQLite writes through its mapping of it (which would end kiln with SIGBUS and
/// lose the run), and the run is kept in the fallback file.
#[test]
fn an_immutable_shm_file_keeps_the_run_elsewhere_instead_of_a_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let t = Started::new(std::path::Path::new("/bin/sleep"), &["600"]);
    let store = work.join("runs.db");
    SqliteStore::open(&store).unwrap();
    let (child, lines) = run_until_measuring(work, &t);
    let shm = work.join("runs.db-shm");
    let immutable = shm.exists()
        && std::process::Command::new("chattr")
            .arg("+i")
            .arg(&shm)
            .status()
            .is_ok_and(|s| s.success());
    let out = child.wait_with_output().unwrap();
    if immutable {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&shm)
            .status();
    } else {
        kiln_testkit::skip(
            "chattr +i does not work here (e2fsprogs, a file system with the immutable flag)",
        );
        return;
    }
    let err = lines.all();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the store's shared-memory file cannot be written"),
        "{err}"
    );
    assert_eq!(kept_run(work).len(), 1, "{err}");
}

/// SIGTERM while the store is locked by another process: kiln stops waiting for the lock
/// at once and keeps the run in the fallback file, saying why.
#[test]
fn sigterm_while_the_store_is_locked_keeps_the_run_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let t = Started::new(std::path::Path::new("/bin/sleep"), &["600"]);
    let store = work.join("runs.db");
    SqliteStore::open(&store).unwrap();
    let lock = rusqlite::Connection::open(&store).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (child, lines) = run_until_measuring(work, &t);
    // Waiting for the lock: the measurement is over.
    let mut lines = lines;
    assert!(lines
        .wait_for(Duration::from_secs(300), |l| l.starts_with("finishing"))
        .is_some());
    kiln_testkit::signal(child.id(), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let err = lines.all();
    drop(lock);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("database is locked: another process holds its lock, and kiln was asked to stop rather than wait for it"),
        "{err}"
    );
    assert_eq!(kept_run(work).len(), 1, "{err}");
}

/// A run as a save leaves it, with a throughput and latencies, named `name`.
fn measured_run(name: &str) -> RunData {
    let mut r = stored_run(name, None, &[]);
    r.meta.host = "h".into();
    r.meta.headline.throughput = Some(20_000.0);
    r.meta.headline.p50_us = Some(100.0);
    r.meta.headline.p99_us = Some(900.0);
    r.meta.headline.cpu_per_op_us = Some(12.0);
    r
}

/// Listing columns and the columns a run is found by, changed by hand around kiln:
/// impossible figures are never printed (the run is listed from its metadata), a renamed
/// row is damaged for every command alike, and `kiln runs check` names both kinds.
#[test]
fn listing_columns_changed_by_hand_are_never_shown_raw_and_check_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    for n in ["one", "two", "three", "four"] {
        s.save(&measured_run(n)).unwrap();
    }
    drop(s);
    let db = rusqlite::Connection::open(&store).unwrap();
    db.execute_batch(
        "UPDATE runs SET throughput = 1e300 WHERE id = 1;
         UPDATE runs SET cpu_per_op_us = -5.0 WHERE id = 2;
         UPDATE runs SET name = 'renamed' WHERE id = 3;
         UPDATE runs SET p99_us = 5.0 WHERE id = 4;",
    )
    .unwrap();
    drop(db);
    let list = kiln(&store).arg("runs").output().unwrap();
    let listed = text(&list.stdout);
    assert!(list.status.success(), "{}", text(&list.stderr));
    assert!(
        !listed.contains("e300") && !listed.contains("-5"),
        "{listed}"
    );
    let line = |id: &str| {
        listed
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no run {id}: {listed}"))
            .to_string()
    };
    assert!(line("1").contains("20.0k/s"), "{listed}");
    assert!(line("2").contains("12.0 µs"), "{listed}");
    assert!(
        line("3").contains("renamed") && line("3").ends_with("DAMAGED"),
        "{listed}"
    );
    let show = kiln(&store)
        .args(["runs", "show", "renamed"])
        .output()
        .unwrap();
    assert_eq!(show.status.code(), Some(1));
    assert!(
        text(&show.stderr).contains("its name column says 'renamed' but its metadata 'three'"),
        "{}",
        text(&show.stderr)
    );
    let check = kiln(&store).args(["runs", "check"]).output().unwrap();
    let found = text(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{found}");
    assert!(
        found.contains("run #3 'renamed' is damaged: its name column says 'renamed'"),
        "{found}"
    );
    assert!(
        found.contains(
            "run #4 'four' is damaged: its listing columns disagree with its metadata (p99"
        ),
        "{found}"
    );
    assert!(
        text(&check.stderr).contains("2 damaged"),
        "{}",
        text(&check.stderr)
    );
}

/// An attachment named with a megabyte (an imported run, another tool's store) is listed
/// cut, saying how long its name is.
#[test]
fn a_megabyte_attachment_name_is_listed_cut() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut r = stored_run("big-names", None, &[]);
    r.attachments[0].name = "n".repeat(1 << 20);
    SqliteStore::open(&store).unwrap().save(&r).unwrap();
    let out = kiln(&store)
        .args(["runs", "attachment", "big-names", "--list"])
        .output()
        .unwrap();
    let listed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(listed.len() < 2000, "{} bytes listed", listed.len());
    assert!(listed.contains("… [1048576 chars]\t5"), "{listed}");
}

/// An exported run whose attachment's name is not UTF-8 (a tampered file): importing it,
/// listing its attachments and checking it say so in kiln's words, never SQLite's.
#[test]
fn an_attachment_name_that_is_not_utf8_is_damage_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.kiln");
    SqliteStore::open(&file)
        .unwrap()
        .save(&stored_run("tampered", None, &[]))
        .unwrap();
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch(
            "UPDATE blobs SET name = CAST(X'6c6f6164ff2e73746f7574' AS TEXT) WHERE kind = 'attachment'",
        )
        .unwrap();
    let want = "attachment 'load\\xff.stout': its name is not UTF-8 text";
    let import = kiln(&dir.path().join("runs.db"))
        .args(["runs", "import"])
        .arg(&file)
        .output()
        .unwrap();
    let err = text(&import.stderr);
    assert_eq!(import.status.code(), Some(1), "{err}");
    assert!(
        err.contains(want) && !err.contains("Conversion error"),
        "{err}"
    );
    let list = kiln(&file)
        .args(["runs", "attachment", "tampered", "--list"])
        .output()
        .unwrap();
    assert!(text(&list.stderr).contains(want), "{}", text(&list.stderr));
    let check = kiln(&file).args(["runs", "check"]).output().unwrap();
    assert!(
        text(&check.stdout).contains(&format!("run #1 'tampered' is damaged: {want}")),
        "{}",
        text(&check.stdout)
    );
}

/// A run of `name` with six seconds of a load's rate, as `kiln run` keeps them.
fn run_with_seconds(name: &str, rate: f64) -> RunData {
    let mut r = measured_run(name);
    r.meta.load.completed = "received".into();
    r.meta.measure = Window {
        name: "measure".into(),
        start_ns: 1_000_000_000,
        end_ns: 7_000_000_000,
    };
    r.series = vec![kiln_store::SeriesTable {
        name: "load".into(),
        time_ns: (2..=7).map(|s| s * 1_000_000_000).collect(),
        columns: vec![kiln_store::Column {
            name: "received".into(),
            unit: "msg/s".into(),
            values: vec![Some(rate); 6],
        }],
    }];
    r
}

/// A window narrower than the run's seconds (`@1.0004-1.0005`) is named as given, not
/// `1s-1s`, and holds no second of its own: kiln compare says so rather than headline
/// 'no change beyond noise' over nothing.
#[test]
fn a_window_without_a_whole_second_is_an_error_named_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let mut s = SqliteStore::open(&store).unwrap();
    s.save(&run_with_seconds("a", 100.0)).unwrap();
    s.save(&run_with_seconds("b", 200.0)).unwrap();
    drop(s);
    let out = kiln(&store)
        .args(["compare", "a@1.0004-1.0005", "b@1.0004-1.0005"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{err}", text(&out.stdout));
    assert!(
        err.contains("window '1.0004s-1.0005s' of run 'a' (#1) holds no whole second"),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("no change beyond noise"));
    let ok = kiln(&store)
        .args(["compare", "a@1-3", "b@1-3", "--format", "json"])
        .output()
        .unwrap();
    kiln_testkit::succeeded(&ok);
}
