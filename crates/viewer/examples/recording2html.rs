//! Writes the HTML viewer of a synthetic recording (used by `bench/viewer/chart.sh`):
//! `recording2html IN.tsv OUT.html [--flamechart]`, where each line of IN.tsv is one
//! sample, `time_ns<TAB>thread<TAB>tid<TAB>frame;frame;...` (bench/viewer/gen-recording.mjs
//! writes them). Samples count as cpu-clock samples of 999 Hz.
use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
use kiln_os::io::AtomicFile;
use kiln_viewer::{write_html, HtmlOptions};
use std::collections::HashMap;
use std::io::BufRead;
use std::process::ExitCode;

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [input, out] = pos[..] else {
        return Err("usage: recording2html IN.tsv OUT.html [--flamechart]".into());
    };
    let mut ev = EventInfo::new("cpu-clock", WeightUnit::Samples);
    ev.sample_period_ns = Some(1_001_001);
    let mut p = Profile::new(ev);
    let mut threads = HashMap::new();
    let mut frames = Vec::new();
    let f = std::fs::File::open(input).map_err(|e| format!("{input}: {e}"))?;
    for (i, line) in std::io::BufReader::new(f).split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("{input}: {e}"))?;
        if line.is_empty() {
            continue;
        }
        let bad = || format!("{input}:{}: expected time, thread, tid and stack", i + 1);
        let mut cols = line.splitn(4, |&b| b == b'\t');
        let (Some(t), Some(name), Some(tid), Some(stack)) =
            (cols.next(), cols.next(), cols.next(), cols.next())
        else {
            return Err(bad());
        };
        let num = |b: &[u8]| -> Option<u64> { std::str::from_utf8(b).ok()?.parse().ok() };
        let (t, tid) = (num(t).ok_or_else(bad)?, num(tid).ok_or_else(bad)? as u32);
        let th = *threads
            .entry(tid)
            .or_insert_with(|| p.thread(Some(1), Some(tid), name));
        frames.clear();
        for n in stack.split(|&b| b == b';') {
            frames.push(p.frame(n, FrameKind::User));
        }
        p.add_sample_path(&frames, 1, t, th);
    }
    let opts = HtmlOptions {
        title: "synthetic recording".into(),
        flamechart: args.iter().any(|a| a == "--flamechart"),
        ..Default::default()
    };
    let mut file = AtomicFile::create(out).map_err(|e| format!("{out}: {e}"))?;
    write_html(&p, &opts, &mut file).map_err(|e| e.to_string())?;
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
