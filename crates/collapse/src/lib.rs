//! kiln-collapse (under construction).
