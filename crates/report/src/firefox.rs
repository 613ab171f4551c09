//! A run for the Firefox Profiler: its profiles' threads as tracks, every stored
//! per-second series (the load's rates and latency percentiles, the target's CPU, queue
//! depth where measured) with a value other than 0 as a counter track, and its markers (phases: warm-up,
//! measurement, the seconds after it, sweep steps; what the load did: [`crate::markers`])
//! as markers, all on the run's one clock ([`kiln_formats::gecko::write_with`]).
use crate::markers::{run_markers, Marker};
use crate::run::{clocked_profiles, typical_step};
use crate::ReportError;
use kiln_formats::gecko::{self, Counter, Timeline};
use kiln_store::RunData;

/// The series and markers of `run` on its clock.
pub fn timeline(run: &RunData) -> Timeline {
    let mut counters = Vec::new();
    let mut left_out = Vec::new();
    for t in &run.series {
        let step_ns = typical_step(&t.time_ns);
        for c in &t.columns {
            let name = if c.unit.is_empty() {
                format!("{}: {}", t.name, c.name)
            } else {
                format!("{}: {} ({})", t.name, c.name, c.unit)
            };
            // The profiler draws a value of 0 as nothing: a series without any other
            // would be an empty track.
            if !c
                .values
                .iter()
                .any(|v| v.is_some_and(|x| x.is_finite() && x != 0.0))
            {
                left_out.push(name);
                continue;
            }
            counters.push(Counter {
                name,
                category: t.name.clone(),
                description: format!("{} of the {} table, per second", c.name, t.name),
                time_ns: t.time_ns.clone(),
                step_ns,
                values: c.values.clone(),
            });
        }
    }
    let markers = run_markers(run)
        .into_iter()
        .map(|m| gecko::Marker {
            detail: match (m.count, m.detail.is_empty()) {
                (Some(n), _) => format!("{n} {}", m.unit),
                (None, false) => m.detail,
                (None, true) => String::new(),
            },
            name: m.name,
            kind: m.kind,
            lane: m.lane,
            start_ns: m.start_ns,
            end_ns: m.end_ns,
        })
        .collect();
    Timeline {
        counters,
        markers,
        left_out,
    }
}

/// The warm-up (the series' seconds before the measurement), the measurement, the
/// seconds after it, and each sweep step: the first of the run's markers.
pub(crate) fn phases(run: &RunData) -> Vec<Marker> {
    let m = &run.meta;
    let mut out = Vec::new();
    let first = run
        .series
        .iter()
        .filter_map(|t| {
            t.time_ns
                .first()
                .map(|&x| x.saturating_sub(typical_step(&t.time_ns)))
        })
        .min();
    let last = run
        .series
        .iter()
        .filter_map(|t| t.time_ns.last().copied())
        .max();
    if m.measure.end_ns > m.measure.start_ns {
        if let Some(f) = first.filter(|&f| f < m.measure.start_ns) {
            out.push(Marker::phase("warm-up", "warm-up", f, m.measure.start_ns));
        }
        out.push(Marker::phase(
            "measurement",
            "measurement",
            m.measure.start_ns,
            m.measure.end_ns,
        ));
        // The load's seconds after it: also what the profiler's timeline ends with (it
        // spans the samples and, on a thread without samples, the markers).
        if let Some(l) = last.filter(|&l| l > m.measure.end_ns) {
            out.push(Marker::phase(
                "after the measurement",
                "after",
                m.measure.end_ns,
                l,
            ));
        }
    }
    for w in &m.windows {
        out.push(Marker::phase(
            &format!("step {}", w.name),
            "sweep step",
            w.start_ns,
            w.end_ns,
        ));
    }
    out
}

/// Writes `run` as a Firefox Profiler profile (the processed format, which the profiler
/// upgrades on import), named after the run.
pub fn write_run_firefox(run: &RunData, out: &mut dyn std::io::Write) -> Result<(), ReportError> {
    let profiles: Vec<kiln_model::Profile> = clocked_profiles(run)
        .into_iter()
        .map(|p| p.into_owned())
        .collect();
    let name = match run.meta.id {
        Some(id) => format!("kiln run {} #{id}", run.meta.name),
        None => format!("kiln run {}", run.meta.name),
    };
    kiln_formats::gecko::write_with(&profiles, &timeline(run), &name, out).map_err(ReportError::Io)
}
