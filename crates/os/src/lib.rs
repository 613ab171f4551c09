//! # kiln-os: what every kiln process shares with the operating system
//!
//! Three services every stage needs and none owns, kept apart from the profile model:
//!
//! * [`clock`]: CLOCK_MONOTONIC, read by one function, the clock of every timestamp kiln
//!   keeps (perf samples, eBPF records, the load's seconds), so a window of a run selects
//!   the same seconds everywhere.
//! * [`stop`]: the stop a run's parts watch, raised by the one owner of signals (the
//!   binary) or by a deadline.
//! * [`io`]: output files that appear whole or not at all, and never damage what they
//!   replace, with the registry of temporary files the signal handler removes.
//! * [`child`]: the programs kiln starts, each in a process group of its own that ends
//!   with kiln, on a stop or at a deadline, its output captured within a bound.
//! * [`proc`]: `/proc` read as bytes, so that a process whose name is not UTF-8 is seen.
//! * [`kmsg`]: the kernel's log, for the OOM killer's kill of a process kiln did not start.
#![deny(missing_docs)]

pub mod child;
pub mod clock;
pub mod io;
pub mod kmsg;
pub mod proc;
pub mod stop;
