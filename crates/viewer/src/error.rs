//! Errors of the viewer's encoding.
/// Why an HTML viewer could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewerError {
    /// Writing the output failed.
    #[error("failed to write the HTML viewer: {0}")]
    Io(#[from] std::io::Error),
    /// A table is larger than the viewer's 32-bit indices allow.
    #[error("the profile has {count} {what}; the HTML viewer supports at most {max}")]
    TooLarge {
        /// Which table overflowed (`strings`, `frames`, `stacks`, `samples`, `threads`).
        what: &'static str,
        /// Its size.
        count: usize,
        /// The largest size the encoding allows.
        max: usize,
    },
    /// The options are unusable.
    #[error("invalid viewer option {option}: {reason}")]
    BadOption {
        /// The option's name.
        option: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
}
