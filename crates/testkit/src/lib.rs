//! kiln-testkit (under construction).
