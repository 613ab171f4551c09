//! kiln-record (under construction).
