//! Python frames read from the interpreter, against py-spy as the oracle, and kiln's table
//! of layouts against the interpreters' own headers.
//!
//! The interpreters: Debian's `python3` (3.11), and every interpreter listed in
//! `KILN_PYTHONS` (paths separated by `:`, e.g. pyenv's 3.10, 3.12 and 3.13).
#![cfg(feature = "bpf")] // the frames are read by the in-kernel sampler
mod common;

use common::programs;
use kiln_model::{FrameKind, Profile};
use kiln_record::{record, RecordOptions, StartGate, Target, UnwindMode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The interpreters to check: Debian's, then those of `KILN_PYTHONS`.
fn interpreters() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("/usr/bin/python3")];
    if let Some(extra) = std::env::var_os("KILN_PYTHONS") {
        v.extend(std::env::split_paths(&extra).filter(|p| !p.as_os_str().is_empty()));
    }
    v
}

/// py-spy: `KILN_PY_SPY`, the virtual environment scripts/install-deps.sh makes, or PATH.
fn py_spy() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("KILN_PY_SPY").map(PathBuf::from),
        Some(PathBuf::from("/opt/kiln-py-spy/bin/py-spy")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .or_else(|| {
            Command::new("py-spy")
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| PathBuf::from("py-spy"))
        })
}

/// A Python program the test started, killed by its pid when dropped.
struct Program(Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `python` on tests/programs/threads.py and waits for its `ready`.
fn start_threads(python: &Path) -> Program {
    let mut child = Command::new(python)
        .arg(programs().join("threads.py"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", python.display()));
    let mut out = kiln_testkit::Lines::follow(child.stdout.take().unwrap());
    let program = Program(child);
    out.wait_for(Duration::from_secs(30), |l| l == "ready")
        .expect("the Python program says it is ready");
    program
}

/// `hot_loop (threads.py:7)` → `hot_loop (threads.py)`: functions, whatever the line.
fn function(frame: &str) -> String {
    match frame.rsplit_once(" (") {
        Some((name, file)) => {
            let file = file.trim_end_matches(')');
            let file = file.rsplit_once(':').map_or(file, |(f, _)| f);
            format!("{name} ({file})")
        }
        None => frame.to_string(),
    }
}

/// Per innermost Python function, the samples of kiln's profile; and the Python frames
/// of every sample's stack that has some, root first.
fn kiln_leaves(p: &Profile) -> (BTreeMap<String, u64>, Vec<Vec<String>>) {
    let mut leaves = BTreeMap::new();
    let mut stacks = Vec::new();
    for i in 0..p.samples.len() {
        let mut frames = Vec::new();
        let mut s = Some(p.samples.stack[i]);
        while let Some(id) = s {
            let f = p.stacks.frame(id);
            frames.push((
                String::from_utf8_lossy(p.frame_name(f)).into_owned(),
                p.frames.get(f).kind,
            ));
            s = p.stacks.parent(id);
        }
        frames.reverse();
        let python: Vec<String> = frames
            .iter()
            .filter(|(_, k)| *k == FrameKind::Python)
            .map(|(n, _)| n.clone())
            .collect();
        if let Some(leaf) = python.last() {
            *leaves.entry(function(leaf)).or_default() += p.samples.weight[i];
            assert!(
                !frames
                    .iter()
                    .any(|(n, _)| n.starts_with("_PyEval_EvalFrameDefault")),
                "an evaluation-loop frame is left beside Python frames: {frames:?}"
            );
            stacks.push(python);
        }
    }
    (leaves, stacks)
}

/// Per innermost function, the samples of py-spy's raw output (folded stacks).
fn py_spy_leaves(raw: &str) -> BTreeMap<String, u64> {
    let mut leaves = BTreeMap::new();
    for line in raw.lines().filter(|l| !l.is_empty()) {
        let (stack, n) = line.rsplit_once(' ').expect("a folded line");
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *leaves.entry(function(leaf)).or_default() += n.parse::<u64>().expect("a count");
    }
    leaves
}

/// Records the program for `secs` seconds with kiln (in the kernel, at 97 Hz) and with
/// `py-spy record --gil` (the thread holding the GIL: the one running Python code, as a
/// CPU sample sees it) over the same seconds, at the same rate.
fn record_both(pid: u32, py_spy: &Path, secs: u64, dir: &Path) -> (Profile, String) {
    let mut opts = RecordOptions::new(Target::Pids(vec![pid]));
    opts.frequency = 97;
    opts.duration = Some(Duration::from_secs(secs));
    opts.unwind = UnwindMode::Kernel;
    let gate = StartGate::default();
    opts.gate = Some(gate.clone());
    let kiln = std::thread::spawn(move || record(&opts));
    assert!(
        kiln_testkit::poll_until(Duration::from_secs(120), || gate.ready.is_raised()).is_some(),
        "kiln's recorder got ready"
    );
    let raw = dir.join("py-spy.txt");
    let spy = Command::new(py_spy)
        .args(["record", "--gil", "-f", "raw", "-r", "97", "-d"])
        .arg(secs.to_string())
        .arg("-p")
        .arg(pid.to_string())
        .arg("-o")
        .arg(&raw)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("py-spy starts");
    gate.go.raise();
    let rec = kiln.join().unwrap().expect("kiln records");
    let out = spy.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "py-spy failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = &rec.summary.python;
    assert_eq!(summary.processes.len(), 1, "{summary:?}");
    eprintln!("kiln: {summary:?}");
    let p = rec.profiles.into_iter().next().unwrap();
    (p, std::fs::read_to_string(&raw).unwrap())
}

/// kiln's and py-spy's shares of each innermost Python function agree within three
/// standard errors of their sample counts (their difference's, from the pooled share), or
/// within 8 points;
/// both say the same function is first, and it is `hot_loop`. Functions with less than
/// 5% of either side's samples are too rare for the normal approximation to hold.
fn compare(kiln: &BTreeMap<String, u64>, spy: &BTreeMap<String, u64>) -> Result<(), String> {
    let (nk, ns) = (kiln.values().sum::<u64>(), spy.values().sum::<u64>());
    let mut report = format!("kiln: {nk} samples, py-spy: {ns}\n");
    if nk < 50 || ns < 50 {
        return Err(format!("too few samples with Python frames\n{report}"));
    }
    let top = |m: &BTreeMap<String, u64>| m.iter().max_by_key(|(_, &n)| n).map(|(k, _)| k.clone());
    let mut ok = top(kiln) == top(spy) && top(kiln).is_some_and(|f| f.starts_with("hot_loop "));
    let names: std::collections::BTreeSet<&String> = kiln.keys().chain(spy.keys()).collect();
    for f in names {
        let (a, b) = (
            kiln.get(f).copied().unwrap_or(0),
            spy.get(f).copied().unwrap_or(0),
        );
        let (pa, pb) = (a as f64 / nk as f64, b as f64 / ns as f64);
        let p = (a + b) as f64 / (nk + ns) as f64;
        let se = (p * (1.0 - p) * (1.0 / nk as f64 + 1.0 / ns as f64)).sqrt();
        let z = (pa - pb).abs() / se.max(f64::MIN_POSITIVE);
        let counted = pa >= 0.05 || pb >= 0.05;
        // Or within 8 points: on a machine busy with other work the two sample different
        // things — py-spy counts a thread waiting for a CPU as active, cpu-clock only a
        // thread on one — and thousands of samples make a few points "significant".
        ok &= !counted || z <= 3.0 || (pa - pb).abs() <= 0.08;
        report += &format!(
            "  {pa:6.3} {pb:6.3}  z={z:4.1}{}  {f}\n",
            if counted { "" } else { " (rare)" }
        );
    }
    if ok {
        eprint!("{report}");
        Ok(())
    } else {
        Err(report)
    }
}

#[test]
fn kiln_reads_the_python_functions_py_spy_reads() {
    let Some(spy) = py_spy() else {
        kiln_testkit::skip("py-spy is not installed (scripts/install-deps.sh --tests)");
        return;
    };
    for python in interpreters() {
        eprintln!("{}", python.display());
        let dir = tempfile::tempdir().unwrap();
        let program = start_threads(&python);
        let (p, raw) = record_both(program.0.id(), &spy, 10, dir.path());
        drop(program);
        let (kiln, stacks) = kiln_leaves(&p);
        let spy_leaves = py_spy_leaves(&raw);
        if let Err(e) = compare(&kiln, &spy_leaves) {
            panic!("{}: kiln and py-spy disagree\n{e}", python.display());
        }
        // Each sample's Python frames read from the root as the program calls them.
        let main = [
            "<module> (threads.py:",
            "main (threads.py:",
            "handle (threads.py:",
            "hot_loop (threads.py:",
        ];
        let hot = stacks
            .iter()
            .filter(|s| s.last().is_some_and(|f| f.starts_with("hot_loop ")))
            .collect::<Vec<_>>();
        assert!(!hot.is_empty());
        for s in &hot {
            assert!(
                s.len() == main.len() && s.iter().zip(main).all(|(f, m)| f.starts_with(m)),
                "{}: a hot_loop stack: {s:?}",
                python.display()
            );
        }
        let background = stacks
            .iter()
            .filter(|s| s.last().is_some_and(|f| f.starts_with("other_work ")))
            .collect::<Vec<_>>();
        assert!(!background.is_empty());
        for s in &background {
            let n = s.len();
            assert!(
                n >= 3
                    // 3.10's code objects have no qualified name: `_bootstrap`.
                    && s[0].contains("_bootstrap (threading.py:")
                    && s[n - 2].starts_with("background (threads.py:"),
                "{}: an other_work stack: {s:?}",
                python.display()
            );
        }
    }
}

/// The include directory of `python`'s headers.
fn include_dir(python: &Path) -> PathBuf {
    let out = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['include'])",
        ])
        .output()
        .expect("the interpreter runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn layouts_match_the_interpreters_headers() {
    for python in interpreters() {
        let include = include_dir(&python);
        assert!(
            include.join("internal/pycore_runtime.h").is_file(),
            "{}: no headers in {} (Debian: python3-dev)",
            python.display(),
            include.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("offsets");
        let st = Command::new("cc")
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}/internal", include.display()))
            .arg("-o")
            .arg(&exe)
            .arg(programs().join("python_offsets.c"))
            .status()
            .expect("cc runs");
        assert!(
            st.success(),
            "compiling python_offsets.c for {}",
            python.display()
        );
        let out = kiln_testkit::succeeded(&Command::new(&exe).output().unwrap());
        let v: BTreeMap<&str, u64> = out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k, v.parse().unwrap()))
            .collect();
        let l = kiln_record::python::layout(v["major"] as u8, v["minor"] as u8)
            .unwrap_or_else(|| panic!("kiln knows {}'s version: {v:?}", python.display()));
        let opt = |k: &str| v.get(k).map(|&x| x as u16);
        let mine: BTreeMap<&str, Option<u16>> = [
            ("runtime_interp_head", Some(l.runtime_interp_head)),
            ("interp_threads", Some(l.interp_threads)),
            ("tstate_next", Some(l.tstate_next)),
            ("tstate_thread_id", Some(l.tstate_thread_id)),
            ("tstate_frame", Some(l.tstate_frame)),
            ("cframe_frame", l.cframe_frame),
            ("frame_code", Some(l.frame_code)),
            ("frame_previous", Some(l.frame_previous)),
            ("frame_instr", Some(l.frame_instr)),
            ("frame_entry", l.frame_entry),
            ("frame_owner", l.frame_owner),
            ("shim_owner", l.shim_owner.map(u16::from)),
            ("code_name", Some(l.code_name)),
            ("code_filename", Some(l.code_filename)),
            ("code_first_line", Some(l.code_first_line)),
            ("code_line_table", Some(l.code_line_table)),
            ("code_bytecode", l.code_bytecode),
            ("ascii_size", Some(l.ascii_size)),
            ("compact_size", Some(l.compact_size)),
        ]
        .into_iter()
        .collect();
        let theirs: BTreeMap<&str, Option<u16>> = mine.keys().map(|&k| (k, opt(k))).collect();
        assert_eq!(mine, theirs, "{}'s layout", python.display());
        assert_eq!(l.instr_is_index, v["minor"] < 11);
    }
}
