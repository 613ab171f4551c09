//! Writes the HTML viewer of a folded-stacks file (used by `bench/viewer/`):
//! `folded2html IN.folded OUT.html [--title T] [--timed]`, or with two inputs and `--diff`
//! a differential viewer: `folded2html BEFORE AFTER OUT.html --diff`. `--timed` spreads
//! each line's count over that many samples, 1 ms apart on 4 threads, the shape of a
//! recording.
//!
//! The real entry point is `kiln flamegraph -o x.html`; this example keeps the benchmark
//! independent of the CLI and of the collapse crate.
use kiln_model::{FrameKind, Profile, ThreadId, NO_TIME};
use kiln_os::io::AtomicFile;
use kiln_viewer::{write_diff_html, write_html, HtmlOptions};
use std::io::BufRead;
use std::process::ExitCode;

fn read_folded(path: &str, timed: bool) -> Result<Profile, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut p = Profile::default();
    let mut frames = Vec::new();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            p.thread(
                Some(1),
                Some(100 + i),
                format!("{}_scheduler", i + 1).as_bytes(),
            )
        })
        .collect();
    let mut clock = 0u64;
    for (i, line) in std::io::BufReader::new(f).split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("{path}: {e}"))?;
        if line.is_empty() {
            continue;
        }
        let sp = line
            .iter()
            .rposition(|&b| b == b' ')
            .ok_or_else(|| format!("{path}:{}: no count after the stack", i + 1))?;
        let count: u64 = std::str::from_utf8(&line[sp + 1..])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("{path}:{}: the count is not a number", i + 1))?;
        frames.clear();
        for name in line[..sp].split(|&b| b == b';') {
            frames.push(p.frame(name, FrameKind::Unknown));
        }
        if timed {
            for _ in 0..count {
                clock += 1_000_000;
                let th = threads[(clock / 1_000_000 % 4) as usize];
                p.add_sample_path(&frames, 1, clock, th);
            }
        } else {
            p.add_sample_path(&frames, count, NO_TIME, ThreadId::NONE);
        }
    }
    Ok(p)
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let diff = args.iter().any(|a| a == "--diff");
    let timed = args.iter().any(|a| a == "--timed");
    let mut opts = HtmlOptions::default();
    let mut pos = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--diff" | "--timed" => {}
            "--title" => opts.title = it.next().ok_or("--title needs a value")?.clone(),
            _ => pos.push(a.clone()),
        }
    }
    let out = pos
        .last()
        .ok_or("usage: folded2html IN.folded [IN2.folded] OUT.html [--diff]")?;
    let mut file = AtomicFile::create(out).map_err(|e| format!("{out}: {e}"))?;
    if diff {
        if pos.len() != 3 {
            return Err("--diff needs BEFORE AFTER OUT.html".into());
        }
        let (a, b) = (read_folded(&pos[0], false)?, read_folded(&pos[1], false)?);
        write_diff_html(&a, &b, &opts, &mut file).map_err(|e| e.to_string())?;
    } else {
        if pos.len() != 2 {
            return Err("usage: folded2html IN.folded OUT.html".into());
        }
        let p = read_folded(&pos[0], timed)?;
        write_html(&p, &opts, &mut file).map_err(|e| e.to_string())?;
    }
    file.commit().map_err(|e| format!("{out}: {e}"))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}
