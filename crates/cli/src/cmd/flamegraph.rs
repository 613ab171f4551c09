//! `kiln flamegraph`: folded stacks (or any input `kiln collapse` reads) to an SVG flame
//! graph, with flamegraph.pl's flags; or to the HTML viewer with `-o x.html`.
use super::common::{apply_transforms, collapse_input, write_output, InputArgs, TransformArgs};
use anyhow::{bail, Context, Result};
use kiln_flamegraph::{
    Background, ColorMode, Layout, MinWidth, NameAttrs, Options, Palette, PaletteMap,
};
use kiln_model::{Profile, WeightUnit};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Render stacks as an SVG flame graph; a drop-in for flamegraph.pl and inferno-flamegraph.
///
/// Reads folded stacks (`a;b;c 42`), or anything `kiln collapse` reads, from the files
/// given or standard input. Two counts per line (`a;b;c 42 17`, as difffolded.pl writes)
/// draw a differential flame graph: widths from the second count, red where a function
/// grew, blue where it shrank.
///
/// Examples:
///   kiln flamegraph out.folded > flame.svg
///   perf script | kiln flamegraph --colors java --title "Broker CPU" > flame.svg
///   kiln flamegraph --merge-threads out.folded -o flame.html   # HTML viewer, any size
///   kiln flamegraph --inverted --reverse out.folded > icicle.svg
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Input files (concatenated, as flamegraph.pl does); standard input when none or `-`.
    pub inputs: Vec<PathBuf>,

    /// Write to FILE (atomically) instead of standard output. Its extension chooses the
    /// format: .svg (the flame graph, also the default for a name without extension and
    /// for standard output) or .html (the interactive viewer, fast at any profile size).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Output format, whatever -o's name (or on standard output): svg, html.
    #[arg(long, value_name = "FORMAT")]
    pub output_format: Option<String>,

    #[command(flatten)]
    pub svg: SvgArgs,

    #[command(flatten)]
    pub input_args: InputArgs,

    #[command(flatten)]
    pub transforms: TransformArgs,
}

/// flamegraph.pl's options, spelled as flamegraph.pl spells them.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Flame graph (flamegraph.pl options)")]
pub struct SvgArgs {
    /// Title text. Default: "Flame Graph" ("Icicle Graph" with --inverted, "Flame Chart"
    /// with --flamechart).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Second-level title.
    #[arg(long, value_name = "TEXT")]
    pub subtitle: Option<String>,
    /// Width of the image in pixels.
    #[arg(long, value_name = "NUM", default_value_t = 1200)]
    pub width: u32,
    /// Height of each frame in pixels.
    #[arg(long, value_name = "NUM", default_value_t = 16)]
    pub height: u32,
    /// Omit frames narrower than NUM pixels, or NUM% of the total with a `%` suffix.
    /// Example: --minwidth 0.5%
    #[arg(long, value_name = "NUM[%]", default_value = "0.1", value_parser = parse_minwidth)]
    pub minwidth: MinWidth,
    /// Font family.
    #[arg(long, value_name = "FONT", default_value = "Verdana")]
    pub fonttype: String,
    /// Font size in pixels.
    #[arg(long, value_name = "NUM", default_value_t = 12.0)]
    pub fontsize: f64,
    /// Average character width relative to the font size (to fit labels).
    #[arg(long, value_name = "NUM", default_value_t = 0.59)]
    pub fontwidth: f64,
    /// What the counts are. Default: "samples" (or the recording's unit). In the HTML
    /// viewer a time or size unit (ns, us, ms, s, bytes) also scales the numbers shown.
    #[arg(long, value_name = "TEXT")]
    pub countname: Option<String>,
    /// What the names are, shown before the details on hover.
    #[arg(long, value_name = "TEXT", default_value = "Function:")]
    pub nametype: String,
    /// Notes embedded in a comment of the SVG.
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// File of per-function attributes: NAME<TAB>name=value<TAB>... (title, href, target,
    /// id, class, ...).
    #[arg(long, value_name = "FILE")]
    pub nameattr: Option<PathBuf>,
    /// Draw widths relative to this total instead of the sum of the counts.
    #[arg(long, value_name = "NUM")]
    pub total: Option<u64>,
    /// Scale the counts shown by this factor (for inputs scaled up to integers).
    #[arg(long, value_name = "FLOAT", default_value_t = 1.0)]
    pub factor: f64,
    /// Palette: hot, mem, io, wakeup, chain, java, js, perl, python, rust, red, green,
    /// blue, aqua, yellow, purple, orange.
    #[arg(long, alias = "color", short = 'c', value_name = "PALETTE", default_value = "hot",
          value_parser = clap::builder::PossibleValuesParser::new(Palette::NAMES))]
    pub colors: String,
    /// Background: yellow, blue, green, grey (gradients) or a flat #rrggbb. Default: the
    /// palette's.
    #[arg(long, value_name = "COLOR", value_parser = parse_background)]
    pub bgcolors: Option<Background>,
    /// Colour by a hash of the name, so similar names get similar colours.
    #[arg(long, conflicts_with = "random")]
    pub hash: bool,
    /// A new random colour for every frame, different on every run (by default colours
    /// look random but are the same for the same name on every run).
    #[arg(long)]
    pub random: bool,
    /// Consistent palette: reuse and extend the colours stored in ./palette.map.
    #[arg(long)]
    pub cp: bool,
    /// Reverse every stack (leaf first) before merging: shows who calls the hottest
    /// functions.
    #[arg(long)]
    pub reverse: bool,
    /// Icicle graph: the root at the top.
    #[arg(long, short = 'i')]
    pub inverted: bool,
    /// Flame chart: samples in time order, merged only when consecutive.
    #[arg(long, conflicts_with = "left_heavy")]
    pub flamechart: bool,
    /// Order siblings by weight, heaviest first, instead of alphabetically.
    #[arg(long)]
    pub left_heavy: bool,
    /// Swap the differential colours (blue for growth, red for shrinkage).
    #[arg(long)]
    pub negate: bool,
    /// Leave the script out (a static picture: no hover, zoom or search).
    #[arg(long)]
    pub no_javascript: bool,
}

fn parse_minwidth(s: &str) -> Result<MinWidth, String> {
    MinWidth::parse(s).ok_or_else(|| {
        format!("expected a non-negative number of pixels, or a percentage like 0.5%, got {s:?}")
    })
}

fn parse_background(s: &str) -> Result<Background, String> {
    Background::parse(s)
        .ok_or_else(|| format!("expected yellow, blue, green, grey or #rrggbb, got {s:?}"))
}

/// `--countname` renames what the weights are; it does not count anything. Naming bytes
/// or time as a count ("calls") would mislabel every number: say so, and how to count.
fn warn_countname(name: &str, profile: &Profile) {
    let unit = profile.event.unit;
    let counted = matches!(unit, WeightUnit::Samples | WeightUnit::Events);
    let word = name.trim().to_ascii_lowercase();
    let names_a_unit = [
        "ns", "us", "µs", "ms", "s", "b", "bytes", "kib", "mib", "period", "nsec", "usec",
    ]
    .contains(&word.as_str());
    if !counted && !names_a_unit {
        eprintln!(
            "kiln flamegraph: warning: --countname {name:?} labels weights that are {} of {}; \
             add --count-samples to count each sample once",
            unit.name(),
            if profile.event.name.is_empty() {
                "the input"
            } else {
                profile.event.name.as_str()
            }
        );
    }
}

/// The palette file of `--cp`, in the working directory as flamegraph.pl keeps it.
const PALETTE_FILE: &str = "palette.map";

impl SvgArgs {
    /// The library options for these flags (reads --nameattr and, with --cp, palette.map).
    pub fn to_options(&self, profile: &Profile) -> Result<Options> {
        let mut o = Options::default();
        o.title = self.title.clone();
        o.subtitle = self.subtitle.clone();
        o.width = self.width;
        o.frame_height = self.height;
        o.min_width = self.minwidth;
        o.font_type = self.fonttype.clone();
        o.font_size = self.fontsize;
        o.font_width = self.fontwidth;
        o.count_name = self
            .countname
            .clone()
            .unwrap_or_else(|| profile.event.count_name().to_string());
        if let Some(n) = &self.countname {
            warn_countname(n, profile);
        }
        if self.countname.is_some() {
            // Counts named by the user are written as flamegraph.pl writes them.
            o.quantity = Some(kiln_model::Quantity::Samples { period_ns: None });
        }
        o.name_type = self.nametype.clone();
        o.notes = self.notes.clone().unwrap_or_default();
        if let Some(path) = &self.nameattr {
            o.name_attrs = NameAttrs::from_file(path)?;
        }
        o.total = self.total;
        o.factor = self.factor;
        o.colors = Palette::from_name(&self.colors)
            .with_context(|| format!("Unknown palette '{}'", self.colors))?;
        o.bgcolors = self.bgcolors;
        o.color_mode = if self.hash {
            ColorMode::Hash
        } else if self.random {
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
                ^ u64::from(std::process::id());
            ColorMode::Random(seed)
        } else {
            ColorMode::Stable
        };
        if self.cp {
            o.palette_map = Some(PaletteMap::load_or_empty(Path::new(PALETTE_FILE))?);
        }
        o.inverted = self.inverted;
        o.reverse = self.reverse;
        o.layout = if self.flamechart {
            Layout::FlameChart
        } else if self.left_heavy {
            Layout::LeftHeavy
        } else {
            Layout::Classic
        };
        o.negate = self.negate;
        o.interactive = !self.no_javascript;
        Ok(o)
    }

    /// Options of the HTML viewer for these flags; `source` names the input.
    fn to_html_options(&self, title: &str, source: String) -> kiln_viewer::HtmlOptions {
        let mut h = kiln_viewer::HtmlOptions {
            title: title.to_string(),
            subtitle: self.subtitle.clone(),
            inverted: self.inverted,
            left_heavy: self.left_heavy,
            count_name: self.countname.clone(),
            sources: vec![source.clone(), source],
            flamechart: self.flamechart,
            ..Default::default()
        };
        if kiln_viewer::PALETTES.contains(&self.colors.as_str()) {
            h.palette = self.colors.clone();
        }
        h
    }
}

/// The profiles read: one, or two for differential input.
enum Input {
    One(Box<Profile>),
    Diff(Box<Profile>, Box<Profile>),
}

fn read_inputs(args: &Args) -> Result<Input> {
    let paths: Vec<Option<&Path>> = if args.inputs.is_empty() {
        vec![None]
    } else {
        args.inputs.iter().map(|p| Some(p.as_path())).collect()
    };
    // perf input: an SVG needs one row per stack, unless it is a flame chart (sample order)
    // or the HTML viewer (timestamps for its time strip).
    let popts = kiln_collapse::perf::PerfOptions {
        aggregate: !args.svg.flamechart && !is_html(args)?,
        ..Default::default()
    };
    let mut merged: Option<(Profile, Option<Profile>)> = None;
    for path in paths {
        let c = collapse_input(
            path,
            &args.input_args,
            popts.clone(),
            false,
            args.svg.flamechart,
        )?;
        match &mut merged {
            None => merged = Some((c.profile, c.after)),
            Some((p, after)) => {
                if after.is_some() != c.after.is_some() {
                    bail!(
                        "'{}' has {} counts per line but the inputs before it have {}; \
                         give differential (two-count) and plain inputs separately",
                        path.map_or("<stdin>".to_string(), |p| p.display().to_string()),
                        if c.after.is_some() { "two" } else { "one" },
                        if after.is_some() { "two" } else { "one" },
                    );
                }
                p.merge_from(&c.profile);
                if let (Some(a), Some(b)) = (after.as_mut(), c.after.as_ref()) {
                    a.merge_from(b);
                }
            }
        }
    }
    let transforms = args.transforms.to_transforms()?;
    let quiet = args.input_args.quiet;
    match merged {
        Some((p, None)) => Ok(Input::One(Box::new(apply_transforms(
            p,
            &transforms,
            quiet,
        )))),
        Some((before, Some(after))) => Ok(Input::Diff(
            Box::new(apply_transforms(before, &transforms, quiet)),
            Box::new(apply_transforms(after, &transforms, quiet)),
        )),
        None => bail!("no input"),
    }
}

/// What `kiln flamegraph` writes.
const OUTPUTS: &[kiln_formats::Format] = &[kiln_formats::Format::Svg, kiln_formats::Format::Html];

/// Whether the output is the HTML viewer (else an SVG), from -o's name or --output-format.
fn is_html(args: &Args) -> Result<bool> {
    let f = kiln_formats::output_format(
        args.output.as_deref(),
        args.output_format.as_deref(),
        OUTPUTS,
        Some(kiln_formats::Format::Svg),
    )?;
    Ok(f == kiln_formats::Format::Html)
}

pub fn run(mut args: Args, max_input: u64) -> Result<ExitCode> {
    args.input_args.max_input = max_input;
    let inputs: Vec<Option<&Path>> = args.inputs.iter().map(|p| Some(p.as_path())).collect();
    super::common::check_output_not_input(args.output.as_deref(), &inputs, false)?;
    let html = is_html(&args)?;
    let input = read_inputs(&args)?;
    let first = match &input {
        Input::One(p) | Input::Diff(_, p) => p,
    };
    let opts = args.svg.to_options(first)?;
    let output = args.output.as_deref();
    if html {
        // The HTML viewer: one self-contained file, fast at any profile size.
        let source = match args.inputs.as_slice() {
            [] => "<stdin>".to_string(),
            paths => paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" + "),
        };
        let hopts = args.svg.to_html_options(opts.effective_title(), source);
        write_output(output, |w| {
            match &input {
                Input::One(p) => kiln_viewer::write_html(p, &hopts, w)?,
                Input::Diff(b, a) => kiln_viewer::write_diff_html(b, a, &hopts, w)?,
            }
            Ok(())
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut stats = None;
    write_output(output, |w| {
        let s = match &input {
            Input::One(p) => kiln_flamegraph::render(p, &opts, w),
            Input::Diff(b, a) => kiln_flamegraph::render_diff(b, a, &opts, w),
        };
        stats = Some(s.context("Cannot draw the flame graph")?);
        Ok(())
    })?;
    if let Some(stats) = stats {
        for warning in &stats.warnings {
            eprintln!("warning: {}", super::common::shown(&warning.to_string()));
        }
        if let Some(map) = &stats.palette_map {
            kiln_os::io::write_atomically(PALETTE_FILE, |w| map.write(w))
                .with_context(|| format!("Failed to write '{PALETTE_FILE}'"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
