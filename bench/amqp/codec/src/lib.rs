//! Only its benchmark (benches/codec.rs).
