//! The comparison as Markdown, to paste into a pull request.
use super::{figure_rows, function_rows, gate_lines, md_escape, Exporter};
use crate::Comparison;
use std::io::Write;

/// Markdown tables.
#[derive(Clone, Copy, Debug, Default)]
pub struct Markdown;

fn table(rows: &[Vec<String>], out: &mut dyn Write) -> std::io::Result<()> {
    let cols = rows.first().map_or(0, Vec::len);
    for (i, r) in rows.iter().enumerate() {
        let mut cells: Vec<String> = r.iter().map(|c| md_escape(c)).collect();
        if cells.len() == 1 {
            // A heading row: bold, across the first cell.
            cells[0] = format!("**{}**", cells[0]);
        }
        cells.resize(cols, String::new());
        writeln!(out, "| {} |", cells.join(" | "))?;
        if i == 0 {
            writeln!(out, "|{}", "---|".repeat(cols))?;
        }
    }
    Ok(())
}

impl Exporter for Markdown {
    fn export(&self, c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "**{}**", md_escape(&c.overall.line))?;
        writeln!(out)?;
        table(&figure_rows(c), out)?;
        if !c.findings.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "Findings (the causes each side's runs name; explained share, median):"
            )?;
            writeln!(out)?;
            for f in &c.findings {
                writeln!(out, "- {}", md_escape(&f.text()))?;
            }
        }
        for t in c.functions.iter().filter(|t| !t.rows.is_empty()) {
            writeln!(out)?;
            writeln!(
                out,
                "Functions ({}): {}, ranked by change",
                md_escape(&t.event),
                md_escape(&t.what)
            )?;
            writeln!(out)?;
            let rows = function_rows(c, t, str::to_string);
            table(&rows, out)?;
        }
        let lines: Vec<String> = c.notes.iter().cloned().chain(gate_lines(c)).collect();
        if !lines.is_empty() {
            writeln!(out)?;
            for n in lines {
                writeln!(out, "- {}", md_escape(&n))?;
            }
        }
        Ok(())
    }
}
