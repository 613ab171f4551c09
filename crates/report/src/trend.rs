//! The trend page of `kiln runs trend NAME -o trend.html`: each figure's series over the
//! runs of one configuration, its segments' medians and its change points marked, with
//! the functions that moved; the same data as `--format json`, drawn by the report's
//! script (web/src/report/views/trend-page.ts). One file, offline.
use crate::{page, ReportError, ReportOptions};
use kiln_compare::trend::Report;
use serde::Serialize;
use std::io::Write;

#[derive(Serialize)]
struct Page<'a> {
    kind: &'static str,
    version: u32,
    title: String,
    origin: u64,
    trend: &'a Report,
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
    let title = format!("kiln runs trend {}", report.name);
    let data = Page {
        kind: "trend",
        version: 1,
        title: title.clone(),
        origin: 0,
        trend: report,
    };
    page::write(&title, &data, &[], None, opts, out)
}
