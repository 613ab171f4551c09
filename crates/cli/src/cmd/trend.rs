//! `kiln runs trend`: reads one name's runs, keeps one configuration, asks
//! `kiln_compare::trend` for the history and its change points, reads the profiles around
//! each change point only, and prints the report.
use super::store::{run_profiles, StoreArgs};
use anyhow::{bail, Context, Result};
use kiln_compare::trend::{self, LeftOut, Report};
use kiln_compare::{self as compare, Rules};
use kiln_store::{RunMeta, Store};
use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

/// The history of one configuration of a name: each figure's series in time order, its
/// change points (E-divisive means with a permutation test) and the functions that moved
/// with each.
///
/// The figures are those kiln compare judges: throughput when the rate was not set or not
/// held, latencies, target CPU per operation, memory...
///
/// The runs are those of NAME with the configuration of its newest run (the load and its
/// options, the target executable and build, the host, the events, the tags: as kiln
/// compare decides it); runs of other configurations are counted and left out
/// (--all-configs shows each configuration's trend). Change points are found by
/// E-divisive means (Matteson & James; as Hunter/Otava run over CI histories): each
/// segment is split where the distributions on either side differ most, kept when a
/// permutation test (a fixed seed: the same history gives the same answer) gives p ≤
/// --alpha, and each side split again; a segment holds 3 runs or more, so one noisy run
/// is never a change point. A change smaller than --threshold is counted, not listed.
/// For each change point, the profiles of up to 5 runs on each side are compared as kiln
/// compare does, naming the functions that moved (percentage points of the profile).
///
/// Exit status: 0, or with --fail-if: 3 when a condition fired — the newest segment (the
/// runs since the last change point listed) is past its limit against the segment before
/// it — 4 when one cannot tell (too few runs for a change point, a figure not measured).
/// 1 on errors.
///
/// Examples:
///   kiln runs trend nightly
///   kiln runs trend nightly --tag tracing=on --format markdown >> report.md
///   kiln runs trend nightly --fail-if 'cpu_per_msg>+10%'
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The runs' name.
    pub name: String,

    /// Only runs carrying the tag KEY=VALUE (kiln run --tag); repeatable: all must hold.
    #[arg(long, value_name = "KEY=VALUE")]
    pub tag: Vec<String>,

    /// A trend for each configuration of the name, newest first, instead of the newest
    /// run's only.
    #[arg(long)]
    pub all_configs: bool,

    /// The newest N runs of each configuration shown (0: all); older ones are counted
    /// and left out, so that a long history costs what is shown.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub last: usize,

    /// Output format: text, markdown or json.
    #[arg(long, default_value = "text", value_parser = ["text", "markdown", "md", "json"])]
    pub format: String,

    /// Also write FILE: the trend page (.html: each figure's series over the runs, its
    /// segments and change points marked, the functions that moved, and each change
    /// point's differential flame graph of the runs either side, each side's profiles
    /// merged; offline, one file), or the report as .json, .md or .txt.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,

    /// Largest p of the permutation test for a change point to be kept.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    pub alpha: f64,

    /// Smallest change of a median between segments, in percent, listed as a change
    /// (smaller significant ones are counted).
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub threshold: f64,

    /// Functions named per change point (0: no profile is read).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub functions: usize,

    /// A CI gate on the newest runs of the newest configuration: FIGURE>LIMIT or
    /// FIGURE<LIMIT, comma-separated, as kiln compare takes them (LIMIT in %: the change of
    /// the median of the runs since the last change point listed from the runs before it,
    /// back to the one before; else that median in the figure's unit). Fires (exit 3) only
    /// when the newest runs form a segment of their own (3 runs or more, after a change
    /// point listed) past the limit; one noisy run at the end does not. Example: --fail-if 'cpu_per_msg>+10%,p99>+20%'
    #[arg(long, value_name = "CONDITIONS")]
    pub fail_if: Option<String>,

    /// What a relative --fail-if limit judges the newest runs against: previous (the
    /// segment before them: each change on its own) or first (the runs before the first
    /// change point: the drift since the history began, so that steps each under the
    /// limit add up and fire).
    #[arg(long, value_enum, value_name = "SEGMENT", default_value = "previous")]
    pub against: Against,
}

/// `--against`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Against {
    /// The segment before the newest.
    Previous,
    /// The first segment.
    First,
}

/// The runs of `name` (with `tags`), sorted into configurations, the newest
/// configuration first, each oldest run first, at most its newest `last` runs (all when 0)
/// and, unless `all_configs`, only the newest configuration; and what was left out. The
/// one place a trend's runs are selected: from the listing columns, so that only the runs
/// shown have their metadata read (a name with 100,000 runs costs its listing).
fn select(
    store: &dyn Store,
    name: &str,
    tags: &[(String, String)],
    last: usize,
    all_configs: bool,
) -> Result<(Vec<Vec<RunMeta>>, LeftOut)> {
    let found = kiln_store::configurations(store, name)?;
    let mut left = LeftOut {
        damaged: found.damaged,
        incomplete: found.incomplete,
        ..LeftOut::default()
    };
    let mut configs: Vec<Vec<RunMeta>> = Vec::new();
    for (_, mut runs) in found.configs {
        // The tags are part of a configuration: its newest run's say for all of them.
        if !tags.is_empty() {
            let newest = runs.last().map(|r| store.meta(r.id)).transpose()?;
            if !newest.is_some_and(|m| tags.iter().all(|t| m.tags.contains(t))) {
                left.untagged += runs.len();
                continue;
            }
        }
        if !all_configs && !configs.is_empty() {
            left.configurations += 1;
            left.other_configurations += runs.len();
            continue;
        }
        if last > 0 && runs.len() > last {
            left.older += runs.len() - last;
            runs.drain(..runs.len() - last);
        }
        let metas = runs
            .iter()
            .map(|r| store.meta(r.id))
            .collect::<kiln_store::Result<Vec<_>>>()?;
        configs.push(metas);
    }
    Ok((configs, left))
}

pub fn run(args: Args, store_args: &StoreArgs) -> Result<ExitCode> {
    let gates = super::compare::judging(args.fail_if.as_deref(), args.alpha, args.threshold)?;
    let format = args.format.as_str();
    let tags = super::run::parse_tags(&args.tag)?;
    let name = args.name.strip_prefix("name:").unwrap_or(&args.name);
    let store = store_args.open_existing()?;
    let (configs, left) = select(&*store, name, &tags, args.last, args.all_configs)?;
    if configs.is_empty() {
        bail!(
            "no complete run named '{}' in '{}'{}",
            kiln_model::text::clean_cut(name, 80),
            store.location().display(),
            left.text().map_or(String::new(), |t| format!(" ({t})"))
        );
    }
    let rules = Rules {
        alpha: args.alpha,
        threshold_pct: args.threshold,
    };
    let mut report = Report {
        name: name.to_string(),
        method: trend::Method::of(&rules),
        configurations: Vec::new(),
        left_out: left,
        gates: Vec::new(),
        functions: args.functions > 0,
    };
    for runs in &configs {
        let mut t = trend::analyze(runs, &rules);
        if args.functions > 0 {
            functions_moved(&*store, runs, &mut t, &rules, args.functions)?;
        }
        report.configurations.push(t);
    }
    let baseline = match args.against {
        Against::Previous => trend::Baseline::Previous,
        Against::First => trend::Baseline::First,
    };
    report.gates = report.configurations[0].check(&gates, baseline);
    super::common::ensure_stdout_open()?;
    // `-o -` (or /dev/stdout): the report once, on standard output.
    let to_stdout = args.output.as_deref().and_then(kiln_os::io::stream_fd) == Some(1);
    if !to_stdout {
        let mut out = std::io::stdout().lock();
        write_as(format, &report, &mut out)?;
        out.flush()?;
    }
    if let Some(path) = &args.output {
        write_file(path, &report, format)
            .with_context(|| format!("Failed to write '{}'", path.display()))?;
        if !to_stdout {
            eprintln!("wrote {}", path.display());
        }
    }
    if format != "text" {
        for g in &report.gates {
            let word = trend::export::gate_word(g.status);
            eprintln!("fail-if: {}: {word} ({})", g.condition, g.message);
        }
    }
    Ok(ExitCode::from(
        compare::gate::overall(&report.gates).exit_code(),
    ))
}

/// `report` in `format` (--format: text, markdown or json).
fn write_as(format: &str, report: &Report, w: &mut dyn Write) -> std::io::Result<()> {
    match format {
        "json" => trend::export::json(report, w),
        "markdown" | "md" => trend::export::markdown(report, w),
        _ => trend::export::text(report, w),
    }
}

/// Writes `report` to `path` in the format its extension names (.html the page; .json,
/// .md, .txt; anything else, `-` and `/dev/stdout` included, `format`), to a temporary
/// file renamed into place (a stream: written as it is).
fn write_file(path: &std::path::Path, report: &Report, format: &str) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    kiln_os::io::write_atomically::<std::io::Error>(path, |w| match ext.as_str() {
        "html" | "htm" => {
            kiln_report::write_trend_report(report, &Default::default(), w).map_err(|e| match e {
                kiln_report::ReportError::Io(e) => e,
                e => std::io::Error::other(e.to_string()),
            })
        }
        "json" => trend::export::json(report, w),
        "md" | "markdown" => trend::export::markdown(report, w),
        "txt" | "text" => trend::export::text(report, w),
        _ => write_as(format, report, w),
    })?;
    Ok(())
}

/// Reads the profiles of the runs around each change point (only those) and names the
/// functions that moved, as kiln compare's function table judges them; keeps each pair of
/// windows' merged profiles for the page's differential flame graphs.
fn functions_moved(
    store: &dyn Store,
    runs: &[RunMeta],
    t: &mut trend::Trend,
    rules: &Rules,
    limit: usize,
) -> Result<()> {
    let mut read: HashMap<usize, Vec<kiln_model::Profile>> = HashMap::new();
    let merge = super::common::TransformArgs {
        merge_threads: true,
        ..Default::default()
    }
    .to_transforms()?;
    for w in t.profile_windows() {
        for i in w.0.clone().chain(w.1.clone()) {
            if let std::collections::hash_map::Entry::Vacant(e) = read.entry(i) {
                let ps = run_profiles(store, &runs[i])
                    .with_context(|| format!("reading the profiles of run #{}", t.runs[i].id))?;
                e.insert(
                    ps.into_iter()
                        .map(|p| super::common::apply_transforms(p, &merge, true))
                        .collect(),
                );
            }
        }
        let all: Vec<&[kiln_model::Profile]> =
            w.0.clone()
                .chain(w.1.clone())
                .map(|i| read[&i].as_slice())
                .collect();
        let Some(event) = trend::event_of(&all) else {
            continue;
        };
        let pairs = |r: std::ops::Range<usize>| -> Vec<(&RunMeta, &kiln_model::Profile)> {
            r.filter_map(|i| {
                read[&i]
                    .iter()
                    .find(|p| p.event.name == event)
                    .map(|p| (&runs[i], p))
            })
            .collect()
        };
        let moved = trend::movers(
            &event,
            &pairs(w.0.clone()),
            &pairs(w.1.clone()),
            rules,
            limit,
        );
        if let Some(moved) = moved {
            t.set_moved(&w, &event, moved);
        }
    }
    Ok(())
}
