//! kiln-bpf (under construction).
