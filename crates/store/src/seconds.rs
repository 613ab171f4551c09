//! The run's seconds: the one grid every window's figure is counted on — the load's
//! seconds (else the target's, else the first table's) — and what the store keeps as
//! samples or as one total, put on that grid: the BEAM's scheduler states and kiln's eBPF
//! CPU. A window holds the seconds whose middle lies in it ([`crate::window`]'s rule), so
//! a window's figure is a sum over whole seconds of the grid, the same for `kiln runs show
//! RUN@A-B` and for the report's page (which is given these seconds by Rust).
use crate::window::intervals;
use crate::{RunData, SchedulerStates, StateSources, StateSums, Window};
use std::ops::Range;

/// The run's seconds, `(start, end)` ns on its clock ([`intervals`]): those of its load
/// table, else of its target table, else of its first table with a row; none when no
/// table has one.
pub fn grid(run: &RunData) -> Vec<(u64, u64)> {
    let with_rows = |name: &str| {
        run.series
            .iter()
            .find(|t| t.name == name && !t.time_ns.is_empty())
    };
    with_rows(crate::columns::LOAD)
        .or_else(|| with_rows(crate::columns::TARGET))
        .or_else(|| run.series.iter().find(|t| !t.time_ns.is_empty()))
        .map(|t| intervals(&t.time_ns).collect())
        .unwrap_or_default()
}

/// The grid's edges: each interval's start, and its end where the next does not start
/// there (a gap is an interval of its own). The category charts' intervals.
pub fn edges(grid: &[(u64, u64)]) -> Vec<u64> {
    let mut e: Vec<u64> = Vec::with_capacity(grid.len() + 1);
    for &(s, end) in grid {
        if e.last().is_none_or(|&l| s > l) {
            e.push(s);
        }
        if e.last().is_none_or(|&l| end > l) {
            e.push(end);
        }
    }
    e
}

/// The seconds of `grid` whose middle lies in `w`: a range of indices (the grid is in
/// time order, so they follow each other).
pub fn range_in(grid: &[(u64, u64)], w: &Window) -> Range<usize> {
    let mid = |&(s, e): &(u64, u64)| s + (e - s) / 2;
    let first = grid.partition_point(|x| mid(x) < w.start_ns);
    let end = grid.partition_point(|x| mid(x) < w.end_ns);
    first..end.max(first)
}

/// The second of `grid` holding `t` (start included, end excluded), if any.
fn second_of(grid: &[(u64, u64)], t: u64) -> Option<usize> {
    let k = grid.partition_point(|&(_, e)| e <= t);
    grid.get(k).filter(|&&(s, _)| s <= t).map(|_| k)
}

/// The BEAM's scheduler states of any span of whole seconds of the grid: the schedulers'
/// weight by state summed per second (a sample by its time, an off-CPU block by the time
/// it began), as prefix sums.
pub struct StatesBySecond<'a> {
    src: StateSources<'a>,
    /// `prefix[k]`: the sums of seconds `0..k`.
    prefix: Vec<StateSums>,
}

impl<'a> StatesBySecond<'a> {
    /// The states of `profiles` over `grid`; `None` when no CPU profile has a
    /// scheduler's sample.
    pub fn of(profiles: &'a [kiln_model::Profile], grid: &[(u64, u64)]) -> Option<Self> {
        let src = StateSources::of(profiles)?;
        let mut per = vec![StateSums::default(); grid.len()];
        src.each(|t, one| {
            if let Some(k) = second_of(grid, t) {
                per[k].add(one);
            }
        });
        let mut prefix = Vec::with_capacity(grid.len() + 1);
        let mut acc = StateSums::default();
        prefix.push(acc);
        for s in &per {
            acc.add(s);
            prefix.push(acc);
        }
        Some(StatesBySecond { src, prefix })
    }

    /// The states over seconds `r`; `None` when they hold no scheduler time.
    pub fn between(&self, r: Range<usize>) -> Option<SchedulerStates> {
        let (a, b) = (r.start, r.end.min(self.prefix.len() - 1));
        if a >= b {
            return None;
        }
        self.src.states(&self.prefix[b].minus(&self.prefix[a]))
    }

    /// Each second's sums, in the grid's order.
    pub fn per_second(&self) -> Vec<StateSums> {
        self.prefix.windows(2).map(|p| p[1].minus(&p[0])).collect()
    }

    /// The profiles the sums are of.
    pub fn sources(&self) -> &StateSources<'a> {
        &self.src
    }

    /// How many seconds the grid has.
    pub fn seconds(&self) -> usize {
        self.prefix.len() - 1
    }
}

/// kiln's eBPF CPU in each second of `grid`, seconds of CPU: the recording's total (the
/// kernel measures it once, for the whole recording) given to each second by its share of
/// the samples kiln's programs took there (a stack walk per CPU sample, one run per
/// off-CPU block), the samples of every profile kiln recorded with a time. `None` without
/// a total or a sample on the grid.
pub fn bpf_cpu_per_second(run: &RunData, grid: &[(u64, u64)]) -> Option<Vec<f64>> {
    let total = run.meta.headline.kiln_bpf_cpu_s?;
    let mut n = vec![0u64; grid.len()];
    for p in run
        .profiles
        .iter()
        .filter(|p| !p.event.name.starts_with(crate::PPROF_EVENT_PREFIX))
    {
        for &t in &p.samples.time {
            if let Some(k) = second_of(grid, t) {
                n[k] += 1;
            }
        }
    }
    let all: u64 = n.iter().sum();
    (all > 0).then(|| n.iter().map(|&x| total * x as f64 / all as f64).collect())
}

/// What a window that reaches outside the recording (the measurement: kiln records only
/// it) holds of it: `the recording covers 2.0 s of this window's 6.0 s …`; `None` when the
/// window lies inside it.
pub fn recorded_part(recording: &Window, w: &Window) -> Option<String> {
    if w.start_ns >= recording.start_ns && w.end_ns <= recording.end_ns {
        return None;
    }
    let covered = w
        .end_ns
        .min(recording.end_ns)
        .saturating_sub(w.start_ns.max(recording.start_ns));
    let secs = |ns: u64| ns as f64 / 1e9;
    let rel = |t: u64| (t as f64 - recording.start_ns as f64) / 1e9;
    Some(format!(
        "the recording covers {:.1} s of this window's {:.1} s (the window runs from {:.1} s to {:.1} s of the measurement, which alone was recorded): its profiles, and the figures read from them, hold only those seconds",
        secs(covered),
        w.seconds(),
        rel(w.start_ns),
        rel(w.end_ns)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeriesTable;

    fn win(a: u64, b: u64) -> Window {
        Window {
            name: "w".into(),
            start_ns: a,
            end_ns: b,
        }
    }

    #[test]
    fn the_grid_is_the_load_s_seconds() {
        let s = 1_000_000_000u64;
        let run = RunData {
            series: vec![
                SeriesTable {
                    name: "target".into(),
                    time_ns: vec![s + 835_000_000, 2 * s + 835_000_000, 3 * s + 835_000_000],
                    columns: vec![],
                },
                SeriesTable {
                    name: "load".into(),
                    time_ns: vec![
                        s + 997_000_000,
                        2 * s + 997_000_000,
                        3 * s + 997_000_000,
                        7 * s + 997_000_000,
                    ],
                    columns: vec![],
                },
            ],
            ..Default::default()
        };
        let g = grid(&run);
        assert_eq!(g[0], (997_000_000, s + 997_000_000));
        // A gap: the second after it is one step long, and the gap an interval of the edges.
        assert_eq!(g[3], (6 * s + 997_000_000, 7 * s + 997_000_000));
        assert_eq!(
            edges(&g),
            [
                997_000_000,
                s + 997_000_000,
                2 * s + 997_000_000,
                3 * s + 997_000_000,
                6 * s + 997_000_000,
                7 * s + 997_000_000
            ]
        );
        // Seconds whose middle lies in the window.
        assert_eq!(range_in(&g, &win(s, 3 * s)), 0..2);
        assert_eq!(range_in(&g, &win(0, 9 * s)), 0..4);
        assert_eq!(range_in(&g, &win(4 * s, 5 * s)), 3..3);
        assert_eq!(second_of(&g, 997_000_000), Some(0));
        assert_eq!(second_of(&g, s + 997_000_000), Some(1));
        assert_eq!(second_of(&g, 5 * s), None, "in the gap");
    }

    #[test]
    fn a_window_outside_the_recording_says_how_much_it_holds() {
        let s = 1_000_000_000u64;
        let rec = win(10 * s, 20 * s);
        assert_eq!(recorded_part(&rec, &win(11 * s, 19 * s)), None);
        let t = recorded_part(&rec, &win(6 * s, 12 * s)).unwrap();
        assert!(
            t.starts_with("the recording covers 2.0 s of this window's 6.0 s (the window runs from -4.0 s to 2.0 s"),
            "{t}"
        );
    }

    /// The states of any span of whole seconds are those of its samples alone: the same as
    /// the states of the profile cut to those seconds.
    #[test]
    fn states_of_seconds_are_those_of_their_samples() {
        use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
        let s = 1_000_000_000u64;
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        p.event.sample_period_ns = Some(1_000_000);
        let th = p.thread(Some(1), Some(2), b"1_scheduler");
        let root = p.frame(b"1_scheduler", FrameKind::Root);
        let sched = p.frame(b"erts_schedule", FrameKind::User);
        let main = p.frame(b"process_main", FrameKind::User);
        // Second 0: 3 in Erlang code, 1 scheduling; second 1: 4 scheduling; second 2: 2 in
        // Erlang code.
        for (t, f) in [(1, main), (2, main), (3, main), (4, sched)] {
            p.add_sample_path(&[root, f], 1, t * s / 10, th);
        }
        for t in 11..15 {
            p.add_sample_path(&[root, sched], 1, t * s / 10, th);
        }
        for t in [21, 22] {
            p.add_sample_path(&[root, main], 1, t * s / 10, th);
        }
        let grid = vec![(0, s), (s, 2 * s), (2 * s, 3 * s)];
        let profiles = vec![p];
        let by = StatesBySecond::of(&profiles, &grid).unwrap();
        assert_eq!(by.seconds(), 3);
        let first = by.between(0..1).unwrap();
        assert_eq!(first.samples, 4);
        assert!((first.emulator_pct - 75.0).abs() < 1e-9);
        let two = by.between(1..3).unwrap();
        assert!((two.other_pct - 4.0 / 6.0 * 100.0).abs() < 1e-9);
        let cut = profiles[0].time_slice(s, 3 * s);
        assert_eq!(
            Some(two),
            SchedulerStates::of_profiles(std::slice::from_ref(&cut))
        );
        assert_eq!(by.between(2..2), None);
    }

    /// A scheduler's CPU profile: `(tenth of a second, on the scheduler in Erlang code)`.
    fn beam_profile(samples: &[(u64, bool)]) -> kiln_model::Profile {
        use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        p.event.sample_period_ns = Some(1_000_000);
        let th = p.thread(Some(1), Some(2), b"1_scheduler");
        let root = p.frame(b"1_scheduler", FrameKind::Root);
        let sched = p.frame(b"erts_schedule", FrameKind::User);
        let main = p.frame(b"process_main", FrameKind::User);
        for &(t, erlang) in samples {
            let f = if erlang { main } else { sched };
            p.add_sample_path(&[root, f], 1, t * 100_000_000, th);
        }
        p
    }

    /// A window's BEAM states and eBPF CPU are those of the seconds of the load it holds
    /// (not of its own edges, nor of the target's seconds): `kiln runs show RUN@A-B` and
    /// the page count the same samples, and two windows that meet add up to the one that
    /// holds both.
    #[test]
    fn a_window_s_states_and_ebpf_cpu_are_those_of_its_load_seconds() {
        let s = 1_000_000_000u64;
        let mut run = RunData::default();
        // The load's seconds end 0.5 s after whole seconds, the target's 0.1 s after.
        let ends = |off: u64| (1..=4).map(|i| i * s + off).collect::<Vec<_>>();
        run.series = vec![
            SeriesTable {
                name: "target".into(),
                time_ns: ends(100_000_000),
                columns: vec![],
            },
            SeriesTable {
                name: "load".into(),
                time_ns: ends(500_000_000),
                columns: vec![],
            },
        ];
        // The load's first second (0.5–1.5 s): 4 samples in Erlang code; its second
        // (1.5–2.5 s): 4 scheduling; its third (2.5–3.5 s): 1 of each. One sample before
        // the load (0.2 s).
        let samples = [
            (2, true),
            (6, true),
            (8, true),
            (11, true),
            (14, true),
            (16, false),
            (19, false),
            (21, false),
            (24, false),
            (27, true),
            (34, false),
        ];
        run.profiles = vec![beam_profile(&samples)];
        run.meta.headline.beam = SchedulerStates::of_profiles(&run.profiles);
        run.meta.headline.kiln_bpf_cpu_s = Some(1.0);
        run.meta.measure = win(0, 5 * s);
        assert_eq!(
            grid(&run)[1],
            (s + 500_000_000, 2 * s + 500_000_000),
            "the load's seconds"
        );
        // 1 s to 2.4 s holds the load's first second (middle 1.0 s) and its second (middle
        // 2.0 s), whole: not the sample at 0.2 s (before the load), nor that at 2.7 s.
        let w = win(s, 2_400_000_000);
        let h = crate::window::window_view(&run, &w).headline;
        let b = h.beam.unwrap();
        assert_eq!(b.samples, 8);
        assert!((b.emulator_pct - 50.0).abs() < 1e-9, "{b:?}");
        // 10 samples on the load's seconds (the one at 0.2 s is on none): 8 of them.
        assert!((h.kiln_bpf_cpu_s.unwrap() - 0.8).abs() < 1e-9);
        // Two windows that meet: their seconds, then, add up to the whole's.
        let before = crate::window::window_view(&run, &win(0, 2 * s)).headline;
        let after = crate::window::window_view(&run, &win(2 * s, 4 * s)).headline;
        let all = crate::window::window_view(&run, &win(0, 4 * s)).headline;
        let n = |h: &crate::Headline| h.beam.as_ref().map_or(0, |b| b.samples);
        assert_eq!(n(&before) + n(&after), n(&all));
        assert_eq!((n(&before), n(&after), n(&all)), (4, 6, 10));
        let bpf = |h: &crate::Headline| h.kiln_bpf_cpu_s.unwrap();
        assert!((bpf(&before) + bpf(&after) - bpf(&all)).abs() < 1e-12);
        // A window holding no scheduler sample has no states.
        let none = crate::window::window_view(&run, &win(4 * s, 5 * s)).headline;
        assert_eq!(none.beam, None);
        // A window reaching before the recording says so.
        let mut run = run;
        run.meta.measure = win(2 * s, 5 * s);
        let m = crate::window::window_view(&run, &win(0, 4 * s));
        assert!(
            m.warnings
                .iter()
                .any(|x| x
                    .starts_with("window w: the recording covers 2.0 s of this window's 4.0 s")),
            "{:?}",
            m.warnings
        );
    }

    /// One latency for every window of a run: the headline's, whichever the load kept
    /// first for a step.
    #[test]
    fn a_step_s_latency_is_the_headline_s() {
        let hist = |v: u64| {
            let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            h.record(v).unwrap();
            kiln_hdr::encode_histogram(&h).unwrap()
        };
        let mut run = RunData::default();
        run.meta.headline.latency = Some("consumer_latency".into());
        for (name, v) in [("confirm_latency", 100), ("consumer_latency", 700)] {
            run.histograms.push(crate::StoredHistogram {
                name: name.into(),
                window: "rate=10".into(),
                unit: "us".into(),
                data: hist(v),
            });
        }
        let w = win(0, 1_000_000_000);
        let step = Window {
            name: "rate=10".into(),
            ..w
        };
        let (name, h) = crate::window::latency_of(&run, &step).unwrap();
        assert_eq!((name.as_str(), h.max()), ("consumer_latency", 700));
        let m = crate::window::window_view(&run, &step);
        assert_eq!(m.headline.latency.as_deref(), Some("consumer_latency"));
        // Without a headline latency: the first kept that is not the intended one's.
        run.meta.headline.latency = None;
        run.histograms[0].name = "confirm_latency_intended".into();
        let (name, _) = crate::window::latency_of(&run, &step).unwrap();
        assert_eq!(name, "consumer_latency");
    }
}
