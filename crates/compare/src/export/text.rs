//! The comparison as aligned text: the overall line, the figures by role, the function
//! tables, the notes.
use super::{clip, figure_rows, function_rows, gate_lines, Exporter};
use crate::{Comparison, FunctionTable};
use kiln_model::text::clean;
use std::io::Write;

/// Aligned text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Text;

/// Writes rows of cells with each column as wide as its widest cell; a row of one cell
/// is a heading.
fn aligned(rows: &[Vec<String>], out: &mut dyn Write) -> std::io::Result<()> {
    // Cells quote run names, notes and function names: escaped for the terminal.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c).into_owned()).collect())
        .collect();
    let rows = &rows[..];
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter(|r| r.len() > 1)
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        if r.len() == 1 {
            writeln!(out, "{}", r[0])?;
            continue;
        }
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn functions(t: &FunctionTable, c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "functions ({}): {}, ranked by change",
        clean(&t.event),
        clean(&t.what)
    )?;
    aligned(&function_rows(c, t, |n| clip(n, 60)), out)
}

impl Exporter for Text {
    fn export(&self, c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", clean(&c.overall.line))?;
        writeln!(out)?;
        aligned(&figure_rows(c), out)?;
        if !c.findings.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "findings (the causes each side's runs name; explained share, median):"
            )?;
            for f in &c.findings {
                writeln!(out, "  {}", clean(&f.text()))?;
            }
        }
        for t in c.functions.iter().filter(|t| !t.rows.is_empty()) {
            functions(t, c, out)?;
        }
        for n in &c.notes {
            writeln!(out, "note: {}", clean(n))?;
        }
        for g in gate_lines(c) {
            writeln!(out, "{}", clean(&g))?;
        }
        Ok(())
    }
}
