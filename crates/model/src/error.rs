//! Errors of the profile model.
use thiserror::Error;

/// Errors of the profile model.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A table grew past the 32-bit index space of the model.
    #[error("too many {what} for one profile (limit {limit})")]
    TooMany {
        /// What overflowed: "strings", "frames", "stacks" or "threads".
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// A transform rule's regular expression did not compile.
    #[error("invalid regular expression {pattern:?}: {source}")]
    BadRegex {
        /// The pattern as given.
        pattern: String,
        /// Why it is invalid.
        #[source]
        source: regex::Error,
    },
    /// A merge rule is not of the form `REGEX=REPLACEMENT`.
    #[error("invalid merge rule {0:?}: expected REGEX=REPLACEMENT")]
    BadRule(String),
    /// Writing output failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    /// A native profile file is malformed.
    #[error("{path}: not a valid kiln profile at byte {offset}: {why}")]
    Native {
        /// The file (or `-`).
        path: std::path::PathBuf,
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        why: String,
    },
    /// Reading a file failed.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
}
