//! Exporters of a [`Comparison`]: one trait, one file per format, chosen from one table
//! ([`Format`]), as hyperfine's `src/export/`. The HTML page is `kiln-report`'s exporter
//! of the same value.
use super::{Change, Comparison, Role, Row, Stat};

mod json;
mod markdown;
mod text;

pub use json::Json;
pub use markdown::Markdown;
pub use text::Text;

/// Renders a comparison in one format.
pub trait Exporter {
    /// Writes `c` to `out`.
    fn export(&self, c: &Comparison, out: &mut dyn std::io::Write) -> std::io::Result<()>;
}

/// The formats `kiln compare` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned text tables.
    Text,
    /// Markdown (for a pull request).
    Markdown,
    /// The whole comparison as JSON.
    Json,
}

impl Format {
    /// Every format with its names (`--format`).
    pub const ALL: &'static [(&'static str, Format)] = &[
        ("text", Format::Text),
        ("markdown", Format::Markdown),
        ("md", Format::Markdown),
        ("json", Format::Json),
    ];

    /// The format named `name`.
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }

    /// Its exporter.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Text => Box::new(Text),
            Format::Markdown => Box::new(Markdown),
            Format::Json => Box::new(Json),
        }
    }

    /// `c` rendered as a string.
    pub fn render(self, c: &Comparison) -> String {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.exporter().export(c, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// A figure's value as a person reads it.
pub fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "us" => {
            if v >= 1e6 {
                format!("{:.2} s", v / 1e6)
            } else if v >= 1e3 {
                format!("{:.2} ms", v / 1e3)
            } else {
                format!("{v:.1} µs")
            }
        }
        "bytes" => {
            if v >= (1u64 << 30) as f64 {
                format!("{:.2} GiB", v / (1u64 << 30) as f64)
            } else if v >= (1u64 << 20) as f64 {
                format!("{:.1} MiB", v / (1u64 << 20) as f64)
            } else {
                format!("{:.0} KiB", v / 1024.0)
            }
        }
        "%" => format!("{v:.1}%"),
        "/s" => {
            if v >= 1e4 {
                format!("{:.1}k/s", v / 1e3)
            } else {
                format!("{v:.0}/s")
            }
        }
        "msg" => {
            if v >= 1e6 {
                format!("{:.2}M msg", v / 1e6)
            } else if v >= 1e4 {
                format!("{:.1}k msg", v / 1e3)
            } else {
                format!("{v:.0} msg")
            }
        }
        "" if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        _ => format!("{v:.3}"),
    }
}

/// Escapes a Markdown table cell.
pub fn md_escape(s: &str) -> String {
    let s = kiln_model::text::clean(s);
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' => {
                o.push('\\');
                o.push(ch);
            }
            '\n' | '\r' => o.push(' '),
            _ => o.push(ch),
        }
    }
    o
}

/// A name for a table cell: control and invisible reordering characters shown as
/// escapes (`kiln_model::text`), at most `width` characters.
pub(crate) fn clip(name: &str, width: usize) -> String {
    let name = kiln_model::text::clean(name);
    let mut s: String = name.chars().take(width).collect();
    if name.chars().count() > width {
        s.pop();
        s.push('…');
    }
    s
}

/// A group's value: the median, with the range when there are repeats.
pub(crate) fn value_cell(s: &Option<Stat>, unit: &str) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.values.len() > 1 && s.min != s.max => format!(
            "{} ({}–{})",
            format_value(s.median, unit),
            format_value(s.min, unit),
            format_value(s.max, unit)
        ),
        Some(s) => format_value(s.median, unit),
    }
}

/// A row's cell for group `i`: its value, and for a set rate whether it was held.
pub fn group_text(r: &Row, i: usize) -> String {
    let v = value_cell(&r.groups[i], r.unit);
    match r.held.get(i).cloned().flatten() {
        Some(h) => format!("{v}, {}", h.text()),
        None => v,
    }
}

/// A change cell: its verdict for outcomes, the bare change for settings and context.
pub fn change_text(r: &Row, c: &Option<Change>) -> String {
    match c {
        None => String::new(),
        Some(c) if r.role == Role::Outcome => c.text(),
        Some(c) if c.percent.is_finite() => format!("{:+.1}%", c.percent),
        Some(_) => "new".into(),
    }
}

/// The noise cell: `±3.1%`, empty without repeats.
pub(crate) fn noise_cell(r: &Row) -> String {
    let within = (r.noise_pct > 0.0).then(|| format!("±{:.1}%", r.noise_pct));
    let between = r.floor.map(|f| format!("floor ±{:.1}%", f.pct));
    [within, between]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
}

/// A section's heading.
pub(crate) fn role_heading(role: Role) -> &'static str {
    match role {
        Role::Outcome => "outcomes (judged)",
        Role::Setting => "settings (held or not, never judged)",
        Role::Context => "context (shown, never judged)",
    }
}

/// The figure table as rows of cells: the header, then per role a heading row (one
/// cell) and its figures.
pub(crate) fn figure_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut header = vec!["figure".to_string()];
    for (i, g) in c.groups.iter().enumerate() {
        let n = g.runs.len();
        header.push(if n > 1 {
            format!("{} (median of {n}, range)", g.label)
        } else {
            g.label.clone()
        });
        if i > 0 {
            header.push(format!("change vs {}", c.groups[0].label));
        }
    }
    header.push("noise".into());
    let mut out = vec![header];
    for role in [Role::Outcome, Role::Setting, Role::Context] {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.role == role).collect();
        if rows.is_empty() {
            continue;
        }
        out.push(vec![role_heading(role).to_string()]);
        for r in rows {
            let mut cells = vec![r.label.clone()];
            for i in 0..r.groups.len() {
                cells.push(group_text(r, i));
                if i > 0 {
                    cells.push(change_text(r, &r.changes[i]));
                }
            }
            cells.push(noise_cell(r));
            out.push(cells);
        }
    }
    out
}

/// A function table's cost cell: median, with the range when there are repeats.
pub fn cost_text(s: &Stat) -> String {
    if s.values.len() > 1 {
        format!("{:.2} ({:.2}–{:.2})", s.median, s.min, s.max)
    } else {
        format!("{:.2}", s.median)
    }
}

/// A function table as rows of cells (the header first), each name passed through `name`.
pub(crate) fn function_rows(
    c: &Comparison,
    t: &super::FunctionTable,
    name: impl Fn(&str) -> String,
) -> Vec<Vec<String>> {
    let (a, b) = c.ends();
    let mut rows = vec![vec![
        "function".to_string(),
        format!("{} {a}", t.unit),
        format!("{} {b}", t.unit),
        "change".into(),
        format!("total% {a}"),
        format!("total% {b}"),
    ]];
    for r in &t.rows {
        rows.push(vec![
            name(&r.name),
            cost_text(&r.before),
            cost_text(&r.after),
            r.change.text(),
            format!("{:.2}", r.total_before),
            format!("{:.2}", r.total_after),
        ]);
    }
    rows
}

/// The `--fail-if` lines.
pub(crate) fn gate_lines(c: &Comparison) -> Vec<String> {
    c.gates
        .iter()
        .map(|g| {
            let status = match g.status {
                super::GateStatus::Passed => "passed",
                super::GateStatus::Fired => "FIRED",
                super::GateStatus::CannotTell => "cannot tell",
            };
            format!("fail-if {}: {status} — {}", g.condition, g.message)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        assert_eq!(md_escape("a|b<script>"), "a\\|b\\<script\\>");
        assert_eq!(clip("abc\u{1b}def", 4), "abc…");
        assert_eq!(format_value(64.0, ""), "64");
        assert_eq!(format_value(25000.0, "/s"), "25.0k/s");
        assert_eq!(Format::named("md"), Some(Format::Markdown));
    }
}
