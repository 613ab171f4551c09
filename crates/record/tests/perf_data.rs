//! Reading perf.data files written by `perf record` (Debian's linux-perf), without
//! `perf script`: frame-pointer call chains as recorded, DWARF recordings unwound by kiln.
mod common;

use common::*;
use kiln_record::perf_data::{read, read_with_summary, PerfDataOptions};
use std::process::Command;

fn perf_record(
    dir: &std::path::Path,
    exe: &std::path::Path,
    callgraph: &str,
) -> std::path::PathBuf {
    let out = dir.join(format!("perf-{callgraph}.data"));
    let st = Command::new("perf")
        .args(["record", "-q", "-F", "999", "--call-graph", callgraph, "-o"])
        .arg(&out)
        .arg("--")
        .arg(exe)
        .arg("1")
        .status()
        .expect("perf runs (Debian package linux-perf)");
    assert!(st.success(), "perf record failed");
    out
}

#[test]
fn reads_fp_and_dwarf_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(
        dir.path(),
        "hot.c",
        "hot-pd",
        &[
            "-O2",
            "-fno-inline",
            "-fno-ipa-icf",
            "-fno-optimize-sibling-calls",
            "-fno-omit-frame-pointer",
        ],
    );
    for cg in ["fp", "dwarf"] {
        let data = perf_record(dir.path(), &exe, cg);
        let (profiles, summary) =
            read_with_summary(&data, &PerfDataOptions::default()).expect("readable");
        assert_eq!(profiles.len(), 1, "{cg}");
        let p = &profiles[0];
        assert!(
            p.event.name.starts_with("cpu-clock"),
            "{cg}: {}",
            p.event.name
        );
        let lines = folded(p);
        // A frame-pointer chain loses the caller of a function sampled before it set up
        // its frame (perf's own limitation, kept as recorded); the DWARF recording,
        // unwound by kiln, has every frame.
        let complete = |f: &[String]| {
            f[0] == "hot-pd"
                && f.iter().any(|x| x == "main")
                && (cg == "fp" || (f[f.len() - 2] == "work" && f.iter().any(|x| x == "_start")))
        };
        let (a, a_ok) = leaf_weight(&lines, "hot_a", complete);
        let (b, b_ok) = leaf_weight(&lines, "hot_b", complete);
        assert!(a + b > 100, "{cg}: {summary:?}\n{}", dump(&lines));
        assert!(
            (a_ok + b_ok) as f64 >= 0.95 * (a + b) as f64,
            "{cg}\n{}",
            dump(&lines)
        );
        let share = a as f64 / (a + b) as f64;
        assert!(
            (share - 2.0 / 3.0).abs() < 0.1,
            "{cg}: share {share}\n{}",
            dump(&lines)
        );
        assert!(p.samples.time_range().is_some());
    }
}

#[test]
fn a_file_that_is_not_perf_data_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("junk.data");
    std::fs::write(&f, b"PERFILE2 but not really").unwrap();
    let e = read(&f, &PerfDataOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("junk.data") && e.contains("not a readable perf.data file"),
        "{e}"
    );
    let e = read(
        &dir.path().join("missing.data"),
        &PerfDataOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("missing.data"), "{e}");
}

/// A perf.data cut short is read up to the damage, with a warning giving the offset,
/// as `perf script` reads it: every sample perf script finds, kiln finds.
#[test]
fn a_cut_file_is_read_up_to_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_c(dir.path(), "hot.c", "hot-cut", &["-O2", "-fno-inline"]);
    let data = perf_record(dir.path(), &exe, "fp");
    let whole = std::fs::read(&data).unwrap();
    let (all, _) = read_with_summary(&data, &PerfDataOptions::default()).unwrap();
    let n_all = all[0].samples.len();
    // perf's own count of the data section's end (header: data offset, data size).
    let data_end = u64::from_le_bytes(whole[40..48].try_into().unwrap())
        + u64::from_le_bytes(whole[48..56].try_into().unwrap());
    let data_off = u64::from_le_bytes(whole[40..48].try_into().unwrap()) as usize;
    let in_data = [100, (data_end as usize - data_off) / 2];
    for cut in [7]
        .into_iter()
        .chain(in_data.map(|c| whole.len() - data_end as usize + c))
    {
        let short = dir.path().join(format!("cut-{cut}.data"));
        std::fs::write(&short, &whole[..whole.len() - cut]).unwrap();
        let (p, summary) = read_with_summary(&short, &PerfDataOptions::default())
            .unwrap_or_else(|e| panic!("cut by {cut}: {e}"));
        assert_eq!(summary.warnings.len(), 1, "{:?}", summary.warnings);
        let w = &summary.warnings[0];
        assert!(
            w.contains(&format!("ends at byte {}", whole.len() - cut)),
            "{w}"
        );
        let script = Command::new("perf")
            .args(["script", "-F", "comm,tid", "-i"])
            .arg(&short)
            .output()
            .unwrap();
        let perf_samples = String::from_utf8_lossy(&script.stdout)
            .lines()
            .filter(|l| l.contains("hot-cut"))
            .count();
        let n = p[0].samples.len();
        if cut == 7 {
            assert_eq!(n, n_all, "the data was whole: {w}");
        } else {
            assert!(n < n_all && n > 0, "cut by {cut}: {n} of {n_all}");
        }
        eprintln!("cut by {cut}: kiln {n}, perf script {perf_samples} (whole: {n_all}): {w}");
        assert!(
            n >= perf_samples,
            "perf script found {perf_samples}, kiln {n}"
        );
    }
}

/// A perf.data header (104 bytes, little-endian unless `big`) with the given attribute
/// size, attribute section and data section, and no features.
fn header(big: bool, attr_size: u64, attrs: (u64, u64), data: (u64, u64)) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(if big { b"2ELIFREP" } else { b"PERFILE2" });
    for v in [
        104, attr_size, attrs.0, attrs.1, data.0, data.1, 0, 0, 0, 0, 0, 0,
    ] {
        h.extend_from_slice(&if big {
            u64::to_be_bytes(v)
        } else {
            u64::to_le_bytes(v)
        });
    }
    assert_eq!(h.len(), 104);
    h
}

/// Headers the fuzzer built that once crashed the reader (a division by zero inside the
/// perf.data parser, an overflow in kiln's mending of cut files): each is now a clear
/// error naming what is wrong, or, where the header is merely odd, an empty read.
#[test]
fn hostile_headers_are_clear_errors() {
    use kiln_record::perf_data::read_bytes;
    let opts = PerfDataOptions::default();
    let name = std::path::Path::new("hostile.data");
    let err = |bytes: &[u8]| match read_bytes(bytes, name, &opts) {
        Ok((p, _)) => panic!("read as {} profiles", p.len()),
        Err(e) => e.to_string(),
    };
    // Only the magic: the header's fields would read as zeros (attribute size 0).
    for magic in [&b"2ELIFREPH"[..], &b"PERFILE2"[..]] {
        let e = err(magic);
        assert!(
            e.contains("hostile.data") && e.contains("shorter than perf.data's header"),
            "{e}"
        );
    }
    for big in [false, true] {
        let e = err(&header(big, 0, (104, 0), (104, 0)));
        assert!(e.contains("gives each event's attributes 0 bytes"), "{e}");
        let e = err(&header(big, 136, (104, 1 << 40), (104, 0)));
        assert!(
            e.contains(
                "event attributes at byte 104, 1099511627776 bytes long, in a file of 104 bytes"
            ),
            "{e}"
        );
    }
    // A data section that starts near the end of the address space: nothing to read, and
    // the damage is said.
    match read_bytes(
        &header(false, 136, (104, 0), (u64::MAX - 4, 100)),
        name,
        &opts,
    ) {
        Ok((profiles, summary)) => {
            assert!(profiles.iter().all(|p| p.total_weight() == 0));
            assert!(
                summary.warnings.iter().any(|w| w.contains("data section")),
                "{:?}",
                summary.warnings
            );
        }
        Err(e) => assert!(e.to_string().contains("hostile.data"), "{e}"),
    }
}
