//! Tooltips say what the numbers are: time and bytes at a readable scale, samples of a
//! timer with the CPU time they stand for, plain counts as flamegraph.pl writes them.
mod common;

use common::frames;
use kiln_flamegraph::Options;
use kiln_model::{EventInfo, FrameKind, Profile, Quantity, ThreadId, WeightUnit, NO_TIME};

fn profile(event: EventInfo, leaf_weight: u64, other_weight: u64) -> Profile {
    let mut p = Profile::new(event);
    let main = p.frame(b"main", FrameKind::User);
    let leaf = p.frame(b"leaf (inlined)", FrameKind::User);
    let other = p.frame(b"other", FrameKind::User);
    p.add_sample_path(&[main, leaf], leaf_weight, NO_TIME, ThreadId::NONE);
    p.add_sample_path(&[main, other], other_weight, NO_TIME, ThreadId::NONE);
    p
}

fn titles(p: &Profile, opts: &Options) -> Vec<String> {
    let mut out = Vec::new();
    kiln_flamegraph::render(p, opts, &mut out).unwrap();
    let mut t: Vec<_> = frames(&String::from_utf8(out).unwrap())
        .into_iter()
        .map(|d| d.title)
        .collect();
    t.sort();
    t
}

#[test]
fn perf_clock_periods_are_time() {
    // perf's cpu-clock periods are nanoseconds: 1,198 samples at 999 Hz.
    let p = profile(
        EventInfo::new("cpu-clock", WeightUnit::Period),
        900_900_900,
        298_298_298,
    );
    assert_eq!(
        titles(&p, &Options::default()),
        [
            "all (1.20 s, 100%)",
            "leaf (inlined) (901 ms, 75.13%)",
            "main (1.20 s, 100.00%)",
            "other (298 ms, 24.87%)",
        ]
    );
}

#[test]
fn bytes_timer_samples_and_named_counts() {
    let p = profile(EventInfo::new("mmap", WeightUnit::Bytes), 3 << 20, 1 << 20);
    assert!(titles(&p, &Options::default()).contains(&"main (4.00 MiB, 100.00%)".to_string()));
    let mut e = EventInfo::new("cpu-clock", WeightUnit::Samples);
    e.sample_period_ns = Some(1_001_001);
    let p = profile(e, 900, 298);
    assert!(titles(&p, &Options::default())
        .contains(&"main (1,198 samples, 1.20 s, 100.00%)".to_string()));
    // --countname: plain counts, as flamegraph.pl writes them.
    let mut o = Options::default();
    o.count_name = "calls".into();
    o.quantity = Some(Quantity::Samples { period_ns: None });
    let p = profile(EventInfo::new("mmap", WeightUnit::Bytes), 3, 1);
    assert!(titles(&p, &o).contains(&"main (4 calls, 100.00%)".to_string()));
}
