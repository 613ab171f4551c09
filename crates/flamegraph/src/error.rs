//! Errors of flame graph rendering.
use std::path::PathBuf;
use thiserror::Error;

/// Errors of the flame graph renderer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FlamegraphError {
    /// The profile has no sample with a non-zero weight: there is nothing to draw.
    ///
    /// flamegraph.pl writes an "ERROR" SVG in this case; kiln writes nothing and fails,
    /// so a pipeline notices.
    #[error("no samples to draw (the profile is empty or every weight is zero)")]
    NoSamples,
    /// The weights of the profile add up to more than 2^64-1: widths and percentages
    /// computed from a saturated total would be wrong, so nothing is drawn.
    #[error(
        "the weights of the samples add up to more than {} (2^64-1): too large to draw",
        u64::MAX
    )]
    WeightOverflow,
    /// An option has a value the renderer cannot use.
    #[error("invalid {option} {value:?}: {reason}")]
    InvalidOption {
        /// The option, spelled as on the command line (`--width`).
        option: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A line of a `--nameattr` or `palette.map` file could not be read.
    #[error("{}:{line}: {reason}: {text:?}", path.display())]
    BadFileLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        reason: &'static str,
        /// The offending line (lossily decoded).
        text: String,
    },
    /// Reading an auxiliary file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Writing the SVG failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
}
