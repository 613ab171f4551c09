//! Process and thread names that are not UTF-8, end to end on a real process: the kernel
//! cuts `comm` to 15 bytes, inside a multi-byte character when the executable is named
//! `aсервер-приложение`, and a thread may name itself any bytes (`spin\xff`). Such a
//! target is recorded, run and loaded like any other, and its names are shown with the
//! stray bytes escaped, never dropped.
use kiln_testkit::{kiln_in as kiln, runs, Started};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The kernel's cut of `aсервер-приложение`: 15 bytes, the last one half of `п`.
const COMM: &[u8] = b"a\xd1\x81\xd0\xb5\xd1\x80\xd0\xb2\xd0\xb5\xd1\x80-\xd0";
/// How kiln shows and stores it.
const COMM_SHOWN: &str = "aсервер-\\xd0";

/// The test program built as `aсервер-приложение` in `dir`, started, once its spinning
/// thread has named itself.
fn start_badnames(dir: &Path) -> (Started, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/badnames.c");
    let exe = kiln_testkit::build_c(
        dir,
        &src,
        "aсервер-приложение",
        &["-O1", "-pthread", "-fno-omit-frame-pointer"],
    );
    let t = Started::new(&exe, &[] as &[&str]);
    let pid = t.pid();
    let named = kiln_testkit::poll_until(Duration::from_secs(30), || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .any(|e| std::fs::read(e.path().join("comm")).is_ok_and(|c| c == b"spin\xff\n"))
            })
            .unwrap_or(false)
    });
    assert!(named.is_some(), "the thread never named itself");
    assert_eq!(
        std::fs::read(format!("/proc/{pid}/comm")).unwrap(),
        [COMM, b"\n"].concat(),
        "the kernel cut the name where this test expects"
    );
    (t, exe)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `kiln record -p` of the process: recorded (not "no process with PID"), its thread's
/// samples kept under the thread's own bytes.
#[test]
fn record_sees_a_process_and_thread_whose_names_are_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = start_badnames(dir.path());
    let folded = dir.path().join("out.folded");
    let out = kiln(&dir.path().join("runs.db"))
        .args(["record", "-d", "2", "-p", &t.pid(), "-o"])
        .arg(&folded)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    kiln_testkit::succeeded(&out);
    let data = std::fs::read(&folded).unwrap();
    let spin: Vec<&[u8]> = data
        .split(|&c| c == b'\n')
        .filter(|l| l.starts_with(b"spin\xff;"))
        .collect();
    assert!(
        spin.iter().any(|l| contains(l, b"spin_work")),
        "no sample of the spinning thread under its name: {}",
        String::from_utf8_lossy(&data)
    );
}

/// `kiln run -p … exec`: the run is complete (the target did not "exit before the
/// recording could start"), its target's name stored and shown with the cut byte
/// escaped.
#[test]
fn run_exec_stores_a_target_whose_name_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let (t, _) = start_badnames(dir.path());
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "cut",
            "-d",
            "2",
            "--no-report",
            "-p",
            &t.pid(),
        ])
        .args(["exec", "--", "sleep", "600"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    assert!(text.contains("run 'cut' #1 (complete)"), "{text}");
    // A thread named with terminal escapes: its name shown escaped, never obeyed.
    for bad in ['\u{1b}', '\u{7}'] {
        assert!(!text.contains(bad), "raw {bad:?} in {text:?}");
    }
    assert!(text.contains("\\x1b[2J\\x1b]0;PWNED\\x07"), "{text}");
    let shown = kiln(&store).args(["runs", "show", "#1"]).output().unwrap();
    let shown = kiln_testkit::succeeded(&shown);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(
        text.contains(&format!("target {COMM_SHOWN} (pid {})", t.pid())),
        "{text}"
    );
    let r = &runs(&store)[0];
    assert_eq!(r["status"]["complete"], true, "{r:#}");
    assert_eq!(r["target"]["comm"], COMM_SHOWN, "{r:#}");
    // The samples of the spinning thread are in the stored profile.
    let out = kiln(&store).args(["collapse", "run:#1"]).output().unwrap();
    kiln_testkit::succeeded(&out);
    let data = out.stdout;
    assert!(
        contains(&data, b"spin\xff;"),
        "{}",
        String::from_utf8_lossy(&data)
    );
}

/// `kiln run -p … load http`: stored; `kiln load http --target-pid`: the target's CPU and
/// switches counted (not "could not be read from /proc").
#[test]
fn run_load_http_stores_a_target_whose_name_is_not_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let (t, _) = start_badnames(dir.path());
    let server = kiln_testkit::FaultServer::start(kiln_testkit::Fault::None).unwrap();
    let out = kiln(&store)
        .args([
            "run",
            "--name",
            "cut-http",
            "-d",
            "2",
            "--no-report",
            "-p",
            &t.pid(),
        ])
        .args(["load", "http", "-c", "1", "-R", "50"])
        .arg(server.url("/"))
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    assert!(text.contains("run 'cut-http' #1 (complete)"), "{text}");
    let r = &runs(&store)[0];
    assert_eq!(r["target"]["comm"], COMM_SHOWN, "{r:#}");
    assert!(
        text.contains(&format!("target {COMM_SHOWN} (pid")),
        "{text}"
    );
    assert!(server.responses() > 0);

    let out = kiln(&store)
        .args([
            "load",
            "http",
            "-d",
            "2",
            "-c",
            "1",
            "-R",
            "50",
            "--target-pid",
            &t.pid(),
        ])
        .arg(server.url("/"))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let text = kiln_testkit::succeeded(&out);
    assert!(!text.contains("could not be read"), "{text}");
    // The spinning thread's CPU was counted: it spins, so well above nothing.
    let cpu = text
        .lines()
        .find_map(|l| {
            l.split_once("target CPU: ")?
                .1
                .split('%')
                .next()?
                .parse::<f64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no target CPU: {text}"));
    assert!(cpu > 0.0, "{text}");
}
