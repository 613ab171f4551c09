//! What can go wrong reading or writing a profile format.
use crate::BoxError;
/// Why a format could not be told, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The content is none of the formats kiln reads.
    #[error("{name}: cannot tell the input format: it is none of {formats}; give --format")]
    Undetected {
        /// The input.
        name: String,
        /// The formats kiln reads.
        formats: String,
    },
    /// A format name that is not in the table (or not one this command takes).
    #[error("unknown format '{given}': expected one of {formats}")]
    UnknownName {
        /// As given.
        given: String,
        /// The formats expected.
        formats: String,
    },
    /// An output file name whose extension says nothing this command writes.
    #[error("cannot tell the output format of '{path}' from its name: this command writes {formats}; use one of their extensions or give --output-format")]
    UnknownOutput {
        /// The file.
        path: String,
        /// The formats the command writes.
        formats: String,
    },
    /// An extension several of the command's formats use.
    #[error("'{path}' could be {candidates}: give --output-format")]
    Ambiguous {
        /// The file.
        path: String,
        /// The formats it could be.
        candidates: String,
    },
    /// A format this command does not take here.
    #[error("{what} cannot be {format}: expected {formats}")]
    NotHere {
        /// What was asked (`the input of kiln diff`).
        what: String,
        /// The format.
        format: &'static str,
        /// What it takes.
        formats: String,
    },
    /// Malformed input in a binary format.
    #[error("{name}: not a valid {format} file: {why}")]
    Malformed {
        /// The input.
        name: String,
        /// The format.
        format: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A binary input on standard input where a file is needed.
    #[error("{format} input must be given as a file path, not on standard input")]
    NeedsPath {
        /// The format.
        format: &'static str,
    },
    /// The input has no profile of the event or sample type asked for.
    #[error("'{name}' has no {what} '{want}' (it has: {have})")]
    NoSuchEvent {
        /// The input.
        name: String,
        /// `event` or `sample type`.
        what: &'static str,
        /// As asked.
        want: String,
        /// What there is.
        have: String,
    },
    /// An input could not be opened.
    #[error("Failed to open '{name}'")]
    Open {
        /// The file.
        name: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing failed.
    #[error("Failed to read or write '{name}'")]
    Io {
        /// The file.
        name: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A text collapser's error.
    #[error(transparent)]
    Collapse(#[from] kiln_collapse::CollapseError),
    /// A native profile's error.
    #[error(transparent)]
    Model(#[from] kiln_model::ModelError),
    /// An input larger than the input limit (`--max-input`).
    #[error(transparent)]
    TooLarge(#[from] kiln_model::input::TooLarge),
    /// perf.data could not be read.
    #[error("Failed to read perf.data file '{name}'")]
    PerfData {
        /// The file.
        name: String,
        /// The error (the recorder's).
        #[source]
        source: BoxError,
    },
    /// An exported run could not be read.
    #[error("Cannot read the stored run '{name}'")]
    Store {
        /// The file.
        name: String,
        /// The error (the store's).
        #[source]
        source: BoxError,
    },
    /// A format whose reader this caller did not give ([`crate::ReadOptions::files`]).
    #[error("'{name}' is {format}, which this program cannot read")]
    NoReader {
        /// The input.
        name: String,
        /// Its format.
        format: &'static str,
    },
}
