//! `kiln compare`: parses the flags, loads the runs, asks `kiln_compare` for the one
//! comparison and prints it with the chosen exporter.
use super::store::{resolve, StoreArgs};
use anyhow::{bail, Context, Result};
use kiln_compare::{self as compare, Exporter, Format, GateStatus};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compare stored runs, or groups of --repeat runs: every figure is a setting (a fixed
/// rate, reported as held or not held; a concurrency), an outcome judged with a direction
/// (latency, CPU per operation, memory; throughput of an open-ended load) or context
/// (shown, never judged: total CPU at another rate, kiln's own CPU). Each outcome gets one
/// verdict — improved, regressed, no change, or cannot tell (one run, too few repeats,
/// noise as wide as the change, runs not comparable) — from the median of each group and
/// an exact Mann-Whitney test; the first line says the overall result. Functions are
/// judged the same way, ranked by the change of their CPU time per operation (and
/// off-CPU time when both groups recorded it); -o x.svg or x.html draws the differential
/// flame graph, colouring only the frames whose change is beyond noise.
///
/// Groups of 3 runs can never show a change at --alpha 0.05 (the smallest p is 0.10); 4
/// can. Run kiln run --repeat 4 or more per side.
///
/// The variants of one interleaved experiment (kiln run --variant ... --repeat N) are
/// compared round by round instead, so that a machine drifting between rounds cancels:
/// the Wilcoxon signed-rank test of each round's ratio, the change the Hodges–Lehmann
/// estimate with its exact interval (-64.2% [-86.0, -53.2] improved (p=0.031)); a note
/// says which analysis was used. 6 rounds or more: 5 can never reach p < 0.05.
///
/// Exit status: 0, or with --fail-if: 0 when every condition passed, 3 when one fired (a
/// change past its limit and beyond noise), 4 when one cannot tell (past its limit, but
/// the runs cannot show whether beyond noise: add repeats). 1 on errors.
///
/// Examples:
///   kiln compare before after
///   kiln compare before after --format markdown >> pr.md
///   kiln compare base pr --fail-if 'p99>+10%,cpu_per_op>+5%'
///   kiln compare aa aa-again                      # an A/A check: the noise floor
///   kiln compare before after                     # kiln run --variant before=.. --variant after=..: paired
///   kiln compare sweep@20000 sweep@30000          # two steps of a sweep
///   kiln compare before@10-20 after@10-20         # seconds 10-20 of each measurement
///   kiln compare before after -o diff.html
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Runs to compare (ids, or names: the latest group of runs of that name; NAME@STEP
    /// for a window of a sweep, NAME@START-END for the same seconds of each run's
    /// measurement, e.g. before@10-20: the figures of those seconds, latency percentiles
    /// from their per-second histograms, their profiles' samples); the first is the
    /// baseline.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    pub runs: Vec<String>,

    /// Output format of the table: text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "md", "json"])]
    pub format: String,

    /// Also write FILE: the comparison page (.html: figures, latency distributions and
    /// series overlaid, a window dragged on them judged as NAME@START-END is, the
    /// differential flame graph and function table; offline, one file), a differential flame graph (.svg) of the first and last groups' profiles,
    /// or the table (.md, .json, .txt).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Format of -o's file, whatever its name: html, svg, markdown, json, text.
    #[arg(long, value_name = "FORMAT", requires = "output")]
    pub output_format: Option<String>,

    /// A CI gate on the last group against the first: FIGURE>LIMIT or FIGURE<LIMIT,
    /// comma-separated; LIMIT in % is a relative change, else the value in the figure's
    /// unit. A condition fires (exit 3) only when the change is past its limit AND beyond
    /// noise (p ≤ --alpha that it changed, and p ≤ --alpha that its runs are past the
    /// limit: the candidate's runs against the baseline's moved by the limit; an absolute
    /// limit: every run past it); past its limit but not provably so is "cannot tell"
    /// (exit 4); otherwise it passes (exit 0).
    /// Earlier groups of the baseline's name and configuration in the store set a noise
    /// floor between groups that a change must also clear (keep a history of the baseline:
    /// groups run one after the other drift). Figures: throughput, send_rate, p50, p99,
    /// p999, max, cpu_per_op (cpu_per_msg, cpu_per_req), switches_per_op, rss, target_cpu,
    /// kiln_cpu.
    /// Example: --fail-if 'p99>+10%,cpu_per_msg>+5%,throughput<-5%'
    #[arg(long, value_name = "CONDITIONS")]
    pub fail_if: Option<String>,

    /// Smallest change of a median, in percent, called a change (smaller differences are
    /// "no change" even when the test is sure of them).
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub threshold: f64,

    /// Largest p-value of the Mann-Whitney test called beyond noise.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    pub alpha: f64,

    /// Rows of each function table (0: none).
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub table: usize,

    /// Event whose profiles the function table and flame graph use (default: CPU, and
    /// off-CPU too when both groups recorded it).
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,

    /// Keep numbered threads apart (1_scheduler, 2_scheduler…). By default they are
    /// merged by --merge-threads' rules (BEAM schedulers, Go and JVM pools), so that the
    /// differential flame graph and the function table compare work, not thread numbers.
    #[arg(long)]
    pub keep_threads: bool,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub transforms: super::common::TransformArgs,
}

/// What `kiln compare -o` writes.
const OUTPUTS: &[kiln_formats::Format] = &[
    kiln_formats::Format::Html,
    kiln_formats::Format::Svg,
    kiln_formats::Format::Markdown,
    kiln_formats::Format::Json,
    kiln_formats::Format::Text,
];

pub fn run(mut args: Args, max_input: u64) -> Result<ExitCode> {
    args.store.max_input = max_input;
    let format = Format::named(&args.format).context("unknown --format")?;
    // `-o -` (or /dev/stdout): the report once, on standard output, in -o's format,
    // --format's when no extension or --output-format names one.
    let to_stdout = args.output.as_deref().and_then(kiln_os::io::stream_fd) == Some(1);
    // An output name that says nothing fails before any work.
    let out_format = match &args.output {
        Some(path) => Some(kiln_formats::output_format(
            Some(path),
            args.output_format.as_deref(),
            OUTPUTS,
            kiln_os::io::stream_fd(path).map(|_| match format {
                Format::Json => kiln_formats::Format::Json,
                Format::Markdown => kiln_formats::Format::Markdown,
                _ => kiln_formats::Format::Text,
            }),
        )?),
        None => None,
    };
    let gates = judging(args.fail_if.as_deref(), args.alpha, args.threshold)?;
    if !args.keep_threads && args.transforms.merge_rule.is_empty() {
        args.transforms.merge_threads = true;
    }
    let t = args.transforms.to_transforms()?;
    let store = args.store.open_existing()?;
    let want_profiles = args.table > 0 || args.event.is_some() || args.output.is_some();
    let mut groups = Vec::new();
    for r in &args.runs {
        let runs = resolve(&*store, r)?;
        let mut profiles = Vec::new();
        let mut found = Vec::new();
        for m in &runs {
            // The findings read the whole run (its series, its profiles untransformed).
            let data = super::store::run_data(&*store, m)?;
            found.push(kiln_findings::analyse(&data, None));
            if want_profiles {
                profiles.push(
                    data.profiles
                        .into_iter()
                        .map(|p| super::common::apply_transforms(p, &t, true))
                        .collect(),
                );
            }
        }
        groups.push(compare::Group {
            label: r.clone(),
            runs,
            profiles,
            findings: found,
        });
    }
    let opts = compare::Options {
        rules: compare::Rules {
            alpha: args.alpha,
            threshold_pct: args.threshold,
        },
        functions: args.table,
        event: args.event.clone(),
        history: history(&*store, &groups)?,
    };
    let mut c = compare::compare(&groups, &opts)?;
    let status = c.check(&gates);
    super::common::ensure_stdout_open()?;
    if !to_stdout {
        let mut out = std::io::stdout().lock();
        format.exporter().export(&c, &mut out)?;
        out.flush()?;
    }
    if let (Some(path), Some(f)) = (&args.output, out_format) {
        use kiln_formats::Format as F;
        let written = match f {
            F::Svg => write_flame(path, &c),
            F::Html => {
                let mut runs = groups
                    .iter()
                    .map(|g| {
                        g.runs
                            .iter()
                            .filter_map(|m| m.id)
                            .map(|i| store.load(i))
                            .collect()
                    })
                    .collect::<Result<Vec<Vec<_>>, _>>()?;
                // Runs compared whole: the page gives each window of their seconds its
                // function tables, from the profiles as compared (transformed alike).
                let whole = groups.iter().zip(&runs).all(|(g, rs)| {
                    g.runs.len() == rs.len()
                        && g.profiles.len() == rs.len()
                        && g.runs
                            .iter()
                            .zip(rs)
                            .all(|(m, r)| m.measure == r.meta.measure)
                });
                if whole {
                    for (g, rs) in groups.iter().zip(runs.iter_mut()) {
                        for (p, r) in g.profiles.iter().zip(rs.iter_mut()) {
                            r.profiles = p.clone();
                        }
                    }
                }
                let report_opts = Default::default();
                let page = kiln_report::CompareHtml::new(&runs, &report_opts);
                let page = if whole {
                    page.with_windows(&opts)
                } else {
                    page
                };
                write_with(path, &page, &c)
            }
            F::Markdown => write_with(path, &compare::export::Markdown, &c),
            F::Json => write_with(path, &compare::export::Json, &c),
            _ => write_with(path, &compare::export::Text, &c),
        };
        written.with_context(|| format!("Failed to write '{}'", path.display()))?;
        if !to_stdout {
            eprintln!("wrote {}", path.display());
        }
    }
    for g in &c.gates {
        let word = match g.status {
            GateStatus::Passed => "passed",
            GateStatus::Fired => "FIRED",
            GateStatus::CannotTell => "cannot tell",
        };
        eprintln!("fail-if: {}: {word} ({})", g.condition, g.message);
    }
    Ok(ExitCode::from(status.exit_code()))
}

/// The baseline's history: earlier groups of runs of its name with its configuration
/// (not any group being compared): how far they moved from it is the noise floor a
/// change must clear. Only for a baseline given by name (not an id or a window).
fn history(
    store: &dyn kiln_store::Store,
    groups: &[compare::Group],
) -> Result<Vec<Vec<kiln_store::RunMeta>>> {
    let base = &groups[0];
    let Some(first) = base.runs.first() else {
        return Ok(Vec::new());
    };
    if base.label != first.name || first.measure.name != "measure" {
        return Ok(Vec::new());
    }
    let key = compare::configuration(first);
    let compared: Vec<&str> = groups
        .iter()
        .flat_map(|g| g.runs.iter().map(|r| r.group.as_str()))
        .collect();
    let mut out: Vec<Vec<kiln_store::RunMeta>> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    // Only the runs of its name and configuration are listed, and only the newest
    // HISTORY_RUNS of them read: a name with 100,000 runs costs its listing. Damaged and
    // incomplete runs are not history.
    let found = kiln_store::configurations(store, &first.name)?;
    let Some((_, runs)) = found.configs.into_iter().find(|(k, _)| *k == key) else {
        return Ok(Vec::new());
    };
    let runs: Vec<_> = runs
        .into_iter()
        .filter(|r| !compared.contains(&r.group.as_str()))
        .collect();
    for l in &runs[runs.len().saturating_sub(HISTORY_RUNS)..] {
        let r = store.meta(l.id)?;
        match order.iter().position(|g| *g == r.group) {
            Some(i) => out[i].push(r),
            None => {
                order.push(r.group.clone());
                out.push(vec![r]);
            }
        }
    }
    Ok(out)
}

/// The newest runs of a baseline's name and configuration read as its history.
const HISTORY_RUNS: usize = 1000;

/// The gates `--fail-if` asks for, once `--alpha` and `--threshold` are checked: as
/// `kiln compare` and `kiln runs trend` take them.
pub(crate) fn judging(
    fail_if: Option<&str>,
    alpha: f64,
    threshold: f64,
) -> Result<Vec<compare::Gate>> {
    if !(alpha > 0.0 && alpha < 1.0) {
        bail!("--alpha must be between 0 and 1");
    }
    if !(threshold >= 0.0 && threshold.is_finite()) {
        bail!("--threshold must be a non-negative percentage");
    }
    match fail_if {
        Some(spec) => compare::parse_gates(spec).map_err(|e| anyhow::anyhow!("--fail-if {e}")),
        None => Ok(Vec::new()),
    }
}

fn write_with(path: &std::path::Path, e: &dyn Exporter, c: &compare::Comparison) -> Result<()> {
    kiln_os::io::write_atomically::<std::io::Error>(path, |w| e.export(c, w))?;
    Ok(())
}

/// The differential flame graph of the first and last groups, normalised (runs of
/// different length or rate compare by share), colouring only frames beyond noise.
fn write_flame(path: &std::path::Path, c: &compare::Comparison) -> Result<()> {
    let (before, after) = c
        .diff
        .as_ref()
        .context("the runs have no profiles to draw")?;
    let (a, b) = c.ends();
    let title = format!("{a} → {b} ({})", after.event.name);
    let (bn, an) = super::diff::normalized(before.clone(), after.clone(), true);
    super::common::write_output(Some(path), |w| {
        let mut o = kiln_flamegraph::Options::default();
        o.title = Some(title.clone());
        o.diff_marked = c.marked();
        if o.diff_marked.is_some() {
            o.subtitle = Some("coloured: functions whose change is beyond noise".into());
        }
        kiln_flamegraph::render_diff(&bn, &an, &o, w)
            .context("Failed to render the flame graph")?;
        Ok(())
    })
}
