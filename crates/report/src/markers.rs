//! What the load did, as markers on the run's clock: the report's marker row and the
//! Firefox Profiler export's marker chart are this one list.
//!
//! The run's phases (warm-up, measurement, the seconds after it, sweep steps: see
//! [`crate::firefox::phases`]), then the load's events from its stored per-second
//! series: each run of seconds a flow-control flag was on (blocked, stalled,
//! disconnected, errors), each run of seconds an event counter counted (connections
//! dropped, failed or re-established, failed requests, nacks, losses), and agents whose
//! seconds (`load@NAME`) stop before the load's. A second is the interval ending at its
//! row's time, so a run of rows spans from the first row's start to the last row's end.
use crate::run::typical_step;
use kiln_store::{columns, RunData, SeriesTable};

/// One marker: a span of the run's clock with what happened in it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Marker {
    /// The lane (row of the marker chart) it is drawn in.
    pub lane: String,
    pub name: String,
    /// `warm-up`, `measurement`, `after`, `sweep step`, `flag`, `counter`, `agent`.
    pub kind: String,
    /// Start and end, ns on the run's clock.
    pub start_ns: u64,
    pub end_ns: u64,
    /// How many: seconds a flag was on, events a counter counted; `None` for phases and
    /// agents.
    pub count: Option<u64>,
    /// What `count` counts (`s`, `conn`, `req`).
    pub unit: String,
    /// More to say (why an agent failed), or empty.
    pub detail: String,
}

impl Marker {
    /// A phase of the run (`kind`: `warm-up`, `measurement`, `after`, `sweep step`).
    pub fn phase(name: &str, kind: &str, start_ns: u64, end_ns: u64) -> Marker {
        Marker {
            lane: if kind == "sweep step" {
                "sweep steps".into()
            } else {
                "phases".into()
            },
            name: name.into(),
            kind: kind.into(),
            start_ns,
            end_ns,
            count: None,
            unit: String::new(),
            detail: String::new(),
        }
    }
}

/// Plain names of the flags that are events, not throughput.
fn flag_name(column: &str) -> &str {
    match column {
        "blocked" => "flow control: blocked",
        "stalled" => "stalled (sends due, none sent)",
        "disconnected" => "disconnected",
        "errors" => "errors",
        other => other,
    }
}

/// The lane and plain name of a counter that counts events, if it is one.
fn counter_name(column: &str) -> Option<(&'static str, &'static str)> {
    Some(match column {
        columns::DROPPED => ("connections", "connections dropped"),
        "reconnects" => ("connections", "reconnects"),
        "failed" => ("connections", "connection attempts failed"),
        "refused" => ("errors", "refused by the server"),
        "nacked" => ("errors", "nacked"),
        "returned" => ("errors", "returned (unroutable)"),
        "lost" => ("errors", "messages lost"),
        "err_connect" => ("errors", "failed requests: connect"),
        "err_timeout" => ("errors", "failed requests: timeout"),
        "err_reset" => ("errors", "failed requests: reset"),
        "err_closed" => ("errors", "failed requests: closed"),
        "err_protocol" => ("errors", "failed requests: protocol"),
        "err_other" => ("errors", "failed requests: other"),
        "status_5xx" => ("errors", "5xx responses"),
        "unanswered" => ("errors", "requests unanswered"),
        "not_sent" => ("errors", "requests not sent"),
        _ => return None,
    })
}

/// Runs of consecutive rows where `on(i)` holds, as `(first, last)` row indices.
fn runs_of(n: usize, on: impl Fn(usize) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut first = None;
    for i in 0..=n {
        match (i < n && on(i), first) {
            (true, None) => first = Some(i),
            (false, Some(f)) => {
                out.push((f, i - 1));
                first = None;
            }
            _ => {}
        }
    }
    out
}

/// Start of row `i`'s interval: the previous row's end, unless there is a gap.
fn row_start(time: &[u64], i: usize, step: u64) -> u64 {
    if i > 0 && time[i] - time[i - 1] <= 2 * step {
        time[i - 1]
    } else {
        time[i].saturating_sub(step)
    }
}

/// The load's events in one table: flags' runs of seconds and counters' runs of seconds.
fn event_markers(t: &SeriesTable) -> Vec<Marker> {
    let mut out = Vec::new();
    let time = &t.time_ns;
    let step = typical_step(time);
    let n = time
        .len()
        .min(t.columns.iter().map(|c| c.values.len()).min().unwrap_or(0));
    let span = |a: usize, b: usize| (row_start(time, a, step), time[b]);
    for c in &t.columns {
        let value = |i: usize| c.values[i].filter(|v| v.is_finite());
        if c.unit == "bool" {
            for (a, b) in runs_of(n, |i| value(i).is_some_and(|v| v != 0.0)) {
                let (start_ns, end_ns) = span(a, b);
                out.push(Marker {
                    lane: "flow control".into(),
                    name: flag_name(&c.name).into(),
                    kind: "flag".into(),
                    start_ns,
                    end_ns,
                    count: Some((b - a + 1) as u64),
                    unit: "s".into(),
                    detail: String::new(),
                });
            }
            continue;
        }
        let (Some((lane, name)), Some(unit)) = (counter_name(&c.name), c.unit.strip_suffix("/s"))
        else {
            continue;
        };
        // A rate per second: the events of a row are its rate times its interval.
        for (a, b) in runs_of(n, |i| value(i).is_some_and(|v| v > 0.0)) {
            let events: f64 = (a..=b)
                .map(|i| {
                    value(i).unwrap_or(0.0) * (time[i] - row_start(time, i, step)) as f64 / 1e9
                })
                .sum();
            let (start_ns, end_ns) = span(a, b);
            out.push(Marker {
                lane: lane.into(),
                name: name.into(),
                kind: "counter".into(),
                start_ns,
                end_ns,
                count: Some(events.round() as u64),
                unit: unit.into(),
                detail: String::new(),
            });
        }
    }
    out
}

/// Agents whose seconds (`load@NAME`) end before the load's: from an agent's last second
/// to the load's end, with its failure as the run's warnings say it when they do.
fn agent_markers(run: &RunData) -> Vec<Marker> {
    let Some(end) = run
        .series
        .iter()
        .find(|t| t.name == columns::LOAD)
        .and_then(|t| Some((*t.time_ns.last()?, typical_step(&t.time_ns))))
    else {
        return Vec::new();
    };
    let (end, step) = end;
    let mut out = Vec::new();
    for t in &run.series {
        let agent = columns::host_of(&t.name, columns::LOAD);
        let (Some(agent), Some(&last)) = (agent, t.time_ns.last()) else {
            continue;
        };
        if (end.saturating_sub(last) as f64) < step as f64 * 1.5 {
            continue;
        }
        let why = run
            .meta
            .warnings
            .iter()
            .find(|w| w.contains(&format!("host {agent} failed")));
        out.push(Marker {
            lane: "agents".into(),
            name: format!(
                "agent {agent} {}",
                if why.is_some() { "failed" } else { "stopped" }
            ),
            kind: "agent".into(),
            start_ns: last,
            end_ns: end,
            count: None,
            unit: String::new(),
            detail: why.cloned().unwrap_or_default(),
        });
    }
    out
}

/// Every marker of a run: its phases first, then the load's events, then its agents.
pub(crate) fn run_markers(run: &RunData) -> Vec<Marker> {
    let mut out: Vec<Marker> = crate::firefox::phases(run)
        .into_iter()
        .filter(|p| p.end_ns > p.start_ns)
        .collect();
    if let Some(load) = run.series.iter().find(|t| t.name == columns::LOAD) {
        out.extend(event_markers(load));
    }
    out.extend(agent_markers(run));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_store::Column as SeriesColumn;

    fn table(name: &str, time_s: &[u64], cols: &[(&str, &str, &[Option<f64>])]) -> SeriesTable {
        SeriesTable {
            name: name.into(),
            time_ns: time_s.iter().map(|s| s * 1_000_000_000).collect(),
            columns: cols
                .iter()
                .map(|(n, u, v)| SeriesColumn {
                    name: (*n).into(),
                    unit: (*u).into(),
                    values: v.to_vec(),
                })
                .collect(),
        }
    }

    #[test]
    fn runs_of_seconds() {
        assert_eq!(runs_of(6, |i| [1, 2, 4].contains(&i)), vec![(1, 2), (4, 4)]);
        assert_eq!(runs_of(3, |_| true), vec![(0, 2)]);
        assert!(runs_of(0, |_| true).is_empty());
    }

    #[test]
    fn flags_and_counters_become_spans_with_their_counts() {
        let t = table(
            "load",
            &[1, 2, 3, 4, 5],
            &[
                (
                    "blocked",
                    "bool",
                    &[Some(0.0), Some(1.0), Some(1.0), Some(0.0), Some(1.0)],
                ),
                (
                    "dropped",
                    "conn/s",
                    &[None, Some(3.0), Some(0.0), Some(2.5), Some(1.5)],
                ),
                ("sent", "msg/s", &[Some(9.0); 5]),
            ],
        );
        let m = event_markers(&t);
        let s = |x: u64| x * 1_000_000_000;
        assert_eq!(m.len(), 4, "{m:#?}");
        assert_eq!(
            (m[0].name.as_str(), m[0].start_ns, m[0].end_ns, m[0].count),
            ("flow control: blocked", s(1), s(3), Some(2))
        );
        assert_eq!(
            (m[1].start_ns, m[1].end_ns, m[1].count),
            (s(4), s(5), Some(1))
        );
        assert_eq!(
            (
                m[2].name.as_str(),
                m[2].start_ns,
                m[2].end_ns,
                m[2].count,
                m[2].unit.as_str()
            ),
            ("connections dropped", s(1), s(2), Some(3), "conn")
        );
        // 2.5 + 1.5 events over two one-second rows.
        assert_eq!(
            (m[3].start_ns, m[3].end_ns, m[3].count),
            (s(3), s(5), Some(4))
        );
    }

    #[test]
    fn an_agent_that_stops_early_is_marked_with_its_failure() {
        let mut run = RunData {
            series: vec![
                table("load", &[1, 2, 3, 4, 5, 6], &[]),
                table("load@a", &[1, 2, 3, 4, 5, 6], &[]),
                table("load@b", &[1, 2, 3], &[]),
                // One second short: the load's last second, not an agent that stopped.
                table("load@c", &[1, 2, 3, 4, 5], &[]),
            ],
            ..Default::default()
        };
        run.meta.warnings = vec!["host b failed: ssh ended".into()];
        let m = agent_markers(&run);
        assert_eq!(m.len(), 1, "{m:#?}");
        assert_eq!(m[0].name, "agent b failed");
        assert_eq!((m[0].start_ns, m[0].end_ns), (3_000_000_000, 6_000_000_000));
        assert_eq!(m[0].detail, "host b failed: ssh ended");
    }
}
