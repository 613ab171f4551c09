//! Any text given to the category rules parser (`kiln runs report --categories FILE`): no
//! panic; rules that parse categorise a small profile, every sample landing in exactly
//! one category, and the categories' totals adding up to the profile's weight.
#![no_main]
use kiln_model::categories::{Categoriser, Rules};
use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
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
    p.add_sample_path(&[c], 2, 20, th);
    p.add_sample_path(&[c, a], 4, 35, th);
    let Ok(cat) = Categoriser::new(&rules) else {
        return;
    };
    let per = cat.samples(&p);
    assert_eq!(per.len(), 3);
    assert!(per.iter().all(|&c| c < cat.categories().len() + 2));
    let (totals, all) = cat.totals(&p);
    assert_eq!(all, 7);
    assert_eq!(totals.iter().map(|(_, w)| w).sum::<u128>(), 7);
});
