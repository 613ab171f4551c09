//! What `-o` does to what is already there, and what a signal leaves behind: device nodes,
//! FIFOs and links are written through, never replaced; planted links at temporary names
//! are never followed; failures and signals leave no temporary file; an output that is an
//! input is refused; a closed standard output is an error.
use predicates::prelude::*;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kiln_testkit::kiln;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn folded(dir: &Path) -> PathBuf {
    let p = dir.join("good.folded");
    fs::write(&p, "main;a;b 5\nmain;c 3\n").unwrap();
    p
}

fn mknod(path: &Path, mode: libc::mode_t, dev: libc::dev_t) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mknod(c.as_ptr(), mode, dev) };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

#[test]
fn a_device_node_stays_a_device_node() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let null = dir.path().join("mynull");
    mknod(&null, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
    kiln()
        .args([
            "flamegraph",
            input.to_str().unwrap(),
            "-o",
            null.to_str().unwrap(),
        ])
        .assert()
        .success();
    let ft = fs::symlink_metadata(&null).unwrap().file_type();
    assert!(ft.is_char_device(), "still a character device");
    assert_eq!(names(dir.path()), ["good.folded", "mynull"]);
}

#[test]
fn a_fifo_is_written_through_like_a_redirection() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let fifo = dir.path().join("pipe");
    mknod(&fifo, libc::S_IFIFO | 0o600, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    kiln()
        .args([
            "collapse",
            input.to_str().unwrap(),
            "-o",
            fifo.to_str().unwrap(),
        ])
        .assert()
        .success();
    assert_eq!(reader.join().unwrap(), "main;a;b 5\nmain;c 3\n");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_replaced_file_keeps_mode_links_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let out = dir.path().join("out.svg");
    fs::write(&out, "old").unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();
    let twin = dir.path().join("twin.svg");
    fs::hard_link(&out, &twin).unwrap();
    let link = dir.path().join("link.svg");
    symlink("out.svg", &link).unwrap();
    kiln()
        .args([
            "flamegraph",
            input.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ])
        .assert()
        .success();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let m = fs::metadata(&out).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600, "mode kept");
    assert_eq!(m.nlink(), 2, "hard link kept");
    assert!(fs::read_to_string(&twin).unwrap().contains("<svg"));
}

#[test]
fn planted_links_at_temporary_names_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let victim = dir.path().join("victim.txt");
    fs::write(&victim, "precious").unwrap();
    // Every name the old scheme could use for a child's pid soon after ours.
    let me = std::process::id();
    for pid in me..me + 200 {
        symlink(&victim, dir.path().join(format!(".out.svg.kiln-tmp-{pid}"))).unwrap();
    }
    kiln()
        .current_dir(dir.path())
        .args(["flamegraph", input.to_str().unwrap(), "-o", "out.svg"])
        .assert()
        .success();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(fs::read_to_string(dir.path().join("out.svg"))
        .unwrap()
        .contains("<svg"));
}

#[test]
fn a_directory_output_is_refused_without_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    fs::create_dir(dir.path().join("adir")).unwrap();
    kiln()
        .current_dir(dir.path())
        .args(["flamegraph", input.to_str().unwrap(), "-o", "adir"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("is a directory"));
    assert_eq!(names(dir.path()), ["adir", "good.folded"]);
}

#[test]
fn an_output_that_is_an_input_is_refused_unless_same_format() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    let before = fs::read(&input).unwrap();
    kiln()
        .args([
            "flamegraph",
            input.to_str().unwrap(),
            "-o",
            input.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("is the input"));
    assert_eq!(fs::read(&input).unwrap(), before, "profile untouched");
    let link = dir.path().join("alias.folded");
    symlink(&input, &link).unwrap();
    kiln()
        .args([
            "diff",
            input.to_str().unwrap(),
            input.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("is the input"));
    assert_eq!(fs::read(&input).unwrap(), before);
    // collapse folded -> folded reads the whole input first: allowed, and said.
    kiln()
        .args([
            "collapse",
            input.to_str().unwrap(),
            "-o",
            input.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("also the input"));
    assert_eq!(fs::read(&input).unwrap(), before);
    assert_eq!(names(dir.path()), ["alias.folded", "good.folded"]);
}

#[test]
fn a_closed_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = folded(dir.path());
    // Run through a shell so that descriptor 1 is really closed (`>&-`).
    let bin = kiln_testkit::kiln_bin();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' collapse '{}' >&-",
            bin.display(),
            input.display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is closed"));
    // /dev/null opened read-write (Python's subprocess.DEVNULL, service managers) is an
    // open standard output, and -o FILE needs none.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{bin}' collapse '{input}' 1<>/dev/null && '{bin}' flamegraph '{input}' -o '{svg}' >&-",
            bin = bin.display(),
            input = input.display(),
            svg = dir.path().join("x.svg").display(),
        ))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    assert!(dir.path().join("x.svg").is_file());
}

/// A folded profile big enough that rendering it takes a while (hundreds of ms).
fn big_input(dir: &Path) -> PathBuf {
    let p = dir.join("big.folded");
    let mut w = std::io::BufWriter::new(fs::File::create(&p).unwrap());
    for i in 0..200_000u32 {
        writeln!(
            w,
            "main;mod{};fn{};leaf{} {}",
            i % 97,
            i % 1013,
            i,
            1 + i % 7
        )
        .unwrap();
    }
    w.flush().unwrap();
    p
}

#[test]
fn signals_during_a_long_render_leave_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_input(dir.path());
    let bin = kiln_testkit::kiln_bin();
    // Different signals at different points of the command: reading, rendering, writing.
    let mut interrupted = 0;
    for (i, sig) in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
        .iter()
        .cycle()
        .take(9)
        .enumerate()
    {
        let out = dir.path().join(format!("out{i}.svg"));
        let mut child = std::process::Command::new(&bin)
            .args(["flamegraph", "--minwidth", "0"])
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(40 + 90 * i as u64));
        // SAFETY: signalling our own child by its PID.
        unsafe { libc::kill(child.id() as i32, *sig) };
        let t = Instant::now();
        let status = child.wait().unwrap();
        assert!(t.elapsed() < Duration::from_secs(60));
        match status.code() {
            Some(0) => assert!(out.exists(), "finished before the signal: output whole"),
            Some(c) => {
                assert_eq!(c, 128 + sig, "exit status after signal {sig}");
                assert!(!out.exists(), "no half output");
                interrupted += 1;
            }
            None => panic!("killed by the signal instead of handling it: {status:?}"),
        }
        let left: Vec<_> = names(dir.path())
            .into_iter()
            .filter(|n| n.contains("kiln-tmp"))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
    assert!(interrupted > 0, "no signal arrived while the command ran");
}

/// Runs `script` with `sh -c` in `dir`, `$KILN` the kiln binary and `$KILN_STORE` the
/// directory's store; its status must be 0.
fn sh(dir: &Path, script: &str) {
    let out = std::process::Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("KILN", kiln_testkit::kiln_bin())
        .env("KILN_STORE", dir.join("runs.db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Three runs of one name in the directory's store, as `kiln run` would have saved them.
fn stored_runs(dir: &Path) {
    use kiln_store::{Headline, RunData, RunMeta, RunStatus, SqliteStore, Store, Window};
    let mut s = SqliteStore::open(&dir.join("runs.db")).unwrap();
    for (i, t) in [100.0, 101.0, 99.0].into_iter().enumerate() {
        let mut p = kiln_model::Profile::new(kiln_model::EventInfo {
            name: "cpu-clock".into(),
            ..Default::default()
        });
        let th = p.thread(Some(1), Some(1), b"main");
        let f = [p.frame(b"main", kiln_model::FrameKind::User)];
        p.add_sample_path(&f, 1_000_000, 1_000_000_000, th);
        let run = RunData {
            meta: RunMeta {
                name: "nightly".into(),
                group: format!("nightly@{i}"),
                repeat: (1, 1),
                started_unix_ms: 1_795_449_600_000 + i as i64 * 86_400_000,
                status: RunStatus {
                    complete: true,
                    reason: None,
                },
                events: vec!["cpu-clock".into()],
                measure: Window {
                    name: "measure".into(),
                    start_ns: 1_000_000_000,
                    end_ns: 11_000_000_000,
                },
                headline: Headline {
                    throughput: Some(t),
                    ..Default::default()
                },
                ..Default::default()
            },
            profiles: vec![p],
            ..Default::default()
        };
        s.save(&run).unwrap();
    }
}

/// `-o /dev/stdout` (and `/dev/fd/1`, `/proc/self/fd/1`, `/dev/stderr`, `-`) writes to the
/// stream as it is: into a pipe, and into a file the shell redirected to, after what was
/// written there before and before what follows (`>` and `>>` as the shell asked); no
/// temporary file beside anything.
#[test]
fn standard_output_by_any_name_is_written_as_the_shell_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folded(d);
    stored_runs(d);
    let read = |name: &str| fs::read_to_string(d.join(name)).unwrap();

    // A report between a header and a footer, each of its names for standard output.
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "-"] {
        sh(
            d,
            &format!(
                "(echo header; \"$KILN\" runs report '#1' -o {name}; echo footer) > report.html"
            ),
        );
        let page = read("report.html");
        assert!(
            page.starts_with("header\n<!DOCTYPE html>"),
            "{name}: {}",
            &page[..40]
        );
        assert!(
            page.ends_with("</html>\nfooter\n") || page.ends_with("</html>footer\n"),
            "{name}"
        );
    }
    // Appended to what the file held.
    fs::write(d.join("log"), "before\n").unwrap();
    sh(
        d,
        "\"$KILN\" collapse good.folded -o /dev/stdout >> log; echo after >> log",
    );
    assert_eq!(read("log"), "before\nmain;a;b 5\nmain;c 3\nafter\n");
    // Into a pipe: the bytes, not a file named after the pipe.
    sh(
        d,
        "\"$KILN\" flamegraph good.folded -o /dev/stdout | cat > piped.svg",
    );
    assert!(read("piped.svg").contains("<svg"));
    sh(
        d,
        "\"$KILN\" collapse good.folded -o /dev/stderr 2> err.folded",
    );
    // With the diagnostics standard error carries before it.
    let err = read("err.folded");
    assert!(err.ends_with("skipped\nmain;a;b 5\nmain;c 3\n"), "{err}");
    // A run exported into a pipe is a store kiln reads back.
    sh(
        d,
        "\"$KILN\" runs export '#2' -o /dev/stdout | cat > two.kiln",
    );
    let out = kiln()
        .args(["runs", "--json", "--store"])
        .arg(d.join("two.kiln"))
        .output()
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()[0]["group"],
        "nightly@1"
    );
    // `kiln runs trend NAME -o -`: the report once, on standard output, in --format; no
    // file named `-`.
    sh(
        d,
        "\"$KILN\" runs trend nightly --format json -o - > trend.json",
    );
    let t: serde_json::Value = serde_json::from_str(&read("trend.json")).unwrap();
    assert!(t.is_object(), "{t}");
    sh(
        d,
        "\"$KILN\" runs trend nightly -o /dev/stdout --format markdown > trend.md",
    );
    assert!(!read("trend.md").trim_start().starts_with('{'));
    // (The store's own -wal and -shm files aside.)
    let left: Vec<String> = names(d)
        .into_iter()
        .filter(|n| !n.starts_with("runs.db-"))
        .collect();
    assert_eq!(
        left,
        [
            "err.folded",
            "good.folded",
            "log",
            "piped.svg",
            "report.html",
            "runs.db",
            "trend.json",
            "trend.md",
            "two.kiln"
        ]
    );
}
