//! kiln-loadgen (under construction).
