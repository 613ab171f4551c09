//! kiln-viewer (under construction).
