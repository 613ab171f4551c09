//! Palettes, as flamegraph.pl defines them, and the consistent palette file.
use crate::FlamegraphError;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// Parses `#rrggbb`.
    pub fn parse_hex(s: &str) -> Option<Rgb> {
        let h = s.strip_prefix('#')?;
        if h.len() != 6 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let p = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
        Some(Rgb(p(0)?, p(2)?, p(4)?))
    }

    /// Parses `rgb(r,g,b)` (palette.map's notation) or `#rrggbb`.
    pub fn parse(s: &str) -> Option<Rgb> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix("rgb(").and_then(|r| r.strip_suffix(')')) {
            let mut it = inner.split(',').map(|p| p.trim().parse::<u8>().ok());
            let c = Rgb(it.next()??, it.next()??, it.next()??);
            return it.next().is_none().then_some(c);
        }
        Rgb::parse_hex(s)
    }

    pub(crate) fn push_hex(self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push(b'#');
        for v in [self.0, self.1, self.2] {
            out.push(HEX[usize::from(v >> 4)]);
            out.push(HEX[usize::from(v & 15)]);
        }
    }

    /// `#rrggbb`.
    pub fn hex(self) -> String {
        let mut v = Vec::with_capacity(7);
        self.push_hex(&mut v);
        String::from_utf8(v).unwrap_or_default()
    }
}

impl std::fmt::Display for Rgb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rgb({},{},{})", self.0, self.1, self.2)
    }
}

/// A colour palette (`--colors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Palette {
    /// Reds and yellows (the default).
    #[default]
    Hot,
    /// Greens and blues, for memory profiles.
    Mem,
    /// Blues, for I/O profiles.
    Io,
    /// Aqua, for wakeup stacks.
    Wakeup,
    /// Off-CPU (blue) and waker (aqua) stacks joined by a `--` frame.
    Chain,
    /// Java: JIT green, inlined aqua, kernel orange, C++ yellow, the rest red.
    Java,
    /// JavaScript: source green, builtins aqua, C++ yellow, kernel orange.
    Js,
    /// Perl: Perl code green, C++ yellow, kernel orange.
    Perl,
    /// Python: `.py` code (and the Python frames kiln reads) green, CPython yellow, kernel
    /// orange.
    Python,
    /// Rust: standard library orange, crates (`a::b`) aqua, the rest yellow.
    Rust,
    /// Flat red.
    Red,
    /// Flat green.
    Green,
    /// Flat blue.
    Blue,
    /// Flat aqua.
    Aqua,
    /// Flat yellow.
    Yellow,
    /// Flat purple.
    Purple,
    /// Flat orange.
    Orange,
}

impl Palette {
    /// Every palette name, as `--colors` accepts it.
    pub const NAMES: &'static [&'static str] = &[
        "hot", "mem", "io", "wakeup", "chain", "java", "js", "perl", "python", "rust", "red",
        "green", "blue", "aqua", "yellow", "purple", "orange",
    ];

    /// The palette called `name`.
    pub fn from_name(name: &str) -> Option<Palette> {
        use Palette::*;
        Some(match name {
            "hot" => Hot,
            "mem" => Mem,
            "io" => Io,
            "wakeup" => Wakeup,
            "chain" => Chain,
            "java" => Java,
            "js" => Js,
            "perl" => Perl,
            "python" => Python,
            "rust" => Rust,
            "red" => Red,
            "green" => Green,
            "blue" => Blue,
            "aqua" => Aqua,
            "yellow" => Yellow,
            "purple" => Purple,
            "orange" => Orange,
            _ => return None,
        })
    }

    /// The background flamegraph.pl pairs with this palette.
    pub(crate) fn default_background(self) -> Background {
        use Palette::*;
        match self {
            Mem => Background::Green,
            Io | Wakeup | Chain => Background::Blue,
            Red | Green | Blue | Aqua | Yellow | Purple | Orange => Background::Grey,
            _ => Background::Yellow,
        }
    }
}

/// The background (`--bgcolors`): a gradient or a flat colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Background {
    /// `#eeeeee` to `#eeeeb0`.
    Yellow,
    /// `#eeeeee` to `#e0e0ff`.
    Blue,
    /// `#eef2ee` to `#e0ffe0`.
    Green,
    /// `#f8f8f8` to `#e8e8e8`.
    Grey,
    /// One colour.
    Flat(Rgb),
}

impl Background {
    /// Parses `yellow`, `blue`, `green`, `grey` or `#rrggbb`.
    pub fn parse(s: &str) -> Option<Background> {
        Some(match s {
            "yellow" => Background::Yellow,
            "blue" => Background::Blue,
            "green" => Background::Green,
            "grey" | "gray" => Background::Grey,
            other => Background::Flat(Rgb::parse_hex(other)?),
        })
    }

    pub(crate) fn stops(self) -> (Rgb, Rgb) {
        match self {
            Background::Yellow => (Rgb(0xee, 0xee, 0xee), Rgb(0xee, 0xee, 0xb0)),
            Background::Blue => (Rgb(0xee, 0xee, 0xee), Rgb(0xe0, 0xe0, 0xff)),
            Background::Green => (Rgb(0xee, 0xf2, 0xee), Rgb(0xe0, 0xff, 0xe0)),
            Background::Grey => (Rgb(0xf8, 0xf8, 0xf8), Rgb(0xe8, 0xe8, 0xe8)),
            Background::Flat(c) => (c, c),
        }
    }
}

/// How a frame's colour varies within its palette.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ColorMode {
    /// A pseudo-random colour derived from the name: looks like flamegraph.pl's random
    /// colours, but the same input always gives the same SVG (the default).
    #[default]
    Stable,
    /// flamegraph.pl's `--hash`: similar names get similar colours (the hash weights the
    /// first characters most).
    Hash,
    /// flamegraph.pl's `--random`: a fresh random colour for every rectangle, from this
    /// seed.
    Random(u64),
}

/// Grey of frames named `--` (stack separators in chain graphs).
pub(crate) const SEPARATOR: Rgb = Rgb(160, 160, 160);
/// Grey of frames named `-` (user/kernel separators).
pub(crate) const DASH: Rgb = Rgb(200, 200, 200);

/// flamegraph.pl's `namehash`: a value in [0, 1] weighting early characters over later
/// ones, after dropping a `module`` prefix.
pub(crate) fn namehash(name: impl Iterator<Item = u8> + Clone) -> f64 {
    let bytes: Vec<u8> = name.take(4096).collect();
    let mut s: &[u8] = &bytes;
    // `s/.(.*?)`//`: drop everything up to the first backtick that is not the first byte.
    if let Some(p) = s.iter().skip(1).position(|&b| b == b'`') {
        s = &s[p + 2..];
    }
    let (mut vector, mut weight, mut max, mut modulo) = (0.0f64, 1.0f64, 1.0f64, 10u32);
    for &c in s {
        let i = u32::from(c) % modulo;
        vector += (f64::from(i) / f64::from(modulo - 1)) * weight;
        modulo += 1;
        max += weight;
        weight *= 0.70;
        if modulo > 12 {
            break;
        }
    }
    1.0 - vector / max
}

/// FNV-1a, for [`ColorMode::Stable`].
fn fnv(name: &[u8], salt: u8) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.iter().chain(std::iter::once(&salt)) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    // Finalise so that names differing in the last byte spread over the whole range.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A small PRNG (splitmix64) for [`ColorMode::Random`].
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn contains(h: &[u8], n: &[u8]) -> bool {
    memchr::memmem::find(h, n).is_some()
}

/// `java`: JIT-compiled and Java packages green, inlined aqua, kernel orange, C++ yellow.
fn java(name: &[u8]) -> Palette {
    use Palette::*;
    let ends = |s: &[u8]| name.ends_with(s);
    let n = name.strip_prefix(b"L").unwrap_or(name);
    let java_pkg = [
        &b"java/"[..],
        b"javax/",
        b"jdk/",
        b"net/",
        b"org/",
        b"com/",
        b"io/",
        b"sun/",
    ]
    .iter()
    .any(|p| n.starts_with(p));
    if ends(b"_[j]") {
        Green
    } else if ends(b"_[i]") {
        Aqua
    } else if java_pkg {
        Green
    } else if ends(b"_[k]") {
        Orange
    } else if contains(name, b"::") {
        Yellow
    } else {
        Red
    }
}

/// `js`: compiled JavaScript with a source green, without aqua, C++ yellow, kernel orange.
fn js(name: &[u8]) -> Palette {
    use Palette::*;
    let ends = |s: &[u8]| name.ends_with(s);
    let source = contains(name, b"/") || contains(name, b".js");
    if ends(b"_[j]") {
        if source {
            Green
        } else {
            Aqua
        }
    } else if contains(name, b"::") {
        Yellow
    } else if source {
        Green
    } else if contains(name, b":") {
        Aqua
    } else if name == b" " {
        Green
    } else if contains(name, b"_[k]") {
        Orange
    } else {
        Red
    }
}

/// `rust`: the standard library and the kernel orange, other paths aqua, the rest yellow.
fn rust(name: &[u8]) -> Palette {
    use Palette::*;
    let ends = |s: &[u8]| name.ends_with(s);
    let n = match memchr::memchr(b'`', name) {
        Some(i) => &name[i + 1..],
        None => name,
    };
    let n = n.strip_prefix(b"<").unwrap_or(n);
    let std_lib = [&b"std::"[..], b"core::", b"alloc::"]
        .iter()
        .any(|p| n.starts_with(p));
    if std_lib || ends(b"_[k]") {
        Orange
    } else if contains(n, b"::") {
        Aqua
    } else {
        Yellow
    }
}

/// The flat palette a multi-palette picks for `name` (flamegraph.pl's rules).
fn resolve(palette: Palette, name: &[u8], waker: bool) -> Palette {
    use Palette::*;
    let ends = |s: &[u8]| name.ends_with(s);
    match palette {
        Java => java(name),
        Perl => {
            if contains(name, b"::") {
                Yellow
            } else if contains(name, b"Perl") || contains(name, b".pl") {
                Green
            } else if ends(b"_[k]") {
                Orange
            } else {
                Red
            }
        }
        Js => js(name),
        Python => {
            if ends(b"_[j]") || contains(name, b".py") {
                Green
            } else if contains(name, b"python") {
                Yellow
            } else if ends(b"_[k]") {
                Orange
            } else {
                Red
            }
        }
        Rust => rust(name),
        Wakeup => Aqua,
        Chain => {
            if waker || contains(name, b"_[w]") {
                Aqua
            } else {
                Blue
            }
        }
        other => other,
    }
}

/// The colour of a frame of `kind` called `name`: as [`palette_color`], except that the
/// python palette draws the Python frames kiln reads from the interpreter
/// ([`kiln_model::FrameKind::Python`]) green and kernel frames orange, whatever their
/// names say.
pub(crate) fn frame_color(
    palette: Palette,
    name: &[u8],
    kind: kiln_model::FrameKind,
    waker: bool,
    v: [f64; 3],
) -> Rgb {
    use kiln_model::FrameKind;
    let flat = match (palette, kind) {
        (Palette::Python, FrameKind::Python) => Palette::Green,
        (Palette::Python, FrameKind::Kernel) => Palette::Orange,
        _ => palette,
    };
    palette_color(flat, name, waker, v)
}

/// The colour of `name` in `palette`, with the three variation values `v`.
pub(crate) fn palette_color(palette: Palette, name: &[u8], waker: bool, v: [f64; 3]) -> Rgb {
    use Palette::*;
    let [v1, v2, v3] = v;
    let t = |base: u32, span: f64, x: f64| (base + (span * x) as u32).min(255) as u8;
    match resolve(palette, name, waker) {
        Hot => Rgb(t(205, 50.0, v3), t(0, 230.0, v1), t(0, 55.0, v2)),
        Mem => Rgb(0, t(190, 50.0, v2), t(0, 210.0, v1)),
        Io => {
            let r = t(80, 60.0, v1);
            Rgb(r, r, t(190, 55.0, v2))
        }
        Red => {
            let x = t(50, 80.0, v1);
            Rgb(t(200, 55.0, v1), x, x)
        }
        Green => {
            let x = t(50, 60.0, v1);
            Rgb(x, t(200, 55.0, v1), x)
        }
        Blue => {
            let x = t(80, 60.0, v1);
            Rgb(x, x, t(205, 50.0, v1))
        }
        Yellow => {
            let x = t(175, 55.0, v1);
            Rgb(x, x, t(50, 20.0, v1))
        }
        Purple => {
            let x = t(190, 65.0, v1);
            Rgb(x, t(80, 60.0, v1), x)
        }
        Aqua => Rgb(t(50, 60.0, v1), t(165, 55.0, v1), t(165, 55.0, v1)),
        Orange => Rgb(t(190, 65.0, v1), t(90, 65.0, v1), 0),
        // Multi-palettes always resolve to a flat one.
        _ => Rgb(0, 0, 0),
    }
}

/// The three variation values of `name` under `mode`.
pub(crate) fn variation(mode: ColorMode, name: &[u8], rng: &mut Rng) -> [f64; 3] {
    match mode {
        ColorMode::Stable => [fnv(name, 1), fnv(name, 2), fnv(name, 3)],
        ColorMode::Hash => {
            let fwd = namehash(name.iter().copied());
            let rev = namehash(name.iter().rev().copied());
            [fwd, rev, rev]
        }
        ColorMode::Random(_) => [rng.next_f64(), rng.next_f64(), rng.next_f64()],
    }
}

/// flamegraph.pl's differential colour: white for no change, red for growth, blue for
/// shrinkage, saturated at `max`.
pub(crate) fn diff_color(delta: i64, max: u64, negate: bool) -> Rgb {
    let d = if negate { -delta } else { delta };
    let max = max.max(1) as f64;
    let scaled = |m: f64| (210.0 * m / max).clamp(0.0, 210.0) as u8;
    match d.cmp(&0) {
        std::cmp::Ordering::Equal => Rgb(255, 255, 255),
        std::cmp::Ordering::Greater => {
            let c = scaled(max - d as f64);
            Rgb(255, c, c)
        }
        std::cmp::Ordering::Less => {
            let c = scaled(max + d as f64);
            Rgb(c, c, 255)
        }
    }
}

/// Colours chosen in earlier runs (`--cp`, the file `palette.map`), so a function keeps
/// its colour from one flame graph to the next.
///
/// The file holds one `name->rgb(r,g,b)` line per function, sorted by name, as
/// flamegraph.pl writes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaletteMap {
    map: HashMap<Vec<u8>, Rgb>,
}

impl PaletteMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a palette map; `path` names the source in errors.
    pub fn read(reader: impl BufRead, path: &Path) -> Result<PaletteMap, FlamegraphError> {
        let mut map = HashMap::new();
        crate::lines::for_each_line(reader, path, |line, bad| {
            let sep = memchr::memmem::rfind(line, b"->")
                .ok_or_else(|| bad("expected NAME->rgb(R,G,B)"))?;
            let color = std::str::from_utf8(&line[sep + 2..])
                .ok()
                .and_then(Rgb::parse)
                .ok_or_else(|| bad("expected a colour rgb(R,G,B) after '->'"))?;
            map.insert(line[..sep].to_vec(), color);
            Ok(())
        })?;
        Ok(PaletteMap { map })
    }

    /// Reads `path`, or returns an empty map when it does not exist (the first run).
    pub fn load_or_empty(path: &Path) -> Result<PaletteMap, FlamegraphError> {
        match std::fs::File::open(path) {
            Ok(f) => PaletteMap::read(std::io::BufReader::new(f), path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(PaletteMap::new()),
            Err(source) => Err(FlamegraphError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Writes the map, sorted by name.
    pub fn write(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut entries: Vec<_> = self.map.iter().collect();
        entries.sort();
        for (name, c) in entries {
            out.write_all(name)?;
            writeln!(out, "->{c}")?;
        }
        Ok(())
    }

    /// The colour of `name`, if known.
    pub fn get(&self, name: &[u8]) -> Option<Rgb> {
        self.map.get(name).copied()
    }

    /// Records the colour of `name`.
    pub fn insert(&mut self, name: &[u8], color: Rgb) {
        self.map.insert(name.to_vec(), color);
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namehash_matches_flamegraph_pl() {
        // perl -e 'namehash("main")' with flamegraph.pl's sub: 1 - vector/max.
        let v = namehash(b"main".iter().copied());
        // m=109%10=9 -> 9/9*1; a=97%11=9 -> 9/10*0.7; i=105%12=9 -> 9/11*0.49
        let vector = 1.0 + 0.9 * 0.7 + (9.0 / 11.0) * 0.49;
        let max = 1.0 + 1.0 + 0.7 + 0.49;
        assert!((v - (1.0 - vector / max)).abs() < 1e-12);
        // The module prefix is dropped.
        assert_eq!(namehash(b"libc.so`main".iter().copied()), v);
    }

    #[test]
    fn palettes_and_backgrounds() {
        assert_eq!(
            palette_color(Palette::Hot, b"x", false, [0.0, 0.0, 0.0]),
            Rgb(205, 0, 0)
        );
        assert_eq!(
            palette_color(Palette::Java, b"java/lang/Thread.run", false, [1.0; 3]),
            Rgb(110, 255, 110)
        );
        assert_eq!(
            resolve(Palette::Java, b"Interpreter_[i]", false),
            Palette::Aqua
        );
        assert_eq!(
            resolve(Palette::Rust, b"<std::io::Foo>::bar", false),
            Palette::Orange
        );
        assert_eq!(resolve(Palette::Rust, b"kiln::main", false), Palette::Aqua);
        assert_eq!(resolve(Palette::Chain, b"f", true), Palette::Aqua);
        use kiln_model::FrameKind;
        let py = frame_color(
            Palette::Python,
            b"handle",
            FrameKind::Python,
            false,
            [0.0; 3],
        );
        assert_eq!(
            py,
            palette_color(Palette::Green, b"handle", false, [0.0; 3])
        );
        let k = frame_color(
            Palette::Python,
            b"do_syscall_64",
            FrameKind::Kernel,
            false,
            [0.0; 3],
        );
        assert_eq!(k, palette_color(Palette::Orange, b"x", false, [0.0; 3]));
        let c = frame_color(
            Palette::Python,
            b"PyObject_Call",
            FrameKind::User,
            false,
            [0.0; 3],
        );
        assert_eq!(c, palette_color(Palette::Red, b"x", false, [0.0; 3]));
        assert_eq!(Palette::Io.default_background(), Background::Blue);
        assert_eq!(
            Background::parse("#0a0B0c"),
            Some(Background::Flat(Rgb(10, 11, 12)))
        );
        assert_eq!(Background::parse("pink"), None);
        for n in Palette::NAMES {
            assert!(Palette::from_name(n).is_some(), "{n}");
        }
    }

    #[test]
    fn diff_colors() {
        assert_eq!(diff_color(0, 10, false), Rgb(255, 255, 255));
        assert_eq!(diff_color(10, 10, false), Rgb(255, 0, 0));
        assert_eq!(diff_color(-10, 10, false), Rgb(0, 0, 255));
        assert_eq!(diff_color(-10, 10, true), Rgb(255, 0, 0));
        assert_eq!(diff_color(5, 10, false), Rgb(255, 105, 105));
    }

    #[test]
    fn palette_map_round_trip_and_errors() {
        let p = Path::new("palette.map");
        let m = PaletteMap::read(&b"b->rgb(1,2,3)\na->b->rgb(4,5,6)\n"[..], p).unwrap();
        assert_eq!(m.get(b"a->b"), Some(Rgb(4, 5, 6)));
        let mut out = Vec::new();
        m.write(&mut out).unwrap();
        assert_eq!(out, b"a->b->rgb(4,5,6)\nb->rgb(1,2,3)\n");
        let e = PaletteMap::read(&b"ok->rgb(1,2,3)\nbroken\n"[..], p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "palette.map:2: expected NAME->rgb(R,G,B): \"broken\""
        );
    }
}
