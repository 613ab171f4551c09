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
    let data = TrendPage { report, diffs };
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
