//! One module per subcommand; shared flag groups in [`common`].
pub mod agent;
pub mod collapse;
pub mod common;
pub mod compare;
pub mod diff;
pub mod flamegraph;
pub mod load;
pub mod load_http;
pub mod record;
pub mod run;
pub mod runs;
pub mod store;
pub mod trend;
