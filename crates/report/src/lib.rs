//! # kiln-report: one HTML file where the load's timeline and the profiles meet
//!
//! A stored run ([`kiln_store::RunData`]) holds the load's seconds (rates, latency
//! percentiles, flow-control flags), the target's seconds (CPU by thread group, memory,
//! context switches), the machine's, latency histograms and the profiles — all on one
//! clock. This crate writes them as one self-contained, offline HTML page:
//!
//! ```text
//! kiln run --name before -p "$(pgrep -o beam.smp)" -e cpu,offcpu -d 30 load amqp -x 1 -y 1 -r 20000
//! kiln runs report before -o before.html      # kiln run writes one by default
//! kiln compare before after -o compare.html
//! ```
//!
//! * a header: what was run, the headline figures with their units, warnings;
//! * charts of every series on one shared time axis (0 is the start of the measurement),
//!   drawn on canvas from the stored columns, hover for the values of a second;
//! * the flame graphs of every recorded event, with the viewer's features
//!   ([`kiln_viewer::write_embedded`]);
//! * **a window dragged on any chart re-draws every flame graph and function table for
//!   exactly that window** (and the window is kept in the URL), sweep steps select their
//!   window from the latency-vs-rate curve;
//! * where the CPU went by category ([`categories`]): BEAM, Go, JVM and kernel rule sets,
//!   and the user's own.
//!
//! [`write_compare_report`] writes the same layout for two runs or groups of repeats:
//! figures side by side with the change and its significance, overlaid latency
//! distributions and series aligned at the start of measurement, the differential flame
//! graph and the function table.
//!
//! ## Design constraints
//!
//! * **Offline and inert.** The page loads nothing: its script and data are inline, a
//!   Content-Security-Policy forbids every fetch, and every name, note and tag reaches the
//!   page as data (base64 JSON decoded by the script, shown with `textContent`), never as
//!   markup.
//! * **Exact windows.** A window selects the samples stamped inside it, and off-CPU
//!   blocks (stamped when they began, weighing their duration) count the part of
//!   `[t, t + duration]` inside it: the report's flame graph of a window is what the store
//!   holds for that window, which the browser tests check.
//! * **Large runs stay smooth.** Series are drawn with min/max decimation per pixel column
//!   (uPlot's approach): a one-hour run at one-second resolution with twenty series draws
//!   in a few milliseconds, and the cursor moves on an overlay without redrawing them.
//! * **The charts live beside the viewer.** The TypeScript is under `web/src/report/`,
//!   built into `web/dist/report.js` and embedded here; the viewer's bundle is embedded
//!   once per page after it.
#![deny(missing_docs)]

pub mod categories;
mod compare;
mod firefox;
pub mod latency;
mod markers;
mod nodes;
mod page;
mod run;
mod trend;

pub use categories::{Rules, RulesError};
pub use compare::{write_compare_report, CompareHtml};
pub use firefox::{timeline as firefox_timeline, write_run_firefox};
pub use run::write_run_report;
pub use trend::write_trend_report;

use std::path::{Path, PathBuf};

/// The report's code (`web/src/report/`, built by `web/build.mjs`).
pub(crate) const REPORT_JS: &str = include_str!("../../../web/dist/report.js");

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// Writing failed.
    #[error("cannot write the report: {0}")]
    Io(#[from] std::io::Error),
    /// A profile could not be embedded.
    #[error(transparent)]
    Viewer(#[from] kiln_viewer::ViewerError),
    /// The category rules are wrong.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// The report's data could not be encoded.
    #[error("cannot encode the report's data: {0}")]
    Json(#[from] serde_json::Error),
    /// Nothing to report.
    #[error("nothing to report: {0}")]
    Empty(String),
}

/// Options of a report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Category rules for the CPU-by-category charts. Default: the built-in sets.
    pub rules: Rules,
    /// Data larger than this many bytes is deflate-compressed (profiles and series).
    /// Default: 64 KiB.
    pub compress_above: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            rules: Rules::builtin(),
            compress_above: 64 * 1024,
        }
    }
}

/// Writes the report of `run` to the file `path`, atomically (a temporary file renamed
/// into place; never replacing what is not a regular file).
pub fn write_run_report_file(
    run: &kiln_store::RunData,
    opts: &ReportOptions,
    path: &Path,
) -> Result<(), ReportError> {
    kiln_os::io::write_atomically(path, |w| write_run_report(run, opts, w))
}

/// A run's name as part of a file name: letters, digits, `.`, `-` and `_` kept, anything
/// else `_`, at most 64 characters, never empty or starting with a dot.
pub fn file_name_part(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() {
        s.push_str("run");
    }
    s
}

/// Where `kiln run` writes a run's report unless told: beside the store,
/// `<store's directory>/<name>-<id>.html`.
pub fn default_report_path(store: &Path, name: &str, id: i64) -> PathBuf {
    let dir = store
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    dir.join(format!("{}-{id}.html", file_name_part(name)))
}

/// `path` with `-N` before its extension (`run.html` → `run-2.html`): the reports of
/// `kiln run --repeat`'s runs.
pub fn numbered_path(path: &Path, n: u32) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(e) => format!("{stem}-{n}.{}", e.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_paths_are_safe_file_names_beside_the_store() {
        assert_eq!(
            default_report_path(Path::new("/x/kiln-runs.db"), "before", 3),
            Path::new("/x/before-3.html")
        );
        assert_eq!(
            default_report_path(Path::new("kiln-runs.db"), "../../etc/<b>", 12),
            Path::new("./_._.._etc__b_-12.html")
        );
        assert_eq!(file_name_part(""), "run");
        assert_eq!(file_name_part(&"x".repeat(100)).len(), 64);
        assert_eq!(file_name_part("née"), "n_e");
        assert_eq!(
            numbered_path(Path::new("d/run.html"), 2),
            Path::new("d/run-2.html")
        );
        assert_eq!(numbered_path(Path::new("r"), 3), Path::new("r-3"));
    }

    #[test]
    fn report_bundle_cannot_close_its_script() {
        assert!(!REPORT_JS.to_ascii_lowercase().contains("</script"));
        assert!(!REPORT_JS.contains("<!--"));
    }
}
