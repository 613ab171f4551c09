//! A small synchronous AMQP 0.9.1 client, specialised for load generation.
//!
//! Why not a general client: the goal is the least client CPU per message, so the client
//! takes load from the broker it measures as little as possible. Blocking sockets with one
//! thread reading and one writing per connection, hand-written framing and batched writes
//! cost less per message than a general async client's per-message futures and channels.
pub mod conn;
pub mod wire;

pub use conn::{Connection, FrameReader, Uri, Writer};
pub use wire::FieldValue;
