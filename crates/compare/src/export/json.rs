//! The comparison as JSON: every figure with its role, values, verdicts and noise, the
//! function tables, the notes and the `--fail-if` results.
use super::Exporter;
use crate::Comparison;

/// JSON, pretty-printed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl Exporter for Json {
    fn export(&self, c: &Comparison, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, c)?;
        out.write_all(b"\n")
    }
}
