//! pprof's `profile.proto`, gzipped or not: Go's CPU, heap, allocs, mutex, block,
//! goroutine and threadcreate profiles (and any other writer's) in, any kiln profile out.
//!
//! ```text
//! kiln flamegraph cpu.pb.gz -o cpu.html                  # the default sample type, as go tool pprof
//! kiln collapse --sample-type alloc_space heap.pb.gz      # another one
//! kiln collapse --focus-label handler=query cpu.pb.gz     # samples with a label (pprof.Do)
//! kiln collapse perf.data -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
//! ```
//!
//! Reading keeps what kiln's model can hold: every sample type (one profile each),
//! function names with their file and first line, inlined functions (as
//! [`kiln_model::FrameKind::Inline`] frames below their caller), labels (text and numbers
//! with units), and the period. Files are read in place from their inflated bytes (a
//! small wire reader over the .proto's field numbers: a sample is decoded when its turn
//! comes, never all of them at once, so memory follows the profile, not the message);
//! `kiln run --pprof`'s deltas use the messages prost derives from the .proto's own
//! declarations ([`proto`]). Malformed messages, truncated gzip data and indexes out of
//! range are errors naming the file and what is wrong, never a panic; a stack deeper
//! than [`kiln_model::input::MAX_STACK_DEPTH`] frames is a counted skip and more than
//! [`kiln_model::input::MAX_NAMES`] strings an error.
mod delta;
pub mod proto;
mod read;
mod wire;
mod write;

pub use crate::compressed::inflate;
pub use delta::{encode_gz, subtract, DeltaStats};
pub use read::{convert, decode, decode_chosen, decode_message, sniff, Decoded, PprofInfo};
pub use write::{to_message, write, WriteOptions};
