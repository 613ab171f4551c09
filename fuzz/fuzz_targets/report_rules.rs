//! Any text given to the run report's category rules parser (`kiln runs report
//! --categories FILE`): no panic; rules that parse categorise a small profile, every
//! sample landing in exactly one category.
#![no_main]
use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
use kiln_report::categories::{categorise, Rules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut rules) = Rules::parse(text, "fuzz") else {
        return;
    };
    rules.rules.extend(Rules::builtin().rules);
    let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
    let th = p.thread(Some(1), Some(1), b"1_scheduler");
    let a = p.frame(b"erts_check_io", FrameKind::User);
    let b = p.frame(b"__x64_sys_epoll_wait", FrameKind::Kernel);
    let c = p.frame(b"$lists:foldl/3", FrameKind::Jit);
    p.add_sample_path(&[a, b], 1, 10, th);
    p.add_sample_path(&[c], 1, 20, th);
    p.add_sample_path(&[c, a], 1, 35, th);
    let Ok(Some(s)) = categorise(&p, &rules, &[0, 30, 40], 0) else {
        return;
    };
    // Every sample lands in exactly one category: the per-second values, times their
    // intervals, add up to the three samples, and the shares to 100%.
    assert_eq!((s.outside, s.untimed), (0, 0));
    assert_eq!(s.unit, "/s");
    let total: f64 = s
        .values
        .iter()
        .flat_map(|row| {
            row.iter()
                .zip(s.edges.windows(2))
                .map(|(v, e)| v * (e[1] - e[0]) as f64 / 1e9)
        })
        .sum();
    assert!((total - 3.0).abs() < 1e-6, "{total}");
    let shares: f64 = s.shares.iter().sum();
    assert!((shares - 100.0).abs() < 1e-6, "{shares}");
});
