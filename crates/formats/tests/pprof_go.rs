//! Go's own profiles (written by tests/goprof with runtime/pprof) read by kiln, with
//! `go tool pprof -raw` as the oracle: every sample type's total and stacks, labels,
//! inlined frames, the default sample type; and kiln's pprof output of them read back by
//! `go tool pprof`.
use kiln_formats::{read, Format, ReadOptions};
use kiln_model::transform::Transforms;
use kiln_model::{FrameKind, LabelMatch, Profile};
use kiln_testkit::go_oracle::*;
use std::path::Path;

const PROFILES: &[&str] = &[
    "cpu",
    "heap",
    "allocs",
    "mutex",
    "block",
    "goroutine",
    "threadcreate",
];

fn total(p: &Profile) -> i64 {
    p.samples.weight.iter().map(|&w| w as i64).sum()
}

fn read_type(path: &Path, sample_type: Option<&str>) -> kiln_formats::ReadResult {
    let opts = ReadOptions {
        sample_type: sample_type.map(str::to_string),
        ..Default::default()
    };
    read(Some(path), &opts).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The sample type `go tool pprof` shows by default (`Type:` of `-top`).
fn go_default_type(file: &Path) -> String {
    let out = go()
        .args(["tool", "pprof", "-top"])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Type: ").map(str::to_string))
        .expect("Type: line")
}

#[test]
fn go_profiles_agree_with_go_tool_pprof() {
    if !have_go() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = go_profiles(tmp.path());
    let mut checked_stacks = 0;
    for name in PROFILES {
        let file = dir.join(format!("{name}.pb.gz"));
        let raw = raw(&file);
        assert!(!raw.types.is_empty(), "{name}: no sample types in -raw");
        // The default sample type is go tool pprof's.
        let r = read_type(&file, None);
        assert_eq!(r.format, Format::Pprof, "{name}");
        assert_eq!(
            r.collapsed.profile.event.name,
            go_default_type(&file),
            "{name}"
        );
        // Every sample type: the same total, and the same stacks when symbolised.
        for t in &raw.types {
            let tname = t.split('/').next().unwrap();
            let i = raw.index(tname);
            let r = read_type(&file, Some(tname));
            let p = &r.collapsed.profile;
            assert_eq!(p.event.name, tname);
            assert_eq!(total(p), raw.total(i, &[]), "{name} {tname}: total");
            if raw.symbolised() {
                assert_eq!(raw_names(p), raw.folded(i), "{name} {tname}: stacks");
                checked_stacks += 1;
            }
        }
    }
    assert!(
        checked_stacks >= 10,
        "only {checked_stacks} stack comparisons"
    );
}

#[test]
fn labels_inlined_frames_and_sources() {
    if !have_go() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = go_profiles(tmp.path());
    let cpu = dir.join("cpu.pb.gz");
    let craw = raw(&cpu);
    let ci = craw.index("cpu");
    let p = read_type(&cpu, Some("cpu")).collapsed.profile;
    for handler in ["query", "put"] {
        let t = Transforms {
            focus_labels: vec![LabelMatch::parse(&format!("handler={handler}")).unwrap()],
            ..Default::default()
        };
        let (kept, _) = t.apply(&p);
        let want = craw.total(ci, &[&format!("handler:[{handler}]")]);
        assert!(want > 0, "no {handler} samples in the CPU profile");
        assert_eq!(total(&kept), want, "handler={handler}");
    }
    // mix is inlined into hashLoop: a frame of kind Inline below it, with its source.
    if craw.locations.values().any(|l| l.len() > 1) {
        let mix = p
            .frames
            .iter()
            .find(|(_, f)| p.strings.get(f.name) == b"main.mix")
            .map(|(id, f)| (id, f.kind))
            .expect("main.mix in the CPU profile");
        assert_eq!(mix.1, FrameKind::Inline);
        let src = p.frames.source(mix.0).expect("main.mix has a source");
        assert!(p.strings.get(src.file).ends_with(b"goprof/main.go"));
        assert!(profile_folded(&p)
            .keys()
            .any(|k| k.contains("main.hashLoop;main.mix")));
    }
    // Heap samples carry a numeric `bytes` label.
    let heap = dir.join("heap.pb.gz");
    let raw = raw(&heap);
    let ai = raw.index("alloc_space");
    let p = read_type(&heap, Some("alloc_space")).collapsed.profile;
    let t = Transforms {
        focus_labels: vec![LabelMatch::parse("bytes=65536").unwrap()],
        ..Default::default()
    };
    let (kept, _) = t.apply(&p);
    assert_eq!(total(&kept), raw.total(ai, &["bytes:[65536]"]));
    assert!(total(&kept) > 0);
}

#[test]
fn kiln_pprof_output_reads_back_in_go_tool_pprof() {
    if !have_go() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = go_profiles(tmp.path());
    for (name, tname) in [
        ("cpu", "cpu"),
        ("heap", "alloc_space"),
        ("heap", "inuse_objects"),
        ("mutex", "delay"),
        ("block", "contentions"),
        ("goroutine", "goroutine"),
    ] {
        let file = dir.join(format!("{name}.pb.gz"));
        let orig = raw(&file);
        let p = read_type(&file, Some(tname)).collapsed.profile;
        for gzip in [true, false] {
            let out = tmp.path().join(format!(
                "{name}-{tname}.{}",
                if gzip { "pb.gz" } else { "pb" }
            ));
            let mut bytes = Vec::new();
            kiln_formats::pprof::write(&p, &Default::default(), gzip, &mut bytes).unwrap();
            std::fs::write(&out, &bytes).unwrap();
            let back = raw(&out);
            let bi = back.index(tname);
            assert_eq!(
                back.folded(bi),
                orig.folded(orig.index(tname)),
                "{name} {tname}: go tool pprof reads kiln's output"
            );
            // And kiln reads its own output back to the same profile.
            let again = read_type(&out, Some(tname)).collapsed.profile;
            assert_eq!(profile_folded(&again), profile_folded(&p));
        }
    }
}

/// A profile of `event` in `unit` over two stacks, weights 3 and 4.
fn synthetic(event: &str, unit: kiln_model::WeightUnit, period: Option<u64>) -> Profile {
    let mut e = kiln_model::EventInfo::new(event, unit);
    e.sample_period_ns = period;
    let mut p = Profile::new(e);
    let main = p.frame(b"main", FrameKind::User);
    let a = p.frame(b"a", FrameKind::User);
    let b = p.frame(b"b", FrameKind::Kernel);
    let m = p.stacks.intern(None, main);
    let ma = p.stacks.intern(Some(m), a);
    let mab = p.stacks.intern(Some(ma), b);
    for (s, w) in [(ma, 3), (mab, 4), (ma, 0)] {
        p.samples
            .push(s, w, kiln_model::NO_TIME, kiln_model::ThreadId::NONE);
    }
    p
}

#[test]
fn kiln_units_in_go_tool_pprof() {
    use kiln_model::WeightUnit as U;
    if !have_go() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // (event, unit, period) → go tool pprof's sample types and the total of the last.
    type Case<'a> = (&'a str, U, Option<u64>, &'a [&'a str], i64);
    let cases: &[Case] = &[
        // Counted timer samples: Go's CPU profile shape, samples and time.
        (
            "cpu-clock",
            U::Samples,
            Some(1_001_001),
            &["samples/count", "cpu-clock/nanoseconds"],
            7 * 1_001_001,
        ),
        ("samples", U::Samples, None, &["samples/count"], 7),
        // perf's cpu-clock periods are nanoseconds.
        (
            "cpu-clock",
            U::Nanoseconds,
            None,
            &["cpu-clock/nanoseconds"],
            7,
        ),
        // Off-CPU time recorded in microseconds: written in nanoseconds.
        (
            "offcpu",
            U::Microseconds,
            None,
            &["offcpu/nanoseconds"],
            7000,
        ),
        ("cycles", U::Period, None, &["cycles/count"], 7),
        ("page-faults", U::Events, None, &["page-faults/count"], 7),
        ("alloc", U::Bytes, None, &["alloc/bytes"], 7),
    ];
    for (i, (event, unit, period, types, want)) in cases.iter().enumerate() {
        let p = synthetic(event, *unit, *period);
        let path = tmp.path().join(format!("{i}.pb.gz"));
        let mut bytes = Vec::new();
        kiln_formats::pprof::write(&p, &Default::default(), true, &mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let r = raw(&path);
        assert_eq!(r.types, *types, "{event} {unit:?}");
        let last = r.types.len() - 1;
        assert_eq!(r.total(last, &[]), *want, "{event} {unit:?}");
        let f = r.folded(last);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(
            go_default_type(&path),
            types[last].split('/').next().unwrap()
        );
        // kiln reads its output back with the weights it wrote.
        let back = read_type(&path, None).collapsed.profile;
        assert_eq!(total(&back), *want, "{event} {unit:?} read back");
    }
}

/// The google/pprof module's own test profiles (downloaded by scripts/install-deps.sh from
/// the Go module proxy): `gobench.heap`, a legacy heap profile with one sample that has no
/// stack, converted to protobuf by `go tool pprof -proto`. kiln keeps that sample under a
/// `[no stack]` frame, so every sample type's total is go tool pprof's.
const PPROF_MODULE: &str = "github.com/google/pprof@v0.0.0-20261105003125-4bf881d7fb0b";

#[test]
fn samples_without_a_stack_count_in_the_totals() {
    if !have_go() {
        return;
    }
    let out = go().args(["env", "GOMODCACHE"]).output().unwrap();
    let cache = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let legacy = Path::new(&cache)
        .join(PPROF_MODULE)
        .join("profile/testdata/gobench.heap");
    assert!(
        legacy.exists(),
        "{} is missing: scripts/install-deps.sh downloads {PPROF_MODULE}",
        legacy.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("gobench.heap.pb.gz");
    let conv = go()
        .args(["tool", "pprof", "-proto"])
        .arg(&legacy)
        .output()
        .unwrap();
    assert!(
        conv.status.success(),
        "{}",
        String::from_utf8_lossy(&conv.stderr)
    );
    std::fs::write(&file, &conv.stdout).unwrap();
    let raw = raw(&file);
    assert!(
        raw.samples.iter().any(|s| s.1.is_empty()),
        "the fixture should hold a sample without locations"
    );
    for t in &raw.types {
        let tname = t.split('/').next().unwrap();
        let i = raw.index(tname);
        let r = read_type(&file, Some(tname));
        let p = &r.collapsed.profile;
        assert_eq!(total(p), raw.total(i, &[]), "{tname}: total");
        assert_eq!(
            r.collapsed.stats.skipped_total(),
            0,
            "{tname}: nothing skipped"
        );
        let no_stack = (0..p.frames.len() as u32)
            .any(|f| p.frame_name(kiln_model::FrameId(f)) == b"[no stack]");
        assert!(no_stack, "{tname}: a [no stack] frame");
    }
}
