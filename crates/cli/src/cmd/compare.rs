//! `kiln compare`: stored runs (or groups of repeats) side by side, with statistics, the
//! function table and a differential flame graph; `--fail-if` gates for CI.
use super::store::{group_profiles, resolve, StoreArgs};
use anyhow::{bail, Context, Result};
use kiln_run::compare::{self, Comparison};
use kiln_store::RunMeta;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when a --fail-if condition holds.
pub const GATE_FAILED: u8 = 3;

/// Compare stored runs: throughput, latency percentiles, target CPU per operation, memory
/// and context switches, with the change and whether it is beyond noise (with --repeat
/// runs: median, range and a Mann-Whitney test); the functions whose share and CPU time
/// per operation changed most; a differential flame graph with -o x.svg or x.html.
///
/// Examples:
///   kiln compare before after
///   kiln compare before after --format markdown >> pr.md
///   kiln compare base pr --fail-if 'p99>+10%,cpu_per_op>+5%'
///   kiln compare before after -o diff.html
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runs to compare (ids, or names: the latest group of runs of that name); the first is
    /// the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,

    /// Output format of the table: text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "md", "json"])]
    pub format: String,

    /// Also write FILE: the comparison page (.html: figures, latency distributions and
    /// series overlaid, the differential flame graph and function table; offline, one
    /// file), a differential flame graph (.svg) of the first and last runs' profiles, or
    /// the table (.md, .json, .txt).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Format of -o's file, whatever its name: html, svg, markdown, json, text.
    #[arg(long, value_name = "FORMAT", requires = "output")]
    pub output_format: Option<String>,

    /// Exit with status 3 when a condition holds for the last run against the first:
    /// FIGURE>LIMIT or FIGURE<LIMIT, comma-separated; LIMIT in % is a relative change, else
    /// the value in the figure's unit. Figures: throughput, send_rate, p50, p99, p999, max,
    /// cpu_per_op (cpu_per_msg, cpu_per_req), target_cpu, rss, switches_per_op, kiln_cpu.
    /// Example: --fail-if 'p99>+10%,cpu_per_msg>+5%,throughput<-5%'
    #[arg(long, value_name = "CONDITIONS")]
    pub fail_if: Option<String>,

    /// Smallest change of a median, in percent, called a change (smaller differences are
    /// reported as within noise even when the test is sure of them).
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub threshold: f64,

    /// Largest p-value of the Mann-Whitney test called significant.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    pub alpha: f64,

    /// Rows of the function table (0: none).
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub table: usize,

    /// Event whose profiles the function table and flame graph use (default: the first
    /// recorded, usually cpu-clock).
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub transforms: super::common::TransformArgs,
}

/// One function's change, with its CPU time per operation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FunctionRow {
    #[serde(flatten)]
    pub change: kiln_diff::FunctionChange,
    /// CPU time per operation spent in the function and its callees (its total share of
    /// the target's CPU per operation), before and after, µs: unlike a share, it stays
    /// comparable when the rate changed (CPU profiles of runs that count operations).
    pub us_per_op: (Option<f64>, Option<f64>),
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn pick<'a>(
    profiles: &'a [kiln_model::Profile],
    event: Option<&str>,
) -> Option<&'a kiln_model::Profile> {
    match event {
        Some(e) => profiles.iter().find(|p| {
            p.event.name == e
                || p.event.name.split(':').next() == Some(e)
                || (e == "cpu" && p.event.name == "cpu-clock")
        }),
        None => profiles.first(),
    }
}

/// What `kiln compare -o` writes.
const OUTPUTS: &[kiln_formats::Format] = &[
    kiln_formats::Format::Html,
    kiln_formats::Format::Svg,
    kiln_formats::Format::Markdown,
    kiln_formats::Format::Json,
    kiln_formats::Format::Text,
];

pub fn run(args: Args) -> Result<ExitCode> {
    // An output name that says nothing fails before any work.
    if let Some(path) = &args.output {
        kiln_formats::output_format(Some(path), args.output_format.as_deref(), OUTPUTS, None)?;
    }
    let gates = match &args.fail_if {
        Some(spec) => compare::parse_gates(spec).map_err(|e| anyhow::anyhow!("--fail-if {e}"))?,
        None => Vec::new(),
    };
    let store = args.store.open_existing()?;
    let mut groups: Vec<(String, Vec<RunMeta>)> = Vec::new();
    for r in &args.runs {
        groups.push((r.clone(), resolve(&*store, r)?));
    }
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1");
    }
    if !(args.threshold >= 0.0 && args.threshold.is_finite()) {
        bail!("--threshold must be a non-negative percentage");
    }
    let c = compare::compare(
        &groups,
        &compare::CompareOptions {
            alpha: args.alpha,
            threshold_pct: args.threshold,
        },
    );
    let first = &groups[0].1;
    let last = &groups[groups.len() - 1].1;
    let t = args.transforms.to_transforms()?;
    let before: Vec<_> = group_profiles(&*store, first)?
        .into_iter()
        .map(|p| super::common::apply_transforms(p, &t, true))
        .collect();
    let after: Vec<_> = group_profiles(&*store, last)?
        .into_iter()
        .map(|p| super::common::apply_transforms(p, &t, true))
        .collect();
    let event = args.event.as_deref();
    let profiles = match (pick(&before, event), pick(&after, event)) {
        (Some(b), Some(a)) => Some((b, a)),
        _ => None,
    };
    if let (Some(e), None) = (event, &profiles) {
        bail!("the runs do not both have a profile of event '{e}'");
    }
    let mut warnings = Vec::new();
    let functions: Vec<FunctionRow> = match profiles {
        Some((b, a)) if args.table > 0 => {
            if b.event.name != a.event.name {
                warnings.push(format!(
                    "the profiles measure different events ('{}' and '{}')",
                    b.event.name, a.event.name
                ));
            }
            let is_cpu = b.event.name == "cpu-clock" || b.event.name == "task-clock";
            let per_op = |g: &[RunMeta]| {
                median(
                    &g.iter()
                        .filter_map(|m| m.headline.cpu_per_op_us)
                        .collect::<Vec<_>>(),
                )
            };
            let (cb, ca) = (per_op(first), per_op(last));
            kiln_diff::function_changes(b, a)?
                .into_iter()
                .take(args.table)
                .map(|change| FunctionRow {
                    us_per_op: if is_cpu {
                        (
                            cb.map(|c| c * change.total_before / 100.0),
                            ca.map(|c| c * change.total_after / 100.0),
                        )
                    } else {
                        (None, None)
                    },
                    change,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let text = render(&args.format, &c, &functions, &warnings)?;
    super::common::ensure_stdout_open()?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if let Some(path) = &args.output {
        use kiln_formats::Format;
        let format =
            kiln_formats::output_format(Some(path), args.output_format.as_deref(), OUTPUTS, None)?;
        match format {
            Format::Svg => {
                let (b, a) = profiles.context("the runs have no profiles to draw")?;
                write_flame(path, b, a, &args.runs)?;
            }
            Format::Html => {
                // The comparison page: figures, distributions, series, diff flame graph.
                let runs = groups
                    .iter()
                    .map(|(_, g)| {
                        g.iter()
                            .filter_map(|m| m.id)
                            .map(|i| store.load(i))
                            .collect()
                    })
                    .collect::<Result<Vec<Vec<_>>, _>>()?;
                let lines: Vec<_> = functions
                    .iter()
                    .map(|f| kiln_report::FunctionLine {
                        change: f.change.clone(),
                        us_per_op: f.us_per_op,
                    })
                    .collect();
                let page = kiln_report::CompareReport {
                    comparison: &c,
                    runs: &runs,
                    functions: &lines,
                    notes: &warnings,
                    profiles,
                };
                kiln_report::write_compare_report_file(&page, &Default::default(), path)
                    .with_context(|| format!("Failed to write '{}'", path.display()))?;
            }
            Format::Markdown => write_file(path, &render("markdown", &c, &functions, &warnings)?)?,
            Format::Json => write_file(path, &render("json", &c, &functions, &warnings)?)?,
            _ => write_file(path, &render("text", &c, &functions, &warnings)?)?,
        }
        eprintln!("wrote {}", path.display());
    }
    if !gates.is_empty() {
        let failed = compare::check_gates(&c, &gates);
        if !failed.is_empty() {
            for f in &failed {
                eprintln!("fail-if: {f}");
            }
            return Ok(ExitCode::from(GATE_FAILED));
        }
        eprintln!("fail-if: every condition passed");
    }
    Ok(ExitCode::SUCCESS)
}

fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    kiln_model::io::write_atomically::<std::io::Error>(path, |w| w.write_all(text.as_bytes()))
        .with_context(|| format!("Failed to write '{}'", path.display()))
}

fn write_flame(
    path: &std::path::Path,
    before: &kiln_model::Profile,
    after: &kiln_model::Profile,
    names: &[String],
) -> Result<()> {
    let title = format!(
        "{} → {} ({})",
        names.first().map(String::as_str).unwrap_or(""),
        names.last().map(String::as_str).unwrap_or(""),
        after.event.name
    );
    // Normalised: runs of different length or rate compare by share.
    let (b, a) = super::diff::normalized(before.clone(), after.clone(), true);
    super::common::write_output(Some(path), |w| {
        let mut o = kiln_flamegraph::Options::default();
        o.title = Some(title.clone());
        kiln_flamegraph::render_diff(&b, &a, &o, w).context("Failed to render the flame graph")?;
        Ok(())
    })
}

fn render(
    format: &str,
    c: &Comparison,
    functions: &[FunctionRow],
    warnings: &[String],
) -> Result<String> {
    use std::fmt::Write as _;
    let mut s = String::new();
    match format {
        "json" => {
            let v = serde_json::json!({
                "comparison": c,
                "functions": functions,
                "warnings": warnings,
            });
            s = serde_json::to_string_pretty(&v)?;
            s.push('\n');
        }
        "markdown" | "md" => {
            compare::write_markdown(c, &mut s);
            if !functions.is_empty() {
                let _ = writeln!(s, "\n| function | self % before | self % after | Δself | total % before | total % after | Δtotal | µs/op before | µs/op after |");
                let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
                for f in functions {
                    let r = &f.change;
                    let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
                    let _ = writeln!(
                        s,
                        "| {} | {:.2} | {:.2} | {:+.2} | {:.2} | {:.2} | {:+.2} | {} | {} |",
                        compare::md_escape(&r.name),
                        r.self_before,
                        r.self_after,
                        r.self_delta(),
                        r.total_before,
                        r.total_after,
                        r.total_delta(),
                        us(f.us_per_op.0),
                        us(f.us_per_op.1)
                    );
                }
            }
            for w in warnings {
                let _ = writeln!(s, "- {}", compare::md_escape(w));
            }
        }
        _ => {
            compare::write_text(c, &mut s);
            if !functions.is_empty() {
                let _ = writeln!(s);
                let width = functions
                    .iter()
                    .map(|f| f.change.name.chars().count())
                    .max()
                    .unwrap_or(8)
                    .clamp(8, 60);
                let _ = writeln!(
                    s,
                    "{:<width$}  {:>7} {:>7} {:>7}  {:>7} {:>7} {:>7}  {:>9} {:>9}",
                    "function",
                    "self%",
                    "self%",
                    "Δself",
                    "total%",
                    "total%",
                    "Δtotal",
                    "µs/op",
                    "µs/op"
                );
                let _ = writeln!(
                    s,
                    "{:<width$}  {:>7} {:>7} {:>7}  {:>7} {:>7} {:>7}  {:>9} {:>9}",
                    "", "before", "after", "", "before", "after", "", "before", "after"
                );
                for f in functions {
                    let r = &f.change;
                    let mut name: String = r
                        .name
                        .chars()
                        .filter(|c| !c.is_control())
                        .take(width)
                        .collect();
                    if r.name.chars().count() > width {
                        name.pop();
                        name.push('…');
                    }
                    let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
                    let _ = writeln!(
                        s,
                        "{:<width$}  {:>7.2} {:>7.2} {:>+7.2}  {:>7.2} {:>7.2} {:>+7.2}  {:>9} {:>9}",
                        name,
                        r.self_before,
                        r.self_after,
                        r.self_delta(),
                        r.total_before,
                        r.total_after,
                        r.total_delta(),
                        us(f.us_per_op.0),
                        us(f.us_per_op.1)
                    );
                }
                let _ = writeln!(
                    s,
                    "(µs/op: CPU time per operation in the function and its callees)"
                );
            }
            for w in warnings {
                let _ = writeln!(s, "note: {w}");
            }
        }
    }
    Ok(s)
}
