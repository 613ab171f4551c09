//! The SVG writer: document prelude, one `<g>` per frame, the embedded script.
use crate::color::{self, ColorMode, Rgb, Rng};
use crate::escape::{self, coord, push_bytes, push_fixed, push_text, push_thousands};
use crate::layout::Weights;
use crate::{FlamegraphError, Options, Palette, PaletteMap};
use kiln_model::{FrameId, Profile, Quantity};
use std::io::Write;

/// Left and right padding, pixels.
pub(crate) const XPAD: f64 = 10.0;
/// Vertical gap between frames, pixels.
const FRAMEPAD: f64 = 1.0;
/// The script: hover, zoom, search, URL state. Static: it reads every setting from
/// attributes of the `#frames` element.
const SCRIPT: &str = include_str!("flamegraph.js");
/// Flush the buffer to the output past this size.
const FLUSH_AT: usize = 1 << 20;
const UNSET: u32 = u32::MAX;

/// A frame's name, sanitized for display: stored in an arena.
#[derive(Clone, Copy)]
struct Name {
    start: u32,
    len: u32,
    chars: u32,
    /// Printable ASCII without markup characters: copy as is, one byte per character.
    plain: bool,
}

pub(crate) struct SvgWriter<'a> {
    p: &'a Profile,
    weights: &'a Weights,
    opts: &'a Options,
    out: &'a mut dyn Write,
    buf: Vec<u8>,
    timemax: u64,
    depth_max: u32,
    image_height: f64,
    /// Weight units to pixels.
    px_per_unit: f64,
    /// Weight units to percent of the frames area.
    pct_per_unit: f64,
    /// Label offset in percent of the frames area (3 pixels).
    label_dx_pct: f64,
    char_px: f64,
    /// Per level: ` y="…"` of the rectangle, and ` y="…"` of the label.
    rect_y: Vec<Vec<u8>>,
    text_y: Vec<Vec<u8>>,
    /// `" height=\"15\" fill=\""`.
    height_fill: Vec<u8>,
    names: Vec<u8>,
    name_of: Vec<u32>,
    name_meta: Vec<Name>,
    /// Cached colour per frame and chain side: 0 unset, else `1 << 24 | rgb`.
    color_of: Vec<u32>,
    /// Per node, for the chain palette: whether the node is above a `--` separator.
    waker: Vec<bool>,
    attr_of: Vec<u32>,
    attr_list: Vec<Option<&'a crate::FrameAttrs>>,
    palette_map: Option<PaletteMap>,
    rng: Rng,
    factor_one: bool,
    /// How counts are written when not as plain numbers (time, bytes, timer samples).
    scaled: Option<Quantity>,
}

/// Strips flamegraph.pl's annotations (`_[k]`, `_[w]`, `_[i]`, `_[j]`) from a name.
fn deannotate(name: &[u8]) -> &[u8] {
    if name.len() >= 4 {
        let t = &name[name.len() - 4..];
        if t[0] == b'_' && t[1] == b'[' && t[3] == b']' && matches!(t[2], b'k' | b'w' | b'i' | b'j')
        {
            return &name[..name.len() - 4];
        }
    }
    name
}

/// Rounds half to even, as Perl's `sprintf "%.0f"` does.
fn round_even(v: f64) -> u64 {
    let r = v.round();
    let r = if (v - v.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - v.signum()
    } else {
        r
    };
    if r.is_finite() && r > 0.0 {
        r as u64
    } else {
        0
    }
}

impl<'a> SvgWriter<'a> {
    pub(crate) fn new(
        p: &'a Profile,
        weights: &'a Weights,
        opts: &'a Options,
        timemax: u64,
        depth_max: u32,
        out: &'a mut dyn Write,
    ) -> Self {
        let fs = opts.font_size;
        let fh = f64::from(opts.frame_height);
        let ypad1 = fs * 3.0;
        let ypad2 = fs * 2.0 + 10.0;
        let ypad3 = if opts.subtitle.is_some() {
            fs * 2.0
        } else {
            0.0
        };
        let image_height = f64::from(depth_max + 1) * fh + ypad1 + ypad2 + ypad3;
        let frames_px = f64::from(opts.width) - 2.0 * XPAD;
        let mut rect_y = Vec::new();
        let mut text_y = Vec::new();
        for depth in 0..=depth_max {
            let d = f64::from(depth);
            let (y1, y2) = if opts.inverted {
                let y1 = ypad1 + ypad3 + d * fh;
                (y1, y1 + fh - FRAMEPAD)
            } else {
                let y2 = image_height - ypad2 - d * fh;
                (y2 - fh + FRAMEPAD, y2)
            };
            rect_y.push(format!("%\" y=\"{}\" width=\"", coord(y1)).into_bytes());
            text_y.push(format!("%\" y=\"{}\">", coord(3.0 + (y1 + y2) / 2.0)).into_bytes());
        }
        let height_fill = format!("%\" height=\"{}\" fill=\"", coord(fh - FRAMEPAD)).into_bytes();
        let waker = if opts.colors == Palette::Chain {
            let mut v = vec![false; p.stacks.len()];
            for id in p.stacks.ids() {
                if let Some(par) = p.stacks.parent(id) {
                    v[id.0 as usize] = v[par.0 as usize] || p.node_name(par) == b"--";
                }
            }
            v
        } else {
            Vec::new()
        };
        let seed = match opts.color_mode {
            ColorMode::Random(s) => s,
            _ => 0,
        };
        SvgWriter {
            p,
            weights,
            opts,
            out,
            buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
            timemax,
            depth_max,
            image_height,
            px_per_unit: frames_px / timemax as f64,
            pct_per_unit: 100.0 / timemax as f64,
            label_dx_pct: 300.0 / frames_px,
            char_px: fs * opts.font_width,
            rect_y,
            text_y,
            height_fill,
            names: Vec::new(),
            name_of: vec![UNSET; p.frames.len()],
            name_meta: Vec::new(),
            color_of: vec![0; 2 * p.frames.len()],
            waker,
            attr_of: if opts.name_attrs.is_empty() {
                Vec::new()
            } else {
                vec![UNSET; p.frames.len()]
            },
            attr_list: Vec::new(),
            palette_map: opts.palette_map.clone(),
            rng: Rng::new(seed),
            factor_one: opts.factor == 1.0,
            scaled: match opts.quantity.unwrap_or_else(|| p.event.quantity()) {
                q @ (Quantity::Time { .. }
                | Quantity::Bytes
                | Quantity::Samples { period_ns: Some(_) }) => Some(q),
                _ => None,
            },
        }
    }

    fn flush_if_full(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// The style sheet (the font, the controls) and, when interactive, the script.
    fn style_and_script(&mut self) {
        use std::fmt::Write as _;
        let o = self.opts;
        let fs = o.font_size;
        let mut s = String::with_capacity(1024);
        let _ = write!(
            s,
            "\ttext {{ font-family:{}; font-size:{}px; fill:#000000; }}\n\
             \t#search, #ignorecase {{ opacity:0.1; cursor:pointer; }}\n\
             \t#search:hover, #search.show, #ignorecase:hover, #ignorecase.show {{ opacity:1; }}\n\
             \t#subtitle {{ text-anchor:middle; fill:#a0a0a0; }}\n\
             \t#title {{ text-anchor:middle; font-size:{}px; }}\n\
             \t#search, #ignorecase, #matched {{ text-anchor:end; }}\n\
             \t#unzoom {{ cursor:pointer; }}\n\
             \t#frames > *:hover {{ stroke:black; stroke-width:0.5; cursor:pointer; }}\n\
             \t.hide {{ display:none; }}\n\
             \t.parent {{ opacity:0.5; }}\n",
            escape::css_string(&o.font_type),
            coord(fs),
            coord(fs + 5.0),
        );
        self.buf.extend_from_slice(b"<style type=\"text/css\">\n");
        push_text(&mut self.buf, &s);
        self.buf.extend_from_slice(b"</style>\n");
        if o.interactive {
            self.buf
                .extend_from_slice(b"<script type=\"text/ecmascript\"><![CDATA[\n");
            self.buf.extend_from_slice(SCRIPT.as_bytes());
            self.buf.extend_from_slice(b"]]></script>\n");
        }
    }

    /// The frames' `<svg>` opening, with the script's settings as escaped attributes.
    fn frames_open(&mut self) {
        use std::fmt::Write as _;
        let o = self.opts;
        let w = o.width;
        let mut s = String::with_capacity(512);
        let _ = write!(
            s,
            "<svg id=\"frames\" x=\"{}\" width=\"{}\" total_samples=\"{}\" fg:total=\"{}\" fg:factor=\"{}\" \
             fg:fontsize=\"{}\" fg:fontwidth=\"{}\" fg:inverted=\"{}\" fg:searchcolor=\"{}\" fg:diff=\"{}\"",
            coord(XPAD),
            coord(f64::from(w) - 2.0 * XPAD),
            self.timemax,
            self.timemax,
            o.factor,
            o.font_size,
            o.font_width,
            u8::from(o.inverted),
            o.search_color.hex(),
            u8::from(self.weights.delta.is_some()),
        );
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.extend_from_slice(b" fg:nametype=\"");
        push_bytes(&mut self.buf, o.name_type.as_bytes());
        self.buf.extend_from_slice(b"\" fg:countname=\"");
        push_bytes(&mut self.buf, o.count_name.as_bytes());
        self.buf.extend_from_slice(b"\">\n");
    }

    /// Writes everything before the frames.
    pub(crate) fn header(&mut self) -> Result<(), FlamegraphError> {
        let o = self.opts;
        let w = o.width;
        let h = coord(self.image_height);
        let fs = o.font_size;
        let (bg1, bg2) = o
            .bgcolors
            .unwrap_or_else(|| o.colors.default_background())
            .stops();
        let mut s = String::with_capacity(4096);
        use std::fmt::Write as _;
        let _ = write!(
            s,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n\
             <!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n\
             <svg version=\"1.1\" width=\"{w}\" height=\"{h}\" onload=\"init(evt)\" viewBox=\"0 0 {w} {h}\" \
             xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" \
             xmlns:fg=\"urn:kiln:flamegraph\">\n\
             <!-- Flame graph stack visualization. See https://github.com/brendangregg/FlameGraph for latest version, and http://www.brendangregg.com/flamegraphs.html for examples. -->\n\
             <!-- NOTES: {} -->\n\
             <defs>\n\t<linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\" >\n\
             \t\t<stop stop-color=\"{}\" offset=\"5%\" />\n\t\t<stop stop-color=\"{}\" offset=\"95%\" />\n\
             \t</linearGradient>\n</defs>\n",
            escape::comment_text(&o.notes),
            bg1.hex(),
            bg2.hex(),
        );
        self.buf.extend_from_slice(s.as_bytes());
        s.clear();
        self.style_and_script();
        s.clear();
        let _ = writeln!(
            s,
            "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"{h}\" fill=\"url(#background)\"  />"
        );
        self.buf.extend_from_slice(s.as_bytes());
        self.text(
            "title",
            f64::from(w) / 2.0,
            fs * 2.0,
            o.effective_title(),
            None,
        );
        if let Some(sub) = &o.subtitle {
            self.text("subtitle", f64::from(w) / 2.0, fs * 4.0, sub, None);
        }
        let bottom = self.image_height - (fs * 2.0 + 10.0) / 2.0;
        let right = f64::from(w) - XPAD;
        self.text("details", XPAD, bottom, " ", None);
        self.text("unzoom", XPAD, fs * 2.0, "Reset Zoom", Some("hide"));
        self.text("search", right - 24.0, fs * 2.0, "Search", None);
        self.text("ignorecase", right, fs * 2.0, "ic", None);
        self.text("matched", right, bottom, " ", None);
        self.frames_open();
        self.flush_if_full()?;
        Ok(())
    }

    /// A tooltip's count: `1,234 samples` (flamegraph.pl's form), or at a readable scale
    /// when the weights are time or bytes (`1.20 s`), or both for timer samples.
    fn push_count(&mut self, count: u64) {
        match self.scaled {
            Some(Quantity::Samples { period_ns: Some(p) }) => {
                push_thousands(&mut self.buf, count);
                self.buf.push(b' ');
                push_bytes(&mut self.buf, self.opts.count_name.as_bytes());
                self.buf.extend_from_slice(b", ");
                let t = kiln_model::format_ns(count as f64 * p as f64);
                self.buf.extend_from_slice(t.as_bytes());
            }
            Some(q) => {
                let v = q.format_value(count as f64);
                self.buf.extend_from_slice(v.as_bytes());
            }
            None => {
                push_thousands(&mut self.buf, count);
                self.buf.push(b' ');
                push_bytes(&mut self.buf, self.opts.count_name.as_bytes());
            }
        }
    }

    fn text(&mut self, id: &str, x: f64, y: f64, content: &str, class: Option<&str>) {
        let class = class.map(|c| format!(" class=\"{c}\"")).unwrap_or_default();
        self.buf.extend_from_slice(
            format!(
                "<text id=\"{id}\"{class} x=\"{}\" y=\"{}\" >",
                coord(x),
                coord(y)
            )
            .as_bytes(),
        );
        push_bytes(&mut self.buf, content.as_bytes());
        self.buf.extend_from_slice(b"</text>\n");
    }

    /// The display name of frame `f`, sanitized once.
    fn name(&mut self, f: FrameId) -> Name {
        let slot = self.name_of[f.0 as usize];
        if slot != UNSET {
            return self.name_meta[slot as usize];
        }
        let raw = deannotate(self.p.frame_name(f));
        let start = self.names.len() as u32;
        let (chars, plain) = if escape::is_plain(raw) {
            self.names.extend_from_slice(raw);
            (raw.len() as u32, true)
        } else {
            let s = escape::sanitize(raw);
            self.names.extend_from_slice(s.as_bytes());
            (s.chars().count() as u32, false)
        };
        let meta = Name {
            start,
            len: self.names.len() as u32 - start,
            chars,
            plain,
        };
        self.name_of[f.0 as usize] = self.name_meta.len() as u32;
        self.name_meta.push(meta);
        meta
    }

    fn push_name(&mut self, n: Name, max_chars: Option<usize>) {
        let s = &self.names[n.start as usize..(n.start + n.len) as usize];
        let s: &[u8] = match max_chars {
            None => s,
            Some(k) if n.plain => &s[..k.min(s.len())],
            Some(k) => {
                // Cut at a character boundary (the arena holds valid UTF-8).
                let text = std::str::from_utf8(s).unwrap_or("");
                let end = text.char_indices().nth(k).map_or(text.len(), |(i, _)| i);
                &s[..end]
            }
        };
        if n.plain {
            self.buf.extend_from_slice(s);
        } else {
            push_text(&mut self.buf, std::str::from_utf8(s).unwrap_or(""));
        }
    }

    fn color(&mut self, node: Option<u32>, f: Option<FrameId>) -> Rgb {
        if let Some(delta) = &self.weights.delta {
            let d = node.map_or(0, |n| delta[n as usize]);
            return color::diff_color(d, self.weights.max_delta, self.opts.negate);
        }
        let name: &[u8] = f.map_or(b"", |f| self.p.frame_name(f));
        if name == b"--" {
            return color::SEPARATOR;
        }
        if name == b"-" {
            return color::DASH;
        }
        let waker = node.is_some_and(|n| self.waker.get(n as usize).copied().unwrap_or(false));
        let random = matches!(self.opts.color_mode, ColorMode::Random(_));
        let slot = f.map(|f| 2 * f.0 as usize + usize::from(waker));
        if let Some(s) = slot {
            let c = self.color_of[s];
            if c != 0 && (!random || self.palette_map.is_some()) {
                return Rgb((c >> 16) as u8, (c >> 8) as u8, c as u8);
            }
        }
        if let Some(map) = &self.palette_map {
            if let Some(c) = map.get(name) {
                return c;
            }
        }
        let v = color::variation(self.opts.color_mode, name, &mut self.rng);
        let kind = f.map_or(kiln_model::FrameKind::Unknown, |f| {
            self.p.frames.get(f).kind
        });
        let c = color::frame_color(self.opts.colors, name, kind, waker, v);
        if let Some(map) = &mut self.palette_map {
            map.insert(name, c);
        }
        if let Some(s) = slot {
            self.color_of[s] =
                1 << 24 | u32::from(c.0) << 16 | u32::from(c.1) << 8 | u32::from(c.2);
        }
        c
    }

    fn attrs(&mut self, f: FrameId) -> Option<&'a crate::FrameAttrs> {
        if self.attr_of.is_empty() {
            return None;
        }
        let slot = self.attr_of[f.0 as usize];
        if slot == UNSET {
            let a = self.opts.name_attrs.get(self.p.frame_name(f));
            self.attr_of[f.0 as usize] = self.attr_list.len() as u32;
            self.attr_list.push(a);
            return a;
        }
        self.attr_list[slot as usize]
    }

    /// Opens a frame's group: `<g>`, or `<a>` with its link, with the frame's attributes.
    fn open_group(&mut self, attrs: Option<&crate::FrameAttrs>) {
        let is_link = attrs.is_some_and(|a| a.href.is_some());
        match attrs {
            None => self.buf.extend_from_slice(b"<g>"),
            Some(a) => {
                self.buf
                    .extend_from_slice(if is_link { b"<a" } else { b"<g" });
                if let Some(href) = &a.href {
                    self.buf.extend_from_slice(b" xlink:href=\"");
                    push_bytes(&mut self.buf, href.as_bytes());
                    self.buf.extend_from_slice(b"\" target=\"");
                    push_bytes(
                        &mut self.buf,
                        a.target.as_deref().unwrap_or("_top").as_bytes(),
                    );
                    self.buf.push(b'"');
                }
                for (k, v) in &a.attrs {
                    self.buf.push(b' ');
                    self.buf.extend_from_slice(k.as_bytes());
                    self.buf.extend_from_slice(b"=\"");
                    push_bytes(&mut self.buf, v.as_bytes());
                    self.buf.push(b'"');
                }
                self.buf.push(b'>');
            }
        }
    }

    /// A frame's tooltip: its title attribute, or its name, count, share and (in a
    /// differential graph) its change; `w` weight units wide.
    fn title(
        &mut self,
        node: Option<u32>,
        name: Option<Name>,
        w: u64,
        attrs: Option<&crate::FrameAttrs>,
    ) {
        let count = if self.factor_one {
            w
        } else {
            round_even(w as f64 * self.opts.factor)
        };
        self.buf.extend_from_slice(b"<title>");
        match (attrs.and_then(|a| a.title.as_deref()), name) {
            (Some(t), _) => push_bytes(&mut self.buf, t.as_bytes()),
            (None, None) => {
                self.buf.extend_from_slice(b"all (");
                self.push_count(count);
                self.buf.extend_from_slice(b", 100%)");
            }
            (None, Some(n)) => {
                self.push_name(n, None);
                self.buf.extend_from_slice(b" (");
                self.push_count(count);
                self.buf.extend_from_slice(b", ");
                let denom = self.timemax as f64 * self.opts.factor;
                push_fixed(&mut self.buf, 100.0 * count as f64 / denom, 2);
                self.buf.push(b'%');
                if let (Some(delta), Some(n)) = (&self.weights.delta, node) {
                    let d = delta[n as usize];
                    let d = if self.opts.negate { -d } else { d };
                    self.buf.extend_from_slice(b"; ");
                    match d.cmp(&0) {
                        std::cmp::Ordering::Greater => self.buf.push(b'+'),
                        std::cmp::Ordering::Less => self.buf.push(b'-'),
                        std::cmp::Ordering::Equal => {}
                    }
                    push_fixed(&mut self.buf, 100.0 * d.unsigned_abs() as f64 / denom, 2);
                    self.buf.push(b'%');
                }
                self.buf.push(b')');
            }
        }
    }

    /// Writes one rectangle: `node` of frame `f` (both `None` for "all") at `x` weight
    /// units, `w` wide, on `level`.
    pub(crate) fn frame(
        &mut self,
        node: Option<u32>,
        f: Option<FrameId>,
        x: u64,
        w: u64,
        level: u32,
    ) -> Result<(), FlamegraphError> {
        let attrs = f.and_then(|f| self.attrs(f));
        let is_link = attrs.is_some_and(|a| a.href.is_some());
        self.open_group(attrs);
        let name = f.map(|f| self.name(f));
        self.title(node, name, w, attrs);
        self.buf.extend_from_slice(b"</title><rect x=\"");
        let x_pct = x as f64 * self.pct_per_unit;
        push_fixed(&mut self.buf, x_pct, 4);
        let level = level.min(self.depth_max) as usize;
        let rect_y = &self.rect_y[level];
        self.buf.extend_from_slice(rect_y);
        push_fixed(&mut self.buf, w as f64 * self.pct_per_unit, 4);
        self.buf.extend_from_slice(&self.height_fill);
        let c = self.color(node, f);
        c.push_hex(&mut self.buf);
        let mut num = itoa::Buffer::new();
        self.buf.extend_from_slice(b"\" fg:x=\"");
        self.buf.extend_from_slice(num.format(x).as_bytes());
        self.buf.extend_from_slice(b"\" fg:w=\"");
        self.buf.extend_from_slice(num.format(w).as_bytes());
        self.buf.extend_from_slice(b"\"/>");
        // Label, when at least one character and two dots fit (flamegraph.pl's rule).
        let fit = (w as f64 * self.px_per_unit / self.char_px) as usize;
        if fit >= 3 {
            self.buf.extend_from_slice(b"<text x=\"");
            push_fixed(&mut self.buf, x_pct + self.label_dx_pct, 4);
            let text_y = &self.text_y[level];
            self.buf.extend_from_slice(text_y);
            match name {
                None => self.buf.extend_from_slice(b"all"),
                Some(n) if (n.chars as usize) <= fit => self.push_name(n, None),
                Some(n) => {
                    self.push_name(n, Some(fit - 2));
                    self.buf.extend_from_slice(b"..");
                }
            }
            self.buf.extend_from_slice(b"</text>");
        }
        self.buf
            .extend_from_slice(if is_link { b"</a>\n" } else { b"</g>\n" });
        self.flush_if_full()?;
        Ok(())
    }

    /// Closes the document; returns the palette map with new colours.
    pub(crate) fn finish(mut self) -> Result<Option<PaletteMap>, FlamegraphError> {
        self.buf.extend_from_slice(b"</svg>\n</svg>\n");
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(self.palette_map)
    }
}
