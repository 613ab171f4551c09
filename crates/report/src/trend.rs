//! The trend page of `kiln runs trend NAME -o trend.html`: each figure's series over the
//! runs of one configuration, its segments' medians and its change points marked, with
//! the functions that moved; the same data as `--format json`, drawn by the report's
//! script (web/src/report/views/trend-page.ts). Each change point opens the differential
//! flame graph of the runs either side of it (the profiles its functions were named from,
//! each side's merged), embedded as the comparison page embeds its own. One file, offline.
use crate::page::{self, Viewer};
use crate::{ReportError, ReportOptions};
use kiln_compare::trend::{Report, Trend, WindowDiff};
use serde::Serialize;
use std::io::Write;

/// The page's data: the report as `--format json` writes it, and its differential flame
/// graphs.
#[derive(Serialize)]
struct TrendPage<'a> {
    #[serde(flatten)]
    report: &'a Report,
    diffs: Vec<DiffInfo>,
    /// The runs left out, in the words the text output says them (`None`: none).
    left_out_text: Option<String>,
}

/// A differential flame graph of the page: the runs either side of change points.
#[derive(Serialize)]
struct DiffInfo {
    /// Its viewer's key (mount, URL prefix).
    key: String,
    /// The configuration (index in the report's).
    config: usize,
    event: String,
    title: String,
    /// The runs' ids before and after.
    before: Vec<i64>,
    after: Vec<i64>,
    /// The change points it belongs to: (figure key, first run after it).
    points: Vec<(&'static str, i64)>,
    /// Whether only the functions beyond noise are coloured.
    marked: bool,
}

/// Writes the trend page of `report` to `out`.
pub fn write_trend_report(
    report: &Report,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    if report.configurations.is_empty() {
        return Err(ReportError::Empty(format!(
            "no runs of '{}' to draw",
            report.name
        )));
    }
    let mut diffs = Vec::new();
    let mut viewers = Vec::new();
    for (ci, t) in report.configurations.iter().enumerate() {
        for (k, d) in t.diffs.iter().enumerate() {
            let (info, viewer) = diff_viewer(t, d, format!("cp-{ci}-{k}"), ci, opts);
            diffs.push(info);
            viewers.push(viewer);
        }
    }
    let data = TrendPage {
        report,
        diffs,
        left_out_text: report.left_out.text(),
    };
    let title = format!("kiln runs trend {}", report.name);
    page::write(&title, "trend", &data, &viewers, None, opts, out)
}

/// The differential flame graph of `d`, a pair of windows of `t`, and what the page says
/// of it.
fn diff_viewer<'a>(
    t: &Trend,
    d: &'a WindowDiff,
    key: String,
    config: usize,
    opts: &ReportOptions,
) -> (DiffInfo, Viewer<'a>) {
    let ids = |r: &std::ops::Range<usize>| -> Vec<i64> {
        t.runs[r.clone()].iter().map(|p| p.id).collect()
    };
    let (before, after) = (ids(&d.windows.0), ids(&d.windows.1));
    let span = |ids: &[i64]| match ids {
        [] => String::new(),
        [one] => format!("#{one}"),
        [first, .., last] => format!("#{first}–#{last}"),
    };
    let labels = (
        format!("runs {}", span(&before)),
        format!("runs {}", span(&after)),
    );
    let title = format!("{} → {} ({})", labels.0, labels.1, d.event);
    let sources = [&before, &after]
        .iter()
        .map(|ids| {
            let list: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
            format!("{} run(s) merged: {}", ids.len(), list.join(" "))
        })
        .collect();
    let viewer = Viewer::diff(
        key.clone(),
        (&d.before, &d.after),
        title.clone(),
        labels,
        sources,
        d.marked.clone(),
        opts,
    );
    let info = DiffInfo {
        key,
        config,
        event: d.event.clone(),
        title,
        before,
        after,
        points: t.change_points_of(&d.windows),
        marked: d.marked.is_some(),
    };
    (info, viewer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_compare::trend::{Method, Point, Series, Shift};
    use kiln_compare::Rules;
    use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};

    /// A profile of `n` samples in a function whose name is markup.
    fn profile(n: u64) -> Profile {
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let f = p.frame(b"</script><img src=x onerror=alert(1)>", FrameKind::User);
        let th = p.thread(Some(1), Some(1), b"main");
        for i in 0..n {
            p.add_sample_path(&[f], 1, i, th);
        }
        p
    }

    fn report(diffs: Vec<WindowDiff>) -> Report {
        let windows = (0..3, 3..6);
        let shift = Shift {
            index: 3,
            run: 4,
            started_unix_ms: 0,
            before: 1.0,
            after: 2.0,
            percent: 100.0,
            p: 0.01,
            verdict: "regressed",
            windows,
            functions: Vec::new(),
            machine: Some(kiln_compare::trend::MachineShift {
                before_cpus: 0.1,
                after_cpus: 1.5,
            }),
        };
        let trend = Trend {
            configuration: "<b>load</b>".into(),
            runs: (1..=6)
                .map(|id| Point {
                    id,
                    started_unix_ms: id * 1000,
                    group: String::new(),
                })
                .collect(),
            figures: vec![Series {
                key: "p50",
                label: "latency p50".into(),
                unit: "us",
                better: kiln_compare::Better::Lower,
                values: vec![Some(1.0); 6],
                segments: Vec::new(),
                change_points: vec![shift],
                below_threshold: 0,
            }],
            diffs,
        };
        Report {
            name: "<script>x</script>".into(),
            method: Method::of(&Rules::default()),
            configurations: vec![trend],
            left_out: Default::default(),
            gates: Vec::new(),
            functions: true,
        }
    }

    #[test]
    fn each_pair_of_windows_is_one_embedded_diff_and_nothing_is_markup() {
        let d = WindowDiff {
            windows: (0..3, 3..6),
            event: "cpu-clock".into(),
            before: profile(3),
            after: profile(9),
            marked: Some(vec!["</script><img src=x onerror=alert(1)>".into()]),
        };
        let mut out = Vec::new();
        write_trend_report(&report(vec![d]), &ReportOptions::default(), &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert_eq!(page.matches("data-kiln-mount=\"cp-0-0\"").count(), 1);
        assert_eq!(
            page.matches("id=\"kiln-data-cp-0-0-").count(),
            2,
            "two profiles"
        );
        assert!(!page.contains("<img"), "a function name is never markup");
        assert!(!page.contains("<b>load"));
        assert_eq!(page.matches("<script>x").count(), 0);
        // Without profiles read: no viewer, and no viewer's code.
        let mut out = Vec::new();
        write_trend_report(&report(Vec::new()), &ReportOptions::default(), &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(!page.contains("class=\"kiln-meta\""));
        assert!(page.len() < 150_000, "{} bytes", page.len());
    }
}
