//! What can go wrong while collapsing: warnings that point at a malformed line and the errors that stop a collapse.
use thiserror::Error;

/// A malformed piece of input: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The input's name (path or `<stdin>`).
    pub source: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub message: String,
    /// The offending line (lossily decoded, control characters escaped, at most 200 chars).
    pub text: String,
}

impl Warning {
    pub(crate) fn new(source: &str, line: u64, message: &str, text: &[u8]) -> Self {
        Warning {
            source: source.to_string(),
            line,
            message: message.to_string(),
            // The offending line as a terminal may show it: escaped, cut short.
            text: kiln_model::text::clean_bytes(text, 200),
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.source, self.line, self.message, self.text
        )
    }
}

fn line_suffix(line: u64) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" (at line {line})")
    }
}

/// Errors of the collapsers.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CollapseError {
    /// A malformed line in strict mode.
    #[error("{0} (strict mode: malformed input is an error)")]
    Malformed(Warning),
    /// The input's format could not be recognised.
    #[error("{0}: cannot tell the input format (not perf script text, folded stacks or bpftrace output); use --format")]
    Undetected(String),
    /// The weights of the samples kept add up to more than a 64-bit total can hold: any
    /// share or width computed from it would be wrong. `line` 0 means the overflow came
    /// from joining the parts of the input parsed in parallel.
    #[error("{}: the weights of the samples add up to more than {} (2^64-1), more than kiln can count{}", .0.source, u64::MAX, line_suffix(.0.line))]
    WeightOverflow(Warning),
    /// The input has more distinct stack prefixes (call-tree nodes) than kiln indexes
    /// (2^32-1); `line` 0 means the limit was passed when joining the parts parsed in
    /// parallel.
    #[error("{}: {}{}; split the input into smaller recordings", .0.source, .0.message, line_suffix(.0.line))]
    TooManyStacks(Warning),
    /// The model refused the input (too many distinct frames).
    #[error("{0}")]
    Model(#[from] kiln_model::ModelError),
}
