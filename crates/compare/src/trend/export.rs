//! `kiln runs trend`'s renderings of one [`Report`]: text, Markdown and JSON.
use super::{MachineShift, Report, Series, Shift, Trend};
use crate::gate::GateStatus;
use crate::{format_value, md_escape};
use std::fmt::Write as _;

/// UTC, to the minute (`2026-11-23 16:18`).
pub fn date(ms: i64) -> String {
    let mut d = kiln_os::clock::utc_date_time(ms);
    d.truncate(16);
    d
}

/// The permutation test's p as said: `p=0.030`, or `p≤0.01` when no shuffle reached the
/// change (the smallest p the shuffles can give).
fn p_text(p: f64, permutations: usize) -> String {
    let floor = 1.0 / (permutations + 1) as f64;
    if p <= floor * (1.0 + 1e-9) {
        format!("p≤{}", trim(floor))
    } else {
        format!("p={p:.3}")
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The most characters of a function's name a report line shows.
const FUNCTION_SHOWN: usize = 200;

/// `f +3.1 pts (+40%), g -2.0 pts (-12%)`: each function's change of share of the profile
/// and of its cost; or `none beyond noise`.
fn movers_text(s: &Shift) -> String {
    if s.functions.is_empty() {
        return "none beyond noise".into();
    }
    s.functions
        .iter()
        .map(|m| {
            let cost = if m.cost_pct.is_finite() {
                format!("{:+.0}%", m.cost_pct)
            } else {
                "new".into()
            };
            // A function's name came from a profile (any bytes, any length): escaped and
            // cut, as every name shown.
            format!(
                "{} {:+.1} pts ({cost})",
                kiln_model::text::clean_cut(&m.name, FUNCTION_SHOWN),
                m.points
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `run #41 (2026-11-20 10:02): target CPU per msg +12.4% (p≤0.01)`.
fn shift_line(t: &Trend, f: &Series, s: &Shift, permutations: usize, functions: bool) -> String {
    let run = &t.runs[s.index];
    let mut line = format!(
        "run #{} ({}): {} {:+.1}% ({} → {}, {}, {})",
        run.id,
        date(run.started_unix_ms),
        f.label,
        s.percent,
        format_value(s.before, f.unit),
        format_value(s.after, f.unit),
        s.verdict,
        p_text(s.p, permutations)
    );
    if functions {
        let _ = write!(line, "; functions that moved: {}", movers_text(s));
    }
    if let Some(m) = &s.machine {
        let _ = write!(line, "; {}", machine_text(m));
    }
    line
}

/// `the machine's other work changed with it: 1.20 → 0.20 CPUs busy (the change may be the machine's)`.
fn machine_text(m: &MachineShift) -> String {
    format!(
        "the machine's other work changed with it: {:.2} → {:.2} CPUs busy (the change may be the machine's, not this configuration's)",
        m.before_cpus, m.after_cpus
    )
}

/// The change points of a trend, by run then figure.
fn shifts(t: &Trend) -> Vec<(&Series, &Shift)> {
    let mut v: Vec<(&Series, &Shift)> = t
        .figures
        .iter()
        .flat_map(|f| f.change_points.iter().map(move |s| (f, s)))
        .collect();
    v.sort_by_key(|(_, s)| s.index);
    v
}

/// `40.1% ×20 → 16.2% ×10`: each segment's median and runs.
fn segments_text(f: &Series) -> String {
    f.segments
        .iter()
        .map(|s| format!("{} ×{}", format_value(s.median, f.unit), s.runs))
        .collect::<Vec<_>>()
        .join(" → ")
}

fn left_out_text(r: &Report) -> Option<String> {
    r.left_out.text().map(|t| format!("left out: {t}"))
}

fn heading(r: &Report, t: &Trend) -> String {
    let (first, last) = (t.runs.first(), t.runs.last());
    match (first, last) {
        (Some(a), Some(b)) => format!(
            "'{}': {} run(s) of one configuration, #{} to #{} ({} to {} UTC)",
            kiln_model::text::clean(&r.name),
            t.runs.len(),
            a.id,
            b.id,
            date(a.started_unix_ms),
            date(b.started_unix_ms)
        ),
        _ => format!("'{}': no runs", kiln_model::text::clean(&r.name)),
    }
}

fn method_text(r: &Report) -> String {
    let m = &r.method;
    format!(
        "{} ({} shuffles, alpha {}), segments of {} runs or more; changes under {}% are counted, not listed",
        m.name, m.permutations, m.alpha, m.min_segment, m.threshold_pct
    )
}

/// `passed`, `FIRED`, `cannot tell`.
pub fn gate_word(s: GateStatus) -> &'static str {
    match s {
        GateStatus::Passed => "passed",
        GateStatus::Fired => "FIRED",
        GateStatus::CannotTell => "cannot tell",
    }
}

/// The text rendering.
pub fn text(r: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut s = String::new();
    let functions = r.functions;
    for t in &r.configurations {
        let _ = writeln!(s, "{}", heading(r, t));
        let _ = writeln!(s, "  {}", t.configuration);
        let _ = writeln!(s, "change points: {}", method_text(r));
        let listed = shifts(t);
        if listed.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for (f, sh) in listed {
            let _ = writeln!(
                s,
                "  {}",
                shift_line(t, f, sh, r.method.permutations, functions)
            );
        }
        let _ = writeln!(s, "figures (median × runs of each segment, oldest first):");
        let width = t.figures.iter().map(|f| f.label.chars().count()).max();
        for f in &t.figures {
            let below = if f.below_threshold > 0 {
                format!(" ({} smaller change(s) not listed)", f.below_threshold)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  {:w$}  {}{below}",
                f.label,
                segments_text(f),
                w = width.unwrap_or(0)
            );
        }
    }
    if let Some(l) = left_out_text(r) {
        let _ = writeln!(s, "{l}");
    }
    for g in &r.gates {
        let _ = writeln!(
            s,
            "fail-if: {}: {} ({})",
            g.condition,
            gate_word(g.status),
            g.message
        );
    }
    out.write_all(s.as_bytes())
}

/// The Markdown rendering: per configuration, a table of change points and one of the
/// figures' segments.
pub fn markdown(r: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut s = String::new();
    for t in &r.configurations {
        let _ = writeln!(s, "### {}\n", md_escape(&heading(r, t)));
        let _ = writeln!(s, "{}\n", md_escape(&t.configuration));
        let _ = writeln!(s, "Change points: {}.\n", md_escape(&method_text(r)));
        let listed = shifts(t);
        if listed.is_empty() {
            let _ = writeln!(s, "No change point.\n");
        } else {
            let _ = writeln!(
                s,
                "| run | date (UTC) | figure | change | before → after | p | functions that moved |"
            );
            let _ = writeln!(s, "|---|---|---|---|---|---|---|");
            for (f, sh) in listed {
                let run = &t.runs[sh.index];
                let _ = writeln!(
                    s,
                    "| #{} | {} | {} | {:+.1}% {} | {} → {} | {} | {} |",
                    run.id,
                    date(run.started_unix_ms),
                    md_escape(&f.label),
                    sh.percent,
                    sh.verdict,
                    format_value(sh.before, f.unit),
                    format_value(sh.after, f.unit),
                    p_text(sh.p, r.method.permutations),
                    md_escape(&match &sh.machine {
                        Some(m) => format!("{}; {}", movers_text(sh), machine_text(m)),
                        None => movers_text(sh),
                    })
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "| figure | median × runs of each segment |");
        let _ = writeln!(s, "|---|---|");
        for f in &t.figures {
            let _ = writeln!(s, "| {} | {} |", md_escape(&f.label), segments_text(f));
        }
        let _ = writeln!(s);
    }
    if let Some(l) = left_out_text(r) {
        let _ = writeln!(s, "{}\n", md_escape(&l));
    }
    for g in &r.gates {
        let _ = writeln!(
            s,
            "- fail-if `{}`: **{}** ({})",
            g.condition.replace('`', "'"),
            gate_word(g.status),
            md_escape(&g.message)
        );
    }
    out.write_all(s.as_bytes())
}

/// The JSON rendering: the report as it is.
pub fn json(r: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trend::Mover;

    /// A function's name comes from a profile: a megabyte of it, or escapes, never reach
    /// the report whole or raw.
    #[test]
    fn function_names_are_escaped_and_cut() {
        let mover = |name: String| Mover {
            name,
            before_pct: 1.0,
            after_pct: 4.0,
            points: 3.0,
            cost_pct: 300.0,
            verdict: "regressed",
        };
        let shift = Shift {
            index: 0,
            run: 1,
            started_unix_ms: 0,
            before: 1.0,
            after: 2.0,
            percent: 100.0,
            p: 0.01,
            verdict: "regressed",
            windows: (0..1, 1..2),
            functions: vec![
                mover("f".repeat(1 << 20)),
                mover("esc\x1b]2;PWNED\x07".into()),
            ],
            machine: None,
        };
        let t = movers_text(&shift);
        assert!(t.len() < 1000, "{} bytes", t.len());
        assert!(t.contains(&format!(
            "{}… [1048576 chars] +3.0 pts",
            "f".repeat(FUNCTION_SHOWN - 1)
        )));
        assert!(t.ends_with("esc\\x1b]2;PWNED\\x07 +3.0 pts (+300%)"), "{t}");
    }
}
