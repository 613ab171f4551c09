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
//! with units), and the period. Messages are decoded by prost from the .proto's own
//! field declarations ([`proto`]); malformed messages, truncated gzip data and indexes
//! out of range are errors naming the file and what is wrong, never a panic.
mod delta;
pub mod proto;
mod read;
mod write;

pub use delta::{encode_gz, subtract, DeltaStats};
pub use read::{convert, decode, decode_message, inflate, sniff, Decoded, PprofInfo};
pub use write::{to_message, write, WriteOptions};
