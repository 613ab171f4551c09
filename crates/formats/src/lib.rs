//! # kiln-formats: one table of profile formats in and out
//!
//! Every kiln command that reads a profile detects its format here, from its content
//! (and, for outputs, from `-o`'s extension or `--output-format`), and every reader and
//! writer is reached through [`FORMATS`]:
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
//!   extensions, whether kiln reads and writes it, and what it is. Errors for unknown or
//!   ambiguous formats list the formats a command takes from that table; `--help` texts
//!   are written from it too ([`names`]).
//! * **Content first.** Inputs are recognised by their first bytes: `PERFILE2`
//!   (perf.data), `KILNPROF` (kiln's native profiles), SQLite's header (an exported run),
//!   gzip and zstd (inflated, then recognised again from the inflated stream's first
//!   bytes: pprof files, compressed text; see [`compressed`]), pprof's first protobuf
//!   field, and the text formats by their first lines.
//! * **Bounded.** What is inflated or read whole is held to the input limit
//!   ([`kiln_model::input`], `--max-input`); text formats are streamed. An extension never
//!   overrides content; it names the text format of content that matches none.
//! * **Outputs by extension.** The longest extension that matches wins
//!   (`x.speedscope.json` is speedscope, `x.otlp.pb` OTLP, `x.pb` pprof); a command
//!   accepts only the outputs it can make, and says which.
//! * **Nothing silent.** Readers return what they read, kept and skipped
//!   ([`kiln_collapse::Stats`]) and notes for what a reader must know.
#![deny(missing_docs)]

pub mod compressed;
pub mod gecko;
pub mod otlp;
pub mod pprof;
pub mod speedscope;

use kiln_collapse::{Collapsed, SkipReason, Stats};
use kiln_model::Profile;
use std::io::Read;
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
    /// kiln reads it.
    pub read: bool,
    /// kiln writes it.
    pub write: bool,
    /// One file holds several profiles (events, threads); otherwise a command writing
    /// several events writes one file per event.
    pub multi: bool,
    /// What it is, in a few words.
    pub about: &'static str,
}

/// Every format, once.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::PerfScript,
        name: "perf",
        aliases: &["perf-script"],
        extensions: &[".perf", ".perf-script"],
        read: true,
        write: false,
        multi: false,
        about: "the text of perf script",
    },
    FormatInfo {
        format: Format::Folded,
        name: "folded",
        aliases: &["bcc"],
        extensions: &[".folded", ".txt"],
        read: true,
        write: true,
        multi: false,
        about: "folded stacks, one `frame;frame;frame count` per line",
    },
    FormatInfo {
        format: Format::Bpftrace,
        name: "bpftrace",
        aliases: &[],
        extensions: &[],
        read: true,
        write: false,
        multi: false,
        about: "bpftrace and bcc map dumps with multi-line stacks",
    },
    FormatInfo {
        format: Format::PerfData,
        name: "perf.data",
        aliases: &["perf-data"],
        extensions: &[".data"],
        read: true,
        write: false,
        multi: true,
        about: "perf record's binary recording",
    },
    FormatInfo {
        format: Format::Native,
        name: "kiln",
        aliases: &["native"],
        extensions: &[".kiln"],
        read: true,
        write: true,
        multi: true,
        about: "kiln's native profile: every event, timestamps, threads",
    },
    FormatInfo {
        format: Format::RunStore,
        name: "store",
        aliases: &["run"],
        extensions: &[".db"],
        read: true,
        write: false,
        multi: true,
        about: "a kiln run store or exported run (its latest run)",
    },
    FormatInfo {
        format: Format::Pprof,
        name: "pprof",
        aliases: &["pb", "proto"],
        extensions: &[".pb.gz", ".pprof", ".pprof.gz", ".pb"],
        read: true,
        write: true,
        multi: false,
        about: "pprof's profile.proto (Go), gzipped or not",
    },
    FormatInfo {
        format: Format::Speedscope,
        name: "speedscope",
        aliases: &[],
        extensions: &[".speedscope.json"],
        read: false,
        write: true,
        multi: true,
        about: "speedscope's file format, one sampled profile per thread",
    },
    FormatInfo {
        format: Format::Gecko,
        name: "gecko",
        aliases: &["firefox", "fxprof"],
        extensions: &[".gecko.json"],
        read: false,
        write: true,
        multi: true,
        about: "the Firefox Profiler's processed format, per-thread samples with timestamps",
    },
    FormatInfo {
        format: Format::Otlp,
        name: "otlp",
        aliases: &["otlp-profiles"],
        extensions: &[".otlp.pb"],
        read: false,
        write: true,
        multi: true,
        about: "OpenTelemetry profiles: an ExportProfilesServiceRequest of opentelemetry-proto v1.8.0 (profiles/v1development, development status)",
    },
    FormatInfo {
        format: Format::Svg,
        name: "svg",
        aliases: &[],
        extensions: &[".svg"],
        read: false,
        write: true,
        multi: false,
        about: "an SVG flame graph",
    },
    FormatInfo {
        format: Format::Html,
        name: "html",
        aliases: &["viewer"],
        extensions: &[".html", ".htm"],
        read: false,
        write: true,
        multi: false,
        about: "kiln's one-file HTML viewer",
    },
    FormatInfo {
        format: Format::Text,
        name: "text",
        aliases: &["txt"],
        extensions: &[".txt"],
        read: false,
        write: true,
        multi: false,
        about: "a table as text",
    },
    FormatInfo {
        format: Format::Markdown,
        name: "markdown",
        aliases: &["md"],
        extensions: &[".md", ".markdown"],
        read: false,
        write: true,
        multi: false,
        about: "a table as Markdown",
    },
    FormatInfo {
        format: Format::Json,
        name: "json",
        aliases: &[],
        extensions: &[".json"],
        read: false,
        write: true,
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

/// Every format kiln reads, in table order.
pub fn readable() -> Vec<Format> {
    FORMATS
        .iter()
        .filter(|f| f.read)
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

/// Why a format could not be told, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The content is none of the formats kiln reads.
    #[error("{name}: cannot tell the input format: it is none of {formats}; give --format")]
    Undetected {
        /// The input.
        name: String,
        /// The formats kiln reads.
        formats: String,
    },
    /// A format name that is not in the table (or not one this command takes).
    #[error("unknown format '{given}': expected one of {formats}")]
    UnknownName {
        /// As given.
        given: String,
        /// The formats expected.
        formats: String,
    },
    /// An output file name whose extension says nothing this command writes.
    #[error("cannot tell the output format of '{path}' from its name: this command writes {formats}; use one of their extensions or give --output-format")]
    UnknownOutput {
        /// The file.
        path: String,
        /// The formats the command writes.
        formats: String,
    },
    /// An extension several of the command's formats use.
    #[error("'{path}' could be {candidates}: give --output-format")]
    Ambiguous {
        /// The file.
        path: String,
        /// The formats it could be.
        candidates: String,
    },
    /// A format this command does not take here.
    #[error("{what} cannot be {format}: expected {formats}")]
    NotHere {
        /// What was asked (`the input of kiln diff`).
        what: String,
        /// The format.
        format: &'static str,
        /// What it takes.
        formats: String,
    },
    /// Malformed input in a binary format.
    #[error("{name}: not a valid {format} file: {why}")]
    Malformed {
        /// The input.
        name: String,
        /// The format.
        format: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A binary input on standard input where a file is needed.
    #[error("{format} input must be given as a file path, not on standard input")]
    NeedsPath {
        /// The format.
        format: &'static str,
    },
    /// The input has no profile of the event or sample type asked for.
    #[error("'{name}' has no {what} '{want}' (it has: {have})")]
    NoSuchEvent {
        /// The input.
        name: String,
        /// `event` or `sample type`.
        what: &'static str,
        /// As asked.
        want: String,
        /// What there is.
        have: String,
    },
    /// An input could not be opened.
    #[error("Failed to open '{name}'")]
    Open {
        /// The file.
        name: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing failed.
    #[error("Failed to read or write '{name}'")]
    Io {
        /// The file.
        name: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A text collapser's error.
    #[error(transparent)]
    Collapse(#[from] kiln_collapse::CollapseError),
    /// A native profile's error.
    #[error(transparent)]
    Model(#[from] kiln_model::ModelError),
    /// An input larger than the input limit (`--max-input`).
    #[error(transparent)]
    TooLarge(#[from] kiln_model::input::TooLarge),
    /// perf.data could not be read.
    #[error("Failed to read perf.data file '{name}'")]
    PerfData {
        /// The file.
        name: String,
        /// The error (the recorder's).
        #[source]
        source: BoxError,
    },
    /// An exported run could not be read.
    #[error("Cannot read the stored run '{name}'")]
    Store {
        /// The file.
        name: String,
        /// The error (the store's).
        #[source]
        source: BoxError,
    },
    /// A format whose reader this caller did not give ([`ReadOptions::files`]).
    #[error("'{name}' is {format}, which this program cannot read")]
    NoReader {
        /// The input.
        name: String,
        /// Its format.
        format: &'static str,
    },
}

/// Recognises a format from the first bytes of an input (64 KiB are plenty); `None` when
/// none matches. Gzip data is reported as [`Format::Pprof`] only when what it inflates
/// to is (see [`read`], which inflates first).
pub fn sniff(head: &[u8]) -> Option<Format> {
    if head.starts_with(b"PERFILE2") {
        return Some(Format::PerfData);
    }
    if kiln_model::native::is_native(head) {
        return Some(Format::Native);
    }
    if head.starts_with(SQLITE_HEADER) {
        return Some(Format::RunStore);
    }
    // Control characters other than whitespace mean binary data: pprof before any text
    // format (a protobuf message can pass for a few malformed folded lines).
    let binary = head
        .iter()
        .any(|&b| b < 0x09 || (0x0e..0x20).contains(&b) && b != 0x1b);
    if binary && pprof::sniff(head) {
        return Some(Format::Pprof);
    }
    match kiln_collapse::detect(head) {
        Some(kiln_collapse::Format::Perf) => Some(Format::PerfScript),
        Some(kiln_collapse::Format::Folded) => Some(Format::Folded),
        Some(kiln_collapse::Format::Bpftrace) => Some(Format::Bpftrace),
        _ if pprof::sniff(head) => Some(Format::Pprof),
        _ => None,
    }
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
pub fn input_format_by_name(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let mut found = FORMATS.iter().filter(|f| {
        f.read
            && matches!(
                f.format,
                Format::PerfScript | Format::Folded | Format::Bpftrace
            )
            && f.extensions
                .iter()
                .any(|e| name.ends_with(e) && name.len() > e.len())
    });
    match (found.next(), found.next()) {
        (Some(f), None) => Some(f.format),
        _ => None,
    }
}

/// How to read an input.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// The format, when given (`--format`); otherwise it is recognised from the content.
    pub format: Option<Format>,
    /// The text collapsers' options (strict mode, perf script's options, sample order).
    pub collapse: kiln_collapse::Options,
    /// pprof: the sample type to keep (`--sample-type`); default: the file's default,
    /// as `go tool pprof` picks it. `collapse.perf.event_filter` is used when unset.
    pub sample_type: Option<String>,
    /// The readers of perf.data and of stored runs, which belong to the recorder and the
    /// store: the caller gives them (kiln's command line gives both), so that reading a
    /// folded file or a pprof links neither. Without them such inputs are an error.
    pub files: Option<std::sync::Arc<dyn FileReaders>>,
}

/// An error of a reader this crate does not own.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The first bytes of an SQLite database: a run store, or a run exported as `.kiln`.
pub const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// How perf.data is to be read.
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfDataRequest {
    /// Kernel frames annotated `_[k]` (`--kernel`).
    pub annotate_kernel: bool,
    /// JIT frames annotated `_[j]` (`--jit`).
    pub annotate_jit: bool,
    /// Each sample weighs 1 instead of its period (`--count-samples`).
    pub count_samples: bool,
}

/// What a perf.data reader gives: one profile per event and what it could not read.
#[derive(Debug, Default)]
pub struct PerfDataRead {
    /// One profile per event.
    pub profiles: Vec<Profile>,
    /// Samples read per event (in the order of `profiles`).
    pub samples: Vec<u64>,
    /// What the reader warns about.
    pub warnings: Vec<String>,
    /// Records the kernel lost while recording.
    pub lost: u64,
    /// Records that could not be parsed.
    pub bad_records: u64,
}

/// Readers of the binary inputs whose formats other crates own: perf.data (the recorder)
/// and a run store or an exported run (the store).
pub trait FileReaders: Send + Sync + std::fmt::Debug {
    /// Reads a perf.data file.
    fn perf_data(&self, path: &Path, how: &PerfDataRequest) -> Result<PerfDataRead, BoxError>;
    /// The profiles of a store file's latest run, or group of `--repeat` runs: one per
    /// event, repeats merged; empty when the run recorded none. A store without runs is
    /// an error.
    fn run_store(&self, path: &Path) -> Result<Vec<Profile>, BoxError>;
}

/// What reading one input gave.
#[derive(Debug)]
pub struct ReadResult {
    /// The profile(s) and counts.
    pub collapsed: Collapsed,
    /// The format read.
    pub format: Format,
    /// What the reader must know besides malformed lines (perf.data's lost records, a
    /// pprof's zero-valued samples...).
    pub notes: Vec<String>,
    /// What went wrong without stopping the reading (perf.data's lost records, options
    /// that do not apply): to be shown even when summaries are not.
    pub warnings: Vec<String>,
}

/// Reads one input: a file, or standard input for `None` or `-`.
///
/// `perf script` text and folded stacks are streamed in blocks (memory stays small
/// whatever their size); other formats are read whole, up to the input limit
/// ([`kiln_model::input::limit`]). Gzip and zstd data are inflated on the way, within
/// the same limit.
pub fn read(path: Option<&Path>, opts: &ReadOptions) -> Result<ReadResult, FormatError> {
    let is_stdin = path.is_none_or(|p| p == Path::new("-"));
    let name = match path {
        Some(p) if !is_stdin => p.display().to_string(),
        _ => "<stdin>".to_string(),
    };
    let io = |source| FormatError::Io {
        name: name.clone(),
        source,
    };
    let mut reader: Box<dyn Read> = match path {
        Some(p) if !is_stdin => {
            Box::new(std::fs::File::open(p).map_err(|source| FormatError::Open {
                name: name.clone(),
                source,
            })?)
        }
        _ => Box::new(std::io::stdin()),
    };
    let mut head = head_of(&mut reader).map_err(io)?;
    // Compressed: the inflated stream (bounded by the input limit) is recognised from its
    // own first bytes and read on from there: inflated once, and no further than needed
    // when it holds no profile.
    let codec = compressed::Codec::sniff(&head);
    if let Some(codec) = codec {
        let raw = std::io::Cursor::new(head).chain(reader);
        let mut inflated = compressed::decoder(codec, raw, &name)?;
        head = head_of(&mut inflated).map_err(|e| compressed::error(&name, codec, e, 0))?;
        reader = Box::new(inflated);
    }
    let read_rest = |reader: Box<dyn Read>, head: Vec<u8>| {
        // An input read whole is held to the limit too (inflated data already is).
        let mut reader: Box<dyn Read> = match codec {
            Some(_) => reader,
            None => Box::new(
                kiln_model::input::Bounded::with_limit(reader, &name, "the input")
                    .already_read(head.len() as u64),
            ),
        };
        let mut data = head;
        kiln_model::input::read_to_end(&mut reader, &mut data, &name).map_err(|e| match codec {
            Some(c) => compressed::error(&name, c, e, data.len() as u64),
            None => read_error(&name, e),
        })?;
        Ok::<_, FormatError>(data)
    };
    let sniffed = sniff(&head);
    // Content first; a name only where the content says nothing (`x.perf` of one odd
    // line).
    let by_name = match (opts.format, sniffed, path) {
        (None, None, Some(p)) if !is_stdin => input_format_by_name(p),
        _ => None,
    };
    let named;
    let opts = match by_name {
        Some(f) => {
            named = ReadOptions {
                format: Some(f),
                ..opts.clone()
            };
            &named
        }
        None => opts,
    };
    let format = opts.format.or(sniffed);
    match format {
        Some(f @ (Format::PerfData | Format::RunStore)) if codec.is_some() => {
            Err(FormatError::Malformed {
                name: name.clone(),
                format: f.name(),
                why: format!(
                    "it is {}-compressed: kiln reads {} files as they are; decompress it first",
                    codec.map_or("", |c| c.name()),
                    f.name()
                ),
            })
        }
        Some(Format::PerfData) => {
            let p = path.filter(|_| !is_stdin).ok_or(FormatError::NeedsPath {
                format: "perf.data",
            })?;
            read_perf_data(p, &name, opts)
        }
        Some(Format::RunStore) => {
            let p = path.filter(|_| !is_stdin).ok_or(FormatError::NeedsPath {
                format: "a stored run",
            })?;
            read_store_file(p, &name, opts)
        }
        Some(f @ (Format::PerfScript | Format::Folded))
            if !matches!(sniffed, Some(Format::Native | Format::Pprof)) =>
        {
            // Streamed in blocks: only what each sample's stack needs is kept.
            let mut all = std::io::Cursor::new(head).chain(reader);
            let read = if f == Format::PerfScript {
                kiln_collapse::perf::collapse_reader(&name, &mut all, &opts.collapse)
            } else {
                kiln_collapse::folded::collapse_reader(&name, &mut all, &opts.collapse)
            };
            let c = read.map_err(|e| match e {
                kiln_collapse::perf::ReadError::Io(e) => match codec {
                    Some(c) => compressed::error(&name, c, e, 0),
                    None => io(e),
                },
                kiln_collapse::perf::ReadError::Collapse(e) => FormatError::Collapse(e),
                e => FormatError::Malformed {
                    name: name.clone(),
                    format: f.name(),
                    why: e.to_string(),
                },
            })?;
            Ok(ReadResult {
                collapsed: c,
                format: f,
                notes: Vec::new(),
                warnings: Vec::new(),
            })
        }
        // Content that is no format kiln reads stops here, after its first 64 KiB.
        None if !head.iter().all(u8::is_ascii_whitespace) => Err(FormatError::Undetected {
            name: name.clone(),
            formats: list(&readable()),
        }),
        _ => read_bytes(&name, read_rest(reader, head)?, opts),
    }
}

/// Up to the first 64 KiB of `reader`: what formats are recognised by.
fn head_of(reader: &mut dyn Read) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(64 * 1024);
    reader.take(64 * 1024).read_to_end(&mut head)?;
    Ok(head)
}

fn read_error(name: &str, e: std::io::Error) -> FormatError {
    match kiln_model::input::too_large(&e) {
        Some(t) => FormatError::TooLarge(t.clone()),
        None => FormatError::Io {
            name: name.to_string(),
            source: e,
        },
    }
}

/// Reads an input already in memory (not perf.data or a store, which need a file).
pub fn read_bytes(
    name: &str,
    data: Vec<u8>,
    opts: &ReadOptions,
) -> Result<ReadResult, FormatError> {
    let sniffed = sniff(&data);
    // Content that is surely binary wins over --format (a text format forced on a
    // pprof file would only produce noise).
    let format = match (sniffed, opts.format) {
        (Some(s @ (Format::Native | Format::Pprof | Format::PerfData | Format::RunStore)), _) => s,
        (_, Some(f)) => f,
        (Some(s), None) => s,
        (None, None) if data.iter().all(u8::is_ascii_whitespace) => Format::Folded,
        (None, None) => {
            return Err(FormatError::Undetected {
                name: name.to_string(),
                formats: list(&readable()),
            })
        }
    };
    let filter = opts.collapse.perf.event_filter.as_deref();
    let (collapsed, notes) = match format {
        Format::Native => {
            let profiles = kiln_model::native::decode(&data, Path::new(name))?;
            let counts: Vec<u64> = profiles.iter().map(|p| p.samples.len() as u64).collect();
            (pick(name, profiles, &counts, filter, "event")?, Vec::new())
        }
        Format::Pprof => read_pprof(name, &data, opts)?,
        Format::PerfData | Format::RunStore => {
            return Err(FormatError::NeedsPath {
                format: format.name(),
            })
        }
        Format::PerfScript | Format::Folded | Format::Bpftrace => {
            let f = match format {
                Format::PerfScript => kiln_collapse::Format::Perf,
                Format::Folded => kiln_collapse::Format::Folded,
                _ => kiln_collapse::Format::Bpftrace,
            };
            let c = kiln_collapse::collapse(
                kiln_collapse::Input { name, data: &data },
                f,
                &opts.collapse,
            )?;
            (c, Vec::new())
        }
        other => {
            return Err(FormatError::NotHere {
                what: format!("the input '{name}'"),
                format: other.name(),
                formats: names(&readable()),
            })
        }
    };
    Ok(ReadResult {
        collapsed,
        format,
        notes,
        warnings: Vec::new(),
    })
}

fn read_pprof(
    name: &str,
    data: &[u8],
    opts: &ReadOptions,
) -> Result<(Collapsed, Vec<String>), FormatError> {
    let want = opts
        .sample_type
        .as_deref()
        .or(opts.collapse.perf.event_filter.as_deref());
    let choose = |info: &pprof::PprofInfo| match want {
        None => Ok(info.default_type),
        Some(w) => info
            .sample_types
            .iter()
            .position(|(t, _)| t == w)
            .ok_or_else(|| FormatError::NoSuchEvent {
                name: name.to_string(),
                what: "sample type",
                want: w.to_string(),
                have: info
                    .sample_types
                    .iter()
                    .map(|(t, u)| format!("{t} ({u})"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
    };
    // Only the chosen sample type's profile is built.
    let (d, chosen) = pprof::decode_chosen(name, data, &choose).map_err(|e| match e {
        // OTLP's request passes pprof's first-bytes test but not its decoder.
        FormatError::Malformed { .. } if otlp::looks_like_otlp(data) => FormatError::Malformed {
            name: name.to_string(),
            format: "pprof",
            why: "it is an OTLP profiles request (ExportProfilesServiceRequest), which kiln writes (-o x.otlp.pb) but does not read".into(),
        },
        e => e,
    })?;
    let mut notes = Vec::new();
    if d.info.sample_types.len() > 1 {
        let others: Vec<&str> = d
            .info
            .sample_types
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != chosen)
            .map(|(_, (t, _))| t.as_str())
            .collect();
        notes.push(format!(
            "{name}: sample type '{}' ({}); the file also has {} (choose with --sample-type)",
            d.info.sample_types[chosen].0,
            d.info.sample_types[chosen].1,
            others.join(", ")
        ));
    }
    if d.zero[chosen] > 0 {
        notes.push(format!(
            "{name}: {} samples have no {} (0) and weigh nothing",
            d.zero[chosen], d.info.sample_types[chosen].0
        ));
    }
    let mut profiles = d.profiles;
    let mut stats = d.stats;
    let profile = profiles.swap_remove(chosen);
    let stats = stats.swap_remove(chosen);
    Ok((
        Collapsed {
            profile,
            after: None,
            stats,
            warnings: Vec::new(),
        },
        notes,
    ))
}

/// perf.data, read directly (no `perf script`): one profile per event, the one kept
/// chosen like `perf script` input's.
fn read_perf_data(path: &Path, name: &str, opts: &ReadOptions) -> Result<ReadResult, FormatError> {
    let perf = &opts.collapse.perf;
    let mut warnings = Vec::new();
    if perf.include_pid || perf.include_tid || perf.include_addrs {
        warnings.push(format!(
            "{name}: --pid, --tid and --addrs apply to perf script text, not perf.data; ignored"
        ));
    }
    let files = opts.files.as_ref().ok_or(FormatError::NoReader {
        name: name.to_string(),
        format: "perf.data",
    })?;
    let how = PerfDataRequest {
        annotate_kernel: perf.annotate_kernel,
        annotate_jit: perf.annotate_jit,
        // One rule for perf.data and `perf script` text: periods, or --count-samples.
        count_samples: perf.weight == kiln_collapse::perf::PerfWeight::Samples,
    };
    let summary = files
        .perf_data(path, &how)
        .map_err(|source| FormatError::PerfData {
            name: name.to_string(),
            source,
        })?;
    for w in &summary.warnings {
        warnings.push(format!("{name}: {w}"));
    }
    if summary.lost > 0 {
        warnings.push(format!(
            "{name}: {} records were lost by the kernel during recording",
            summary.lost
        ));
    }
    if summary.bad_records > 0 {
        warnings.push(format!(
            "{name}: {} records could not be parsed",
            summary.bad_records
        ));
    }
    let collapsed = pick(
        name,
        summary.profiles,
        &summary.samples,
        perf.event_filter.as_deref(),
        "event",
    )?;
    Ok(ReadResult {
        collapsed,
        format: Format::PerfData,
        notes: Vec::new(),
        warnings,
    })
}

/// An exported run (or a store file): its latest run, or group of `--repeat` runs, with
/// one profile per event, repeats merged.
fn read_store_file(path: &Path, name: &str, opts: &ReadOptions) -> Result<ReadResult, FormatError> {
    let files = opts.files.as_ref().ok_or(FormatError::NoReader {
        name: name.to_string(),
        format: "a kiln run store",
    })?;
    let merged = files.run_store(path).map_err(|source| FormatError::Store {
        name: name.to_string(),
        source,
    })?;
    let collapsed = pick_stored(name, merged, opts.collapse.perf.event_filter.as_deref())?;
    Ok(ReadResult {
        collapsed,
        format: Format::RunStore,
        notes: Vec::new(),
        warnings: Vec::new(),
    })
}

/// The profile of a stored run's events that `filter` picks (else the first); a run
/// without profiles is an error.
pub fn pick_stored(
    name: &str,
    profiles: Vec<Profile>,
    filter: Option<&str>,
) -> Result<Collapsed, FormatError> {
    if profiles.is_empty() {
        return Err(FormatError::Malformed {
            name: name.to_string(),
            format: "kiln run",
            why: "it has no profile (the run recorded nothing)".into(),
        });
    }
    let counts: Vec<u64> = profiles.iter().map(|p| p.samples.len() as u64).collect();
    pick(name, profiles, &counts, filter, "event")
}

/// Keeps the profile of one event of a multi-event input (`filter`: an event name, or
/// its category before `:`; else the first) and counts the others' samples as skipped.
pub fn pick(
    name: &str,
    mut profiles: Vec<Profile>,
    counts: &[u64],
    filter: Option<&str>,
    what: &'static str,
) -> Result<Collapsed, FormatError> {
    let matches = |e: &str, f: &str| {
        e == f || e.split(':').next() == Some(f) || e.strip_suffix(":ppp") == Some(f)
    };
    let chosen = match filter {
        Some(f) => profiles
            .iter()
            .position(|p| matches(&p.event.name, f))
            .ok_or_else(|| FormatError::NoSuchEvent {
                name: name.to_string(),
                what,
                want: f.to_string(),
                have: profiles
                    .iter()
                    .map(|p| p.event.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
        None => 0,
    };
    let mut stats = Stats::default();
    for (i, n) in counts.iter().enumerate() {
        stats.read += n;
        if i == chosen {
            stats.kept += n;
        } else if *n > 0 {
            let ev = profiles
                .get(i)
                .map_or_else(String::new, |p| p.event.name.clone());
            *stats.skipped.entry(SkipReason::OtherEvent(ev)).or_insert(0) += n;
        }
    }
    let profile = if profiles.is_empty() {
        Profile::default()
    } else {
        profiles.swap_remove(chosen)
    };
    stats.event = Some(profile.event.name.clone());
    Ok(Collapsed {
        profile,
        after: None,
        stats,
        warnings: Vec::new(),
    })
}

/// How to write a profile.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// pprof: when the profile was taken (ns since the Unix epoch; 0: unknown).
    pub time_nanos: i64,
    /// A name for what is written (the input or the run), where a format has a place for
    /// one.
    pub title: Option<String>,
    /// pprof: write the protobuf as it is (`.pb`) instead of gzipped.
    pub uncompressed: bool,
}

/// Writes profiles in a data format (folded, kiln, pprof and the exports; pictures and
/// tables are the commands' own). Formats that hold one profile take the first.
pub fn write(
    profiles: &[Profile],
    format: Format,
    opts: &WriteOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), FormatError> {
    let io = |source| FormatError::Io {
        name: "output".into(),
        source,
    };
    let first = || profiles.first().cloned().unwrap_or_default();
    match format {
        Format::Folded => kiln_model::FoldedWriter::new(kiln_model::FoldedOptions::default())
            .write(&first(), out)
            .map_err(FormatError::Model),
        Format::Native => kiln_model::native::write(profiles, out).map_err(io),
        Format::Pprof => {
            let o = pprof::WriteOptions {
                time_nanos: opts.time_nanos,
                comments: opts.title.iter().cloned().collect(),
            };
            pprof::write(&first(), &o, !opts.uncompressed, out).map_err(io)
        }
        Format::Speedscope => {
            speedscope::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
        }
        Format::Gecko => {
            gecko::write(profiles, opts.title.as_deref().unwrap_or("kiln"), out).map_err(io)
        }
        Format::Otlp => {
            let o = otlp::WriteOptions {
                time_nanos: opts.time_nanos,
                comment: opts.title.clone(),
            };
            otlp::write(profiles, &o, out).map_err(io)
        }
        other => Err(FormatError::NotHere {
            what: "a profile output".into(),
            format: other.name(),
            formats: names(PROFILE_OUTPUTS),
        }),
    }
}

/// The file for one event of several written in a format that holds one profile:
/// `out.svg` → `out.EVENT.svg`, `cpu.pb.gz` → `cpu.EVENT.pb.gz` (the format's extension
/// kept whole; characters other than letters, digits and `-` in the event become `_`).
pub fn per_event_path(base: &Path, format: Format, event: &str) -> std::path::PathBuf {
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let ext_len = format
        .info()
        .extensions
        .iter()
        .filter(|e| lower.ends_with(*e) && lower.len() > e.len())
        .map(|e| e.len())
        .max()
        .or_else(|| lower.rfind('.').filter(|&i| i > 0).map(|i| lower.len() - i))
        .unwrap_or(0);
    let (stem, ext) = name.split_at(name.len() - ext_len);
    let ev: String = event
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    base.with_file_name(format!("{stem}.{ev}{ext}"))
}

/// Whether `path` asks for an uncompressed pprof (`.pb`) rather than gzip.
pub fn pprof_uncompressed(path: &Path) -> bool {
    path.to_string_lossy().to_ascii_lowercase().ends_with(".pb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_by_longest_extension() {
        let all: Vec<Format> = FORMATS
            .iter()
            .filter(|f| f.write)
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
