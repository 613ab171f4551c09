//! # kiln-model: the profile model shared by every kiln stage
//!
//! A *profile* is a set of weighted samples, each pointing at a call stack. kiln's
//! collapsers, recorder, renderers, viewer and run store all speak this one model, so a
//! profile read from `perf script` text, recorded live, or loaded from a stored run can be
//! transformed, rendered and compared the same way.
//!
//! ```text
//! perf script | kiln collapse > stacks.folded      # text in, folded out, through a Profile
//! kiln flamegraph stacks.folded > flame.svg
//! ```
//!
//! ## Design constraints
//!
//! * **Millions of samples.** Samples are stored column-wise ([`SampleTable`]): a stack
//!   index, a weight, a timestamp and a thread index per sample, 24 bytes each. Names are
//!   interned once ([`StringTable`]), frames once ([`FrameTable`]) and stacks once, as a
//!   prefix tree of `(parent, frame)` nodes ([`StackTable`]). A million samples over ten
//!   thousand distinct stacks costs about 24 MB plus the tree.
//! * **Nothing is lost on the way.** Names are bytes, not `str`: `perf script` prints
//!   whatever bytes a binary's symbol table holds, and a folded file written by kiln must
//!   give the same bytes back. Renderers escape; the model never rewrites a name.
//! * **Later stages need time and thread identity.** The viewer's time-range selection and
//!   stored runs need per-sample timestamps and thread identity; collapsers keep them where
//!   the input has them ([`NO_TIME`] and [`ThreadId::NONE`] where it does not).
//! * **Transforms are cheap.** Because stacks form a prefix tree, a transform that maps or
//!   drops frames is computed once per distinct stack node, parent before child, never once
//!   per sample (see [`transform`]).
//! * **32-bit handles.** Strings, frames, label sets and stack nodes are numbered with
//!   `u32`s, which halves the tables (the stack tree is most of a big profile's memory).
//!   The 4-billionth entry of a table is an `expect`, not an error: each entry takes at
//!   least 16 bytes (a stack node 20, a string its bytes plus 16), so reaching it takes
//!   64 GB of tables or more, from inputs far past `--max-input`'s default of 1 GiB; there
//!   kiln stops with the message rather than number anything wrong. The one table a
//!   streamed input grows without bound, `perf script`'s call tree in the collapser, is
//!   capped and ends the parse with an error naming the line.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod beam;
pub mod categories;
pub mod causes;
mod error;
mod folded;
mod frames;
pub mod input;
mod labels;
pub mod native;
mod profile;
mod samples;
pub mod saturation;
mod stacks;
mod strings;
pub mod text;
mod threads;
pub mod transform;
pub mod waits;

pub use error::ModelError;
pub use folded::{FoldedOptions, FoldedWriter};
pub use frames::{Frame, FrameId, FrameKind, FrameTable, Source};
pub use labels::{Label, LabelMatch, LabelSetId, LabelTable, LabelValue};
pub use profile::{
    format_bytes, format_ns, thousands, EventInfo, ImportMap, Profile, Quantity, WeightUnit,
};
pub use samples::{SampleTable, NO_TIME};
pub use stacks::{StackId, StackTable};
pub use strings::{StrId, StringTable};
pub use threads::{Thread, ThreadId, ThreadTable};

/// The hash builder used by every interning table: fast, not DoS-resistant (inputs are
/// local profiles, not network traffic).
pub(crate) type FastHash = foldhash::fast::FixedState;
