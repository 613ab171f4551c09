//! # kiln-formats: one table of profile formats in and out
//!
//! Every kiln command that reads a profile detects its format here, from its content
//! (and, for outputs, from `-o`'s extension or `--output-format`), and every reader and
//! writer is reached through the format's entry in [`FORMATS`]:
//!
//! ```text
//! kiln collapse perf.data -o cpu.pb.gz            # perf.data in (sniffed), pprof out (extension)
//! kiln flamegraph heap.pb.gz -o heap.html         # pprof in (sniffed), the viewer out
//! kiln collapse run.kiln --output-format speedscope > run.speedscope.json
//! ```
//!
//! ## Design constraints
//!
//! * **One table.** [`FORMATS`] lists each format once: its name and aliases, its
//!   extensions, the mark its content starts with, its [`Reader`] and [`Writer`], and
//!   what it is. Names (`--format`, `--output-format`, [`Format::by_name`], `str::parse`),
//!   detection ([`sniff`]), [`read`] and [`write`] all go through it. Errors for unknown
//!   or ambiguous formats list the formats a command takes from that table; `--help`
//!   texts are written from it too ([`names`]).
//! * **Content first.** Inputs are recognised by their first bytes: `PERFILE2`
//!   (perf.data), `KILNPROF` (kiln's native profiles), SQLite's header (an exported run),
//!   gzip and zstd (inflated, then recognised again from the inflated stream's first
//!   bytes: pprof files, compressed text; see [`compressed`]), pprof's first protobuf
//!   field (each the `magic` of its entry), and the text formats by their first lines,
//!   which vote.
//! * **Bounded.** What is inflated or read whole is held to the input limit
//!   ([`kiln_model::input`], `--max-input`); text formats are streamed. An extension never
//!   overrides content; it names the text format of content that matches none.
//! * **Outputs by extension.** The longest extension that matches wins
//!   (`x.speedscope.json` is speedscope, `x.otlp.pb` OTLP, `x.pb` pprof); a command
//!   accepts only the outputs it can make, and says which.
//! * **Nothing silent.** Readers return what they read, kept and skipped
//!   ([`kiln_collapse::Stats`]) and notes for what a reader must know.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod compressed;
mod detect;
mod error;
pub mod gecko;
pub mod otlp;
pub mod pprof;
mod read;
pub mod speedscope;
mod write;

pub use error::FormatError;
pub use read::{
    pick, pick_stored, read, read_bytes, BoxError, FileReaders, PerfDataRead, PerfDataRequest,
    ReadOptions, ReadResult, SQLITE_HEADER,
};
pub use write::{per_event_path, pprof_uncompressed, write, WriteOptions};

use kiln_collapse::Collapsed;
use kiln_model::Profile;
use std::path::Path;

/// A profile format kiln reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// The text of `perf script`.
    PerfScript,
    /// Folded stacks (`a;b;c 42`), bcc's `-f` output.
    Folded,
    /// bpftrace and bcc map dumps.
    Bpftrace,
    /// perf's binary recording.
    PerfData,
    /// kiln's native profile (`.kiln`): every event, timestamps, threads.
    Native,
    /// A kiln run store or exported run (SQLite): its latest run's profiles.
    RunStore,
    /// pprof's `profile.proto`, gzipped or not.
    Pprof,
    /// speedscope's JSON file format.
    Speedscope,
    /// The Firefox Profiler's processed profile format.
    Gecko,
    /// OpenTelemetry's profiles signal (opentelemetry-proto v1.8.0, in development).
    Otlp,
    /// An SVG flame graph.
    Svg,
    /// kiln's one-file HTML viewer.
    Html,
    /// A table as text.
    Text,
    /// A table as Markdown.
    Markdown,
    /// A table as JSON.
    Json,
}

/// What the table says of a format.
#[derive(Clone, Copy, Debug)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// Its name (for `--format`, `--output-format` and messages).
    pub name: &'static str,
    /// Other names accepted.
    pub aliases: &'static [&'static str],
    /// File name endings, preferred first, with their dot.
    pub extensions: &'static [&'static str],
    /// Recognises it from an input's first bytes, for the formats with a mark of their
    /// own (tried in table order); the text formats are told apart by their first lines.
    pub magic: Option<fn(&[u8]) -> bool>,
    /// How kiln reads it (`None`: it does not).
    pub reader: Option<Reader>,
    /// How kiln writes it (`None`: it does not).
    pub writer: Option<Writer>,
    /// One file holds several profiles (events, threads); otherwise a command writing
    /// several events writes one file per event.
    pub multi: bool,
    /// What it is, in a few words.
    pub about: &'static str,
}

/// How kiln reads a format.
#[derive(Clone, Copy, Debug)]
pub enum Reader {
    /// A text format: its collapser reads an input in memory; `stream`, where there is
    /// one, reads it in blocks as it arrives (memory stays small whatever its size).
    Text {
        /// The collapser.
        collapse: kiln_collapse::Collapser,
        /// The streaming collapser.
        stream: Option<StreamReader>,
    },
    /// Read whole from memory (within the input limit): the profile and notes.
    Bytes(BytesReader),
    /// Read from its file (`None`: the input is no file) by the readers the caller gives
    /// ([`FileReaders`]).
    File(FileReader),
}

/// A text format read in blocks from a stream.
pub type StreamReader = fn(
    &str,
    &mut dyn std::io::Read,
    &kiln_collapse::Options,
) -> Result<Collapsed, kiln_collapse::perf::ReadError>;

/// A format read whole from memory: the profile kept, and notes for the reader.
pub type BytesReader =
    fn(&str, &[u8], &ReadOptions) -> Result<(Collapsed, Vec<String>), FormatError>;

/// A format read from its file.
pub type FileReader = fn(Option<&Path>, &str, &ReadOptions) -> Result<ReadResult, FormatError>;

/// How kiln writes a format.
#[derive(Clone, Copy, Debug)]
pub enum Writer {
    /// Profiles written by [`write`].
    Profiles(ProfileWriter),
    /// Written by the command that makes it: a picture, a table, a run's file.
    Command,
}

/// Writes profiles in a data format.
pub type ProfileWriter =
    fn(&[Profile], &WriteOptions, &mut dyn std::io::Write) -> Result<(), FormatError>;

/// Every format, once.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::PerfScript,
        name: "perf",
        aliases: &["perf-script"],
        extensions: &[".perf", ".perf-script"],
        magic: None,
        reader: Some(Reader::Text {
            collapse: kiln_collapse::perf::collapse,
            stream: Some(kiln_collapse::perf::collapse_reader),
        }),
        writer: None,
        multi: false,
        about: "the text of perf script",
    },
    FormatInfo {
        format: Format::Folded,
        name: "folded",
        aliases: &["bcc"],
        extensions: &[".folded", ".txt"],
        magic: None,
        reader: Some(Reader::Text {
            collapse: kiln_collapse::folded::collapse,
            stream: Some(kiln_collapse::folded::collapse_reader),
        }),
        writer: Some(Writer::Profiles(write::write_folded)),
        multi: false,
        about: "folded stacks, one `frame;frame;frame count` per line",
    },
    FormatInfo {
        format: Format::Bpftrace,
        name: "bpftrace",
        aliases: &[],
        extensions: &[],
        magic: None,
        reader: Some(Reader::Text {
            collapse: kiln_collapse::bpftrace::collapse,
            stream: None,
        }),
        writer: None,
        multi: false,
        about: "bpftrace and bcc map dumps with multi-line stacks",
    },
    FormatInfo {
        format: Format::PerfData,
        name: "perf.data",
        aliases: &["perf-data"],
        extensions: &[".data"],
        magic: Some(|head| head.starts_with(b"PERFILE2")),
        reader: Some(Reader::File(read::read_perf_data)),
        writer: None,
        multi: true,
        about: "perf record's binary recording",
    },
    FormatInfo {
        format: Format::Native,
        name: "kiln",
        aliases: &["native"],
        extensions: &[".kiln"],
        magic: Some(kiln_model::native::is_native),
        reader: Some(Reader::Bytes(read::read_native)),
        writer: Some(Writer::Profiles(write::write_native)),
        multi: true,
        about: "kiln's native profile: every event, timestamps, threads",
    },
    FormatInfo {
        format: Format::RunStore,
        name: "store",
        aliases: &["run"],
        extensions: &[".db"],
        magic: Some(|head| head.starts_with(SQLITE_HEADER)),
        reader: Some(Reader::File(read::read_store_file)),
        writer: Some(Writer::Command),
        multi: true,
        about: "a kiln run store or exported run (its latest run; kiln runs export writes one)",
    },
    FormatInfo {
        format: Format::Pprof,
        name: "pprof",
        aliases: &["pb", "proto"],
        extensions: &[".pb.gz", ".pprof", ".pprof.gz", ".pb"],
        magic: Some(|head| binary(head) && pprof::sniff(head)),
        reader: Some(Reader::Bytes(read::read_pprof)),
        writer: Some(Writer::Profiles(write::write_pprof)),
        multi: false,
        about: "pprof's profile.proto (Go), gzipped or not",
    },
    FormatInfo {
        format: Format::Speedscope,
        name: "speedscope",
        aliases: &[],
        extensions: &[".speedscope.json"],
        magic: None,
        reader: None,
        writer: Some(Writer::Profiles(write::write_speedscope)),
        multi: true,
        about: "speedscope's file format, one sampled profile per thread",
    },
    FormatInfo {
        format: Format::Gecko,
        name: "gecko",
        aliases: &["firefox", "fxprof"],
        extensions: &[".gecko.json"],
        magic: None,
        reader: None,
        writer: Some(Writer::Profiles(write::write_gecko)),
        multi: true,
        about: "the Firefox Profiler's processed format, per-thread samples with timestamps",
    },
    FormatInfo {
        format: Format::Otlp,
        name: "otlp",
        aliases: &["otlp-profiles"],
        extensions: &[".otlp.pb"],
        magic: None,
        reader: None,
        writer: Some(Writer::Profiles(write::write_otlp)),
        multi: true,
        about: "OpenTelemetry profiles: an ExportProfilesServiceRequest of opentelemetry-proto v1.8.0 (profiles/v1development, development status)",
    },
    FormatInfo {
        format: Format::Svg,
        name: "svg",
        aliases: &[],
        extensions: &[".svg"],
        magic: None,
        reader: None,
        writer: Some(Writer::Command),
        multi: false,
        about: "an SVG flame graph",
    },
    FormatInfo {
        format: Format::Html,
        name: "html",
        aliases: &["viewer"],
        extensions: &[".html", ".htm"],
        magic: None,
        reader: None,
        writer: Some(Writer::Command),
        multi: false,
        about: "kiln's one-file HTML viewer",
    },
    FormatInfo {
        format: Format::Text,
        name: "text",
        aliases: &["txt"],
        extensions: &[".txt"],
        magic: None,
        reader: None,
        writer: Some(Writer::Command),
        multi: false,
        about: "a table as text",
    },
    FormatInfo {
        format: Format::Markdown,
        name: "markdown",
        aliases: &["md"],
        extensions: &[".md", ".markdown"],
        magic: None,
        reader: None,
        writer: Some(Writer::Command),
        multi: false,
        about: "a table as Markdown",
    },
    FormatInfo {
        format: Format::Json,
        name: "json",
        aliases: &[],
        extensions: &[".json"],
        magic: None,
        reader: None,
        writer: Some(Writer::Command),
        multi: false,
        about: "a table as JSON",
    },
];

impl Format {
    /// The table's entry.
    pub fn info(self) -> &'static FormatInfo {
        FORMATS
            .iter()
            .find(|f| f.format == self)
            .expect("every format is in the table")
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The format called `name` (or an alias), among `among`.
    pub fn by_name(name: &str, among: &[Format]) -> Result<Format, FormatError> {
        let n = name.to_ascii_lowercase();
        among
            .iter()
            .copied()
            .find(|f| {
                let i = f.info();
                i.name == n || i.aliases.contains(&n.as_str())
            })
            .ok_or_else(|| FormatError::UnknownName {
                given: name.to_string(),
                formats: list(among),
            })
    }
}

impl std::str::FromStr for Format {
    type Err = FormatError;

    /// The format called `s` (its name or an alias), among all.
    fn from_str(s: &str) -> Result<Format, FormatError> {
        let all: Vec<Format> = FORMATS.iter().map(|f| f.format).collect();
        Format::by_name(s, &all)
    }
}

/// Every format kiln reads, in table order.
pub fn readable() -> Vec<Format> {
    FORMATS
        .iter()
        .filter(|f| f.reader.is_some())
        .map(|f| f.format)
        .collect()
}

/// The profile formats kiln writes as data (not pictures or tables): folded, kiln,
/// pprof, and the exports.
pub const PROFILE_OUTPUTS: &[Format] = &[
    Format::Folded,
    Format::Native,
    Format::Pprof,
    Format::Speedscope,
    Format::Gecko,
    Format::Otlp,
];

/// What `kiln runs export` writes: the runs' own file (the default), or one run for the
/// Firefox Profiler with its per-second series and phases beside its samples.
pub const RUN_OUTPUTS: &[Format] = &[Format::RunStore, Format::Gecko];

/// `formats` as `name (.ext, .ext)`, joined: for messages and `--help`.
pub fn list(formats: &[Format]) -> String {
    formats
        .iter()
        .map(|f| {
            let i = f.info();
            if i.extensions.is_empty() {
                i.name.to_string()
            } else {
                format!("{} ({})", i.name, i.extensions.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of `formats`, joined by `, `.
pub fn names(formats: &[Format]) -> String {
    formats
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Recognises a format from the first bytes of an input (64 KiB are plenty); `None` when
/// none matches. Gzip data is reported as [`Format::Pprof`] only when what it inflates
/// to is (see [`read`], which inflates first).
///
/// The table's marks first (perf.data, kiln's own files, SQLite, binary pprof), then the
/// text formats by their first lines, then pprof without control characters.
pub fn sniff(head: &[u8]) -> Option<Format> {
    if let Some(f) = FORMATS.iter().find(|f| f.magic.is_some_and(|m| m(head))) {
        return Some(f.format);
    }
    match detect::detect(head) {
        Some(f) => Some(f),
        None if pprof::sniff(head) => Some(Format::Pprof),
        None => None,
    }
}

/// Control characters other than whitespace mean binary data: pprof is tried before any
/// text format (a protobuf message can pass for a few malformed folded lines).
fn binary(head: &[u8]) -> bool {
    head.iter()
        .any(|&b| b < 0x09 || (0x0e..0x20).contains(&b) && b != 0x1b)
}

/// The format an output asks for, among the formats `among` that a command writes:
/// `forced` (`--output-format`) wins; else `path`'s extension (the longest that matches);
/// else, for standard output (`None` or `-`) or a name without any extension (a FIFO,
/// `/dev/stdout`), the command's `default`. An extension none of `among` has is an error
/// listing them.
pub fn output_format(
    path: Option<&Path>,
    forced: Option<&str>,
    among: &[Format],
    default: Option<Format>,
) -> Result<Format, FormatError> {
    if let Some(f) = forced {
        return Format::by_name(f, among);
    }
    let shown = path.map_or_else(|| "<stdout>".to_string(), |p| p.display().to_string());
    let unknown = || FormatError::UnknownOutput {
        path: shown.clone(),
        formats: list(among),
    };
    let name = match path {
        Some(p) if p != Path::new("-") => p
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default(),
        _ => return default.ok_or_else(unknown),
    };
    if !name.trim_start_matches('.').contains('.') {
        return default.ok_or_else(unknown);
    }
    // The longest matching extension decides; several formats with it are ambiguous.
    let mut best: Vec<Format> = Vec::new();
    let mut best_len = 0;
    for &f in among {
        for ext in f.info().extensions {
            if name.ends_with(ext) && name.len() > ext.len() {
                if ext.len() > best_len {
                    best_len = ext.len();
                    best.clear();
                }
                if ext.len() == best_len && !best.contains(&f) {
                    best.push(f);
                }
            }
        }
    }
    match best.as_slice() {
        [f] => Ok(*f),
        [] => Err(unknown()),
        many => Err(FormatError::Ambiguous {
            path: shown.clone(),
            candidates: names(many),
        }),
    }
}

/// The text format an input's name says (`.perf`, `.folded`), when only one does: for
/// inputs whose content matches no format. Binary formats are always known by content.
pub(crate) fn input_format_by_name(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let mut found = FORMATS.iter().filter(|f| {
        matches!(f.reader, Some(Reader::Text { .. }))
            && f.extensions
                .iter()
                .any(|e| name.ends_with(e) && name.len() > e.len())
    });
    match (found.next(), found.next()) {
        (Some(f), None) => Some(f.format),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_by_longest_extension() {
        let all: Vec<Format> = FORMATS
            .iter()
            .filter(|f| f.writer.is_some())
            .map(|f| f.format)
            .collect();
        let of = |p: &str| output_format(Some(Path::new(p)), None, PROFILE_OUTPUTS, None);
        assert_eq!(of("x.pb.gz").unwrap(), Format::Pprof);
        assert_eq!(of("x.pb").unwrap(), Format::Pprof);
        assert_eq!(of("X.PPROF").unwrap(), Format::Pprof);
        assert_eq!(of("x.folded").unwrap(), Format::Folded);
        assert_eq!(of("x.kiln").unwrap(), Format::Native);
        assert_eq!(of("x.otlp.pb").unwrap(), Format::Otlp);
        assert_eq!(of("x.OTLP.PB").unwrap(), Format::Otlp);
        let e = of("x.png").unwrap_err().to_string();
        assert!(
            e.contains("folded (.folded, .txt)") && e.contains("pprof (.pb.gz"),
            "{e}"
        );
        let e = output_format(Some(Path::new("x.txt")), None, &all, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("folded, text"), "{e}");
        assert_eq!(
            output_format(Some(Path::new("x.txt")), Some("text"), &all, None).unwrap(),
            Format::Text
        );
        let e = output_format(Some(Path::new("x")), Some("gif"), PROFILE_OUTPUTS, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown format 'gif'"), "{e}");
        assert!(of(".pb").is_err(), "a bare extension is no file name");
        assert!(of("x").is_err(), "no default");
        let def = Some(Format::Folded);
        for p in [None, Some(Path::new("-")), Some(Path::new("/tmp/pipe"))] {
            assert_eq!(
                output_format(p, None, PROFILE_OUTPUTS, def).unwrap(),
                Format::Folded
            );
        }
        assert!(output_format(Some(Path::new("x.png")), None, PROFILE_OUTPUTS, def).is_err());
    }

    #[test]
    fn per_event_paths_keep_the_whole_extension() {
        let p = |b: &str, f| per_event_path(Path::new(b), f, "cpu-clock:ppp");
        assert_eq!(
            p("d/cpu.pb.gz", Format::Pprof),
            Path::new("d/cpu.cpu-clock_ppp.pb.gz")
        );
        assert_eq!(
            p("out.svg", Format::Svg),
            Path::new("out.cpu-clock_ppp.svg")
        );
        assert_eq!(p("out", Format::Folded), Path::new("out.cpu-clock_ppp"));
    }

    #[test]
    fn input_names_only_for_text() {
        assert_eq!(
            input_format_by_name(Path::new("a/x.perf")),
            Some(Format::PerfScript)
        );
        assert_eq!(
            input_format_by_name(Path::new("x.FOLDED")),
            Some(Format::Folded)
        );
        assert_eq!(input_format_by_name(Path::new("x.pb.gz")), None);
        assert_eq!(input_format_by_name(Path::new("x")), None);
    }

    #[test]
    fn sniffs_content() {
        assert_eq!(sniff(b"PERFILE2...."), Some(Format::PerfData));
        assert_eq!(sniff(b"KILNPROF\x02"), Some(Format::Native));
        assert_eq!(sniff(b"SQLite format 3\0"), Some(Format::RunStore));
        assert_eq!(sniff(b"a;b 1\n"), Some(Format::Folded));
        assert_eq!(sniff(b"\x0a\x04\x08\x01\x10\x02"), Some(Format::Pprof));
        // Go writes time_nanos first.
        assert_eq!(
            sniff(b"\x48\xad\xaa\xe5\xa1\x94\xd4\xae\xf5\x18\x0a\x04\x08\x01\x10\x02"),
            Some(Format::Pprof)
        );
        for text in [
            &b"HTTP;handler 5\n"[..],
            b"main;run 12\nmain;idle 3\n",
            b"\nswapper     0 [000] 158665.570607: cpu-clock: \n  ffff f (k)\n",
            b"Attaching 1 probe...\n@[\n",
        ] {
            assert_ne!(sniff(text), Some(Format::Pprof), "{text:?}");
        }
        assert_eq!(sniff(b"\n\nhello world\n"), None);
        assert_eq!(sniff(b"hello world\n"), None);
    }

    #[test]
    fn names_parse_through_the_table() {
        assert_eq!("perf-script".parse::<Format>().unwrap(), Format::PerfScript);
        assert_eq!("BCC".parse::<Format>().unwrap(), Format::Folded);
        assert_eq!("fxprof".parse::<Format>().unwrap(), Format::Gecko);
        let e = "gif".parse::<Format>().unwrap_err().to_string();
        assert!(
            e.contains("unknown format 'gif'") && e.contains("bpftrace"),
            "{e}"
        );
    }

    #[test]
    fn the_profile_outputs_are_the_formats_this_crate_writes() {
        let written: Vec<Format> = FORMATS
            .iter()
            .filter(|f| matches!(f.writer, Some(Writer::Profiles(_))))
            .map(|f| f.format)
            .collect();
        assert_eq!(written, PROFILE_OUTPUTS);
        let text: Vec<Format> = FORMATS
            .iter()
            .filter(|f| matches!(f.reader, Some(Reader::Text { .. })))
            .map(|f| f.format)
            .collect();
        assert_eq!(text, [Format::PerfScript, Format::Folded, Format::Bpftrace]);
    }

    #[test]
    fn every_format_once_with_distinct_names() {
        let mut seen = std::collections::HashSet::new();
        for f in FORMATS {
            assert!(seen.insert(f.name), "{} twice", f.name);
            for a in f.aliases {
                assert!(seen.insert(a), "{a} twice");
            }
            assert_eq!(f.format.info().name, f.name);
        }
    }
}
