//! # kiln-flamegraph: SVG flame graphs
//!
//! Renders a [`kiln_model::Profile`] as an interactive SVG flame graph that looks and
//! behaves like Brendan Gregg's `flamegraph.pl` (and accepts its options through
//! `kiln flamegraph`), and a differential flame graph from two profiles.
//!
//! ```text
//! perf script | kiln collapse > stacks.folded
//! kiln flamegraph --title "RabbitMQ, 10k msg/s" stacks.folded > flame.svg
//! kiln flamegraph before-after.folded > diff.svg     # two counts per line: red/blue
//! ```
//!
//! The SVG shows details on hover, zooms on click (the details then also give the share of
//! the zoomed frame), resets, searches with a regular expression (with a case toggle and a
//! "Matched: N%" total), and keeps the zoom and search in the page URL (`?x=…&y=…&s=…`) so a
//! link reopens the same view.
//!
//! ## Design constraints
//!
//! * **Any bytes in, well-formed XML out.** Names are symbol bytes: invalid UTF-8,
//!   control characters, `]]>`, `<script>`. Every name, title, subtitle, note and
//!   attribute is sanitized and escaped (see `escape.rs`); the script reads its settings
//!   from escaped attributes, never from text pasted into code. flamegraph.pl pastes
//!   `--title` unescaped and inferno breaks its comment when `--notes` holds `--`.
//! * **No sorting of lines.** The profile's stack table is the merged call tree, so the
//!   layout orders each node's children once and walks the tree in one pass, skipping
//!   subtrees narrower than the minimum width before sorting them.
//! * **No allocation per rectangle.** Frame names are sanitized once per distinct frame,
//!   numbers are formatted by hand into one reused buffer, and per-level coordinates are
//!   formatted once.
//! * **Deterministic by default.** Colours are pseudo-random per name unless `--random`
//!   is given, so the same input gives the same file (diffable, cacheable, testable).
//!
//! ## Differences from flamegraph.pl, on purpose
//!
//! * Stacks are merged as a tree: a function whose name sorts between its own leaf line
//!   and its callees' lines (`foo` vs `foo.bar`) is one rectangle, where flamegraph.pl
//!   and inferno draw two.
//! * Labels that do not fit are omitted from the file (the script adds them on zoom), which
//!   keeps large graphs small.
//! * `--nameattr` refuses raw markup (`g_extra`, `a_extra`) and event handlers.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod color;
mod error;
mod escape;
mod layout;
mod lines;
mod nameattr;
mod svg;

pub use color::{Background, ColorMode, Palette, PaletteMap, Rgb};
pub use error::FlamegraphError;
pub use nameattr::{FrameAttrs, NameAttrs};

use kiln_model::{Profile, Quantity};
use layout::{Order, Plan, Weights};

/// The minimum width of a drawn frame (`--minwidth`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MinWidth {
    /// In pixels of the image (`--minwidth 0.1`).
    Pixels(f64),
    /// In percent of the total (`--minwidth 0.5%`).
    Percent(f64),
}

impl MinWidth {
    /// Parses `0.1` (pixels) or `0.5%` (percent of the total).
    pub fn parse(s: &str) -> Option<MinWidth> {
        let (num, pct) = match s.strip_suffix('%') {
            Some(n) => (n, true),
            None => (s, false),
        };
        let v: f64 = num.trim().parse().ok()?;
        if !v.is_finite() || v < 0.0 {
            return None;
        }
        Some(if pct {
            MinWidth::Percent(v)
        } else {
            MinWidth::Pixels(v)
        })
    }
}

/// How frames are placed along the x axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Layout {
    /// flamegraph.pl's: stacks merged, siblings in alphabetical order (the default).
    #[default]
    Classic,
    /// Stacks merged, heaviest sibling first ("left-heavy"): the biggest costs line up on
    /// the left at every level.
    LeftHeavy,
    /// `--flamechart`: samples in time order, only consecutive samples merged.
    FlameChart,
}

/// Rendering options: every flamegraph.pl option, with its default.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Title (`--title`). Default: `None`, which means "Flame Graph", or "Icicle Graph"
    /// when inverted, or "Flame Chart" for a flame chart.
    pub title: Option<String>,
    /// Second title line (`--subtitle`). Default: none.
    pub subtitle: Option<String>,
    /// Image width in pixels (`--width`). Default: 1200.
    pub width: u32,
    /// Height of one frame in pixels (`--height`). Default: 16.
    pub frame_height: u32,
    /// Frames narrower than this are not drawn (`--minwidth`). Default: 0.1 pixels.
    pub min_width: MinWidth,
    /// Font family (`--fonttype`). Default: "Verdana".
    pub font_type: String,
    /// Font size in pixels (`--fontsize`). Default: 12.
    pub font_size: f64,
    /// Average character width relative to the font size, used to fit labels
    /// (`--fontwidth`). Default: 0.59.
    pub font_width: f64,
    /// What the weights count (`--countname`). Default: "samples".
    pub count_name: String,
    /// How counts are written in tooltips. `None` (the default) takes the profile's own
    /// ([`kiln_model::EventInfo::quantity`]): time as `1.20 s`, bytes as `3.50 MiB`,
    /// samples of a timer as `1,198 samples, 1.20 s`; plain counts and samples are written
    /// as flamegraph.pl writes them (`1,234 samples`, with [`Options::count_name`]).
    pub quantity: Option<Quantity>,
    /// What the names are, shown before the details (`--nametype`). Default: "Function:".
    pub name_type: String,
    /// Notes embedded in a comment of the SVG (`--notes`). Default: empty.
    pub notes: String,
    /// Extra attributes per function (`--nameattr FILE`). Default: none.
    pub name_attrs: NameAttrs,
    /// Total the widths are relative to, when larger than the profile's (`--total`).
    /// Default: the profile's total.
    pub total: Option<u64>,
    /// Scale applied to the counts shown (`--factor`). Default: 1.
    pub factor: f64,
    /// Palette (`--colors`). Default: hot.
    pub colors: Palette,
    /// Background (`--bgcolors`). Default: the palette's (yellow for hot).
    pub bgcolors: Option<Background>,
    /// How colours vary per frame (`--hash`, `--random`). Default: [`ColorMode::Stable`].
    pub color_mode: ColorMode,
    /// Colours of earlier runs (`--cp`); names not in it are added and returned in
    /// [`RenderStats::palette_map`]. Default: none.
    pub palette_map: Option<PaletteMap>,
    /// Colour of frames matching a search. Default: rgb(230,0,230).
    pub search_color: Rgb,
    /// Icicle graph: root at the top (`--inverted`). Default: false.
    pub inverted: bool,
    /// Reverse every stack, leaf first (`--reverse`). Default: false.
    pub reverse: bool,
    /// Placement of frames (`--flamechart`, `--left-heavy`). Default: classic.
    pub layout: Layout,
    /// Swap the differential colours (`--negate`). Default: false.
    pub negate: bool,
    /// In a differential graph, colour only the frames of these functions by their
    /// change and draw the others as unchanged: `kiln compare` passes the functions whose
    /// change is beyond noise. Default: `None` (every frame coloured).
    pub diff_marked: Option<std::collections::HashSet<Vec<u8>>>,
    /// Embed the script (hover, zoom, search). Default: true.
    pub interactive: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            title: None,
            subtitle: None,
            width: 1200,
            frame_height: 16,
            min_width: MinWidth::Pixels(0.1),
            font_type: "Verdana".to_string(),
            font_size: 12.0,
            font_width: 0.59,
            count_name: "samples".to_string(),
            quantity: None,
            name_type: "Function:".to_string(),
            notes: String::new(),
            name_attrs: NameAttrs::default(),
            total: None,
            factor: 1.0,
            colors: Palette::Hot,
            bgcolors: None,
            color_mode: ColorMode::Stable,
            palette_map: None,
            search_color: Rgb(230, 0, 230),
            inverted: false,
            reverse: false,
            layout: Layout::Classic,
            negate: false,
            diff_marked: None,
            interactive: true,
        }
    }
}

impl Options {
    /// The title drawn: the given one, or the default for the layout and direction.
    pub fn effective_title(&self) -> &str {
        match &self.title {
            Some(t) => t,
            None if self.layout == Layout::FlameChart => "Flame Chart",
            None if self.inverted => "Icicle Graph",
            None => "Flame Graph",
        }
    }

    fn validate(&self) -> Result<(), FlamegraphError> {
        let bad = |option, value: String, reason| {
            Err(FlamegraphError::InvalidOption {
                option,
                value,
                reason,
            })
        };
        if self.width <= 20 {
            return bad(
                "--width",
                self.width.to_string(),
                "must be more than the 20 pixels of padding",
            );
        }
        if self.frame_height < 2 {
            return bad(
                "--height",
                self.frame_height.to_string(),
                "must be at least 2 pixels",
            );
        }
        if !(self.font_size.is_finite() && self.font_size > 0.0 && self.font_size < 1000.0) {
            return bad(
                "--fontsize",
                self.font_size.to_string(),
                "must be a positive number below 1000",
            );
        }
        if !(self.font_width.is_finite() && self.font_width > 0.0) {
            return bad(
                "--fontwidth",
                self.font_width.to_string(),
                "must be a positive number",
            );
        }
        if !(self.factor.is_finite() && self.factor > 0.0) {
            return bad(
                "--factor",
                self.factor.to_string(),
                "must be a positive number",
            );
        }
        match self.min_width {
            MinWidth::Pixels(v) | MinWidth::Percent(v) if !(v.is_finite() && v >= 0.0) => {
                bad("--minwidth", v.to_string(), "must be a non-negative number")
            }
            _ => Ok(()),
        }
    }
}

/// Something worth telling the user about a rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RenderWarning {
    /// `--total` was smaller than the profile's total and was ignored.
    TotalIgnored {
        /// The `--total` given.
        given: u64,
        /// The profile's total.
        actual: u64,
    },
}

impl std::fmt::Display for RenderWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RenderWarning::TotalIgnored { given, actual } => write!(
                f,
                "--total {given} is less than the profile's total {actual}, so it was ignored"
            ),
        }
    }
}

/// What a rendering drew.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RenderStats {
    /// Rectangles drawn, the "all" root included.
    pub frames: u64,
    /// Frames left out for being narrower than the minimum width.
    pub pruned: u64,
    /// Deepest level drawn (the "all" root is level 0).
    pub depth: u32,
    /// The total widths are relative to (the profile's total weight, or `--total`).
    pub total: u64,
    /// The profile's total weight.
    pub weight: u64,
    /// Things worth telling the user.
    pub warnings: Vec<RenderWarning>,
    /// With [`Options::palette_map`]: the map with the colours chosen for new names, to
    /// be saved for the next run.
    pub palette_map: Option<PaletteMap>,
}

/// Renders `profile` as an SVG flame graph.
pub fn render(
    profile: &Profile,
    opts: &Options,
    out: &mut dyn std::io::Write,
) -> Result<RenderStats, FlamegraphError> {
    opts.validate()?;
    let rev;
    let p = if opts.reverse {
        rev = layout::reversed(profile);
        &rev
    } else {
        profile
    };
    let weights = match opts.layout {
        Layout::FlameChart => Weights {
            total: Vec::new(),
            has_kids: Vec::new(),
            delta: None,
            max_delta: 1,
        },
        _ => Weights::of(p),
    };
    draw(p, &weights, opts, out)
}

/// Renders a differential flame graph: widths from `after`, colours from the change of
/// each function's self weight from `before` to `after` (red: more, blue: less; swapped by
/// [`Options::negate`]), as flamegraph.pl draws two-count folded input.
pub fn render_diff(
    before: &Profile,
    after: &Profile,
    opts: &Options,
    out: &mut dyn std::io::Write,
) -> Result<RenderStats, FlamegraphError> {
    opts.validate()?;
    checked_total(before)?;
    checked_total(after)?;
    let (b, a);
    let (before, after) = if opts.reverse {
        b = layout::reversed(before);
        a = layout::reversed(after);
        (&b, &a)
    } else {
        (before, after)
    };
    let (merged, mut weights) = layout::merged_diff(before, after);
    if let (Some(marked), Some(delta)) = (&opts.diff_marked, weights.delta.as_mut()) {
        let mut max = 1u64;
        for (i, d) in delta.iter_mut().enumerate() {
            if !marked.contains(merged.node_name(kiln_model::StackId(i as u32))) {
                *d = 0;
            }
            max = max.max(d.unsigned_abs());
        }
        weights.max_delta = max;
    }
    let mut opts = opts.clone();
    if opts.layout == Layout::FlameChart {
        // A flame chart has no per-node deltas; draw the merged tree instead.
        opts.layout = Layout::Classic;
    }
    draw(&merged, &weights, &opts, out)
}

/// The sum of the weights of `p`'s samples, or an error if it does not fit in 64 bits
/// (the model's sums saturate).
fn checked_total(p: &Profile) -> Result<u64, FlamegraphError> {
    p.samples
        .weight
        .iter()
        .try_fold(0u64, |a, &w| a.checked_add(w))
        .ok_or(FlamegraphError::WeightOverflow)
}

fn draw(
    p: &Profile,
    weights: &Weights,
    opts: &Options,
    out: &mut dyn std::io::Write,
) -> Result<RenderStats, FlamegraphError> {
    let time = checked_total(p)?;
    if time == 0 {
        return Err(FlamegraphError::NoSamples);
    }
    let mut warnings = Vec::new();
    let timemax = match opts.total {
        Some(t) if t >= time => t,
        Some(t) => {
            // flamegraph.pl warns only when the difference is significant.
            if t as f64 / time as f64 > 0.02 {
                warnings.push(RenderWarning::TotalIgnored {
                    given: t,
                    actual: time,
                });
            }
            time
        }
        None => time,
    };
    let frames_px = f64::from(opts.width) - 2.0 * svg::XPAD;
    let min_w = match opts.min_width {
        MinWidth::Pixels(px) => px * timemax as f64 / frames_px,
        MinWidth::Percent(pct) => pct * timemax as f64 / 100.0,
    };
    let (plan, info) = match opts.layout {
        Layout::FlameChart => Plan::chart(p, min_w),
        Layout::Classic => Plan::tree(p, weights, Order::Name, min_w),
        Layout::LeftHeavy => Plan::tree(p, weights, Order::Heavy, min_w),
    };
    let mut w = svg::SvgWriter::new(p, weights, opts, timemax, info.depth_max, out);
    w.header()?;
    plan.walk(p, weights, time, |node, frame, x, width, level| {
        w.frame(node, frame, x, width, level)
    })?;
    let palette_map = w.finish()?;
    Ok(RenderStats {
        frames: info.drawn,
        pruned: info.pruned,
        depth: info.depth_max,
        total: timemax,
        weight: time,
        warnings,
        palette_map,
    })
}
