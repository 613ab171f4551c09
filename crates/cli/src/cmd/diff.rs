//! `kiln diff`: compare two profiles.
use super::collapse::PerfArgs;
use super::common::{apply_transforms, collapse_input, write_output, InputArgs, TransformArgs};
use anyhow::{Context, Result};
use kiln_diff::{comparable, function_changes, write_diff_folded, write_table, DiffOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Compare two profiles (before and after a change).
///
/// Writes differential folded stacks (`stack before after`, difffolded.pl's output) to
/// stdout, or with -o a differential flame graph (.svg, .html) or folded file; --table
/// prints the functions whose self and total share changed most.
///
/// Both inputs are read by the same rule: perf samples weigh their period (perf script
/// text and perf.data alike), or 1 each with --count-samples. Profiles that count
/// different things (samples against nanoseconds) are refused, except with -n, which
/// compares shares; --table always compares shares.
///
/// Examples:
///   kiln diff before.folded after.folded | kiln flamegraph > diff.svg
///   kiln diff -n before.folded after.folded -o diff.svg
///   kiln diff --table 15 before.perf after.perf
///   kiln diff before.folded after.folded -o diff.html
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The profile before the change (any format `kiln collapse` reads).
    pub before: PathBuf,
    /// The profile after the change.
    pub after: PathBuf,

    /// Normalise: scale the "before" counts so both totals match (difffolded.pl -n).
    #[arg(short = 'n', long)]
    pub normalize: bool,

    /// Strip hexadecimal addresses (0x…) from names before comparing (difffolded.pl -s).
    #[arg(short = 's', long)]
    pub strip_hex: bool,

    /// Write to FILE: .svg or .html draw a differential flame graph (widths of the after
    /// profile, red where it grew, blue where it shrank); .folded, .txt or a name without
    /// extension get differential folded text.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Output format, whatever -o's name (or on standard output): folded, svg, html.
    #[arg(long, value_name = "FORMAT")]
    pub output_format: Option<String>,

    /// Print the N functions whose share changed most (self and total, before and after,
    /// in % of each profile) to stdout.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
    pub table: Option<usize>,

    /// Title of the flame graph.
    #[arg(long, default_value = "Differential Flame Graph")]
    pub title: String,

    #[command(flatten)]
    pub perf: PerfArgs,

    #[command(flatten)]
    pub input_args: InputArgs,

    #[command(flatten)]
    pub transforms: TransformArgs,
}

fn load(
    path: &Path,
    args: &Args,
    t: &kiln_model::transform::Transforms,
) -> Result<kiln_model::Profile> {
    let popts = kiln_collapse::perf::PerfOptions {
        aggregate: true,
        ..args.perf.to_options(args.transforms.count_samples)
    };
    let c = collapse_input(Some(path), &args.input_args, popts, false, false)?;
    if c.after.is_some() {
        anyhow::bail!(
            "'{}' is already a differential profile (two counts per line)",
            path.display()
        );
    }
    Ok(apply_transforms(c.profile, t, args.input_args.quiet))
}

pub fn run(mut args: Args, max_input: u64) -> Result<ExitCode> {
    args.input_args.max_input = max_input;
    super::common::check_output_not_input(
        args.output.as_deref(),
        &[Some(args.before.as_path()), Some(args.after.as_path())],
        false,
    )?;
    use kiln_formats::Format;
    let format = kiln_formats::output_format(
        args.output.as_deref(),
        args.output_format.as_deref(),
        &[Format::Folded, Format::Svg, Format::Html],
        Some(Format::Folded),
    )?;
    let mut t = args.transforms.to_transforms()?;
    t.strip_addresses |= args.strip_hex;
    let before = load(&args.before, &args, &t)?;
    let after = load(&args.after, &args, &t)?;
    let opts = DiffOptions {
        normalize: args.normalize,
    };
    if let Some(n) = args.table {
        let rows = function_changes(&before, &after)?;
        write_output(None, |w| Ok(write_table(&rows, n, w)?))?;
        if args.output.is_none() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Counts are subtracted below: they must count the same thing, or be scaled (-n).
    if let Err(e) = comparable(&before, &after) {
        match e {
            kiln_diff::DiffError::UnitsDiffer { .. } if args.normalize => {}
            kiln_diff::DiffError::UnitsDiffer { .. } => {
                return Err(anyhow::Error::new(e).context(format!(
                    "Cannot compare the counts of '{}' and '{}': compare shares with -n, \
                     or count samples on both sides with --count-samples",
                    args.before.display(),
                    args.after.display()
                )))
            }
            e => return Err(e.into()),
        }
    }
    match format {
        Format::Svg => {
            let mut o = kiln_flamegraph::Options::default();
            o.title = Some(args.title.clone());
            let (b, a) = normalized(before, after, args.normalize);
            write_output(args.output.as_deref(), |w| {
                kiln_flamegraph::render_diff(&b, &a, &o, w)
                    .context("Failed to render the flame graph")?;
                Ok(())
            })?;
        }
        Format::Html => {
            let o = kiln_viewer::HtmlOptions {
                title: args.title.clone(),
                sources: vec![
                    args.before.display().to_string(),
                    args.after.display().to_string(),
                ],
                ..Default::default()
            };
            // The viewer compares shares itself; profiles in different units (allowed
            // with -n) reach it scaled to one total and one unit.
            let units_differ = before.event.unit != after.event.unit;
            let (before, after) = normalized(before, after, args.normalize && units_differ);
            write_output(args.output.as_deref(), |w| {
                kiln_viewer::write_diff_html(&before, &after, &o, w)
                    .context("Failed to write the viewer")?;
                Ok(())
            })?;
        }
        _ => write_output(args.output.as_deref(), |w| {
            Ok(write_diff_folded(&before, &after, opts, w)?)
        })?,
    }
    Ok(ExitCode::SUCCESS)
}

/// With -n, the "before" weights scaled to the "after" total (as difffolded.pl -n does
/// before its output reaches flamegraph.pl), and so counted in the after's unit.
pub(crate) fn normalized(
    before: kiln_model::Profile,
    after: kiln_model::Profile,
    normalize: bool,
) -> (kiln_model::Profile, kiln_model::Profile) {
    let (tb, ta) = (before.total_weight(), after.total_weight());
    if !normalize || tb == 0 {
        return (before, after);
    }
    let mut b = before;
    b.event.unit = after.event.unit;
    if tb != ta {
        for w in b.samples.weight.iter_mut() {
            *w = (*w as u128 * ta as u128 / tb as u128) as u64;
        }
    }
    (b, after)
}
