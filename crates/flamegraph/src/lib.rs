//! kiln-flamegraph (under construction).
