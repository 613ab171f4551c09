//! The trend page of `kiln runs trend NAME -o trend.html`: each figure's series over the
//! runs of one configuration, its segments' medians and its change points marked, with
//! the functions that moved; the same data as `--format json`, drawn by the report's
//! script (web/src/report/views/trend-page.ts). One file, offline.
use crate::{page, ReportError, ReportOptions};
use kiln_compare::trend::Report;
use std::io::Write;

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
    page::write(&title, "trend", report, &[], None, opts, out)
}
