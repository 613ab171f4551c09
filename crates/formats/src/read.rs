//! Reading one input: its format recognised (content first), read whole within the input
//! limit or streamed, one profile picked from inputs that hold several.
use crate::{
    compressed, input_format_by_name, list, names, otlp, pprof, readable, sniff, Format,
    FormatError, Reader, StreamReader,
};
use kiln_collapse::{Collapsed, SkipReason, Stats};
use kiln_model::Profile;
use std::io::Read;
use std::path::Path;
/// How to read an input.
#[derive(Clone, Debug)]
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
    /// The most bytes the input may be read whole as or inflate to (`--max-input`;
    /// [`kiln_model::input::DEFAULT_LIMIT`] by default).
    pub max_input: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            collapse: Default::default(),
            sample_type: None,
            files: None,
            max_input: kiln_model::input::DEFAULT_LIMIT,
        }
    }
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
    /// an error, and so is a blob inflating past `max_input` bytes (the input limit).
    fn run_store(&self, path: &Path, max_input: u64) -> Result<Vec<Profile>, BoxError>;
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
/// ([`ReadOptions::max_input`]). Gzip and zstd data are inflated on the way, within
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
        let mut inflated = compressed::decoder(codec, raw, &name, opts.max_input)?;
        head = head_of(&mut inflated).map_err(|e| compressed::error(&name, codec, e, 0))?;
        reader = Box::new(inflated);
    }
    let read_rest = |reader: Box<dyn Read>, head: Vec<u8>| {
        // An input read whole is held to the limit too (inflated data already is).
        let mut reader: Box<dyn Read> = match codec {
            Some(_) => reader,
            None => Box::new(
                kiln_model::input::Bounded::new(reader, opts.max_input, &name, "the input")
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
    let how = format.and_then(|f| f.info().reader.map(|r| (f, r)));
    match how {
        Some((f, Reader::File(_))) if codec.is_some() => Err(FormatError::Malformed {
            name: name.clone(),
            format: f.name(),
            why: format!(
                "it is {}-compressed: kiln reads {} files as they are; decompress it first",
                codec.map_or("", |c| c.name()),
                f.name()
            ),
        }),
        Some((_, Reader::File(read_file))) => read_file(path.filter(|_| !is_stdin), &name, opts),
        Some((
            f,
            Reader::Text {
                stream: Some(stream),
                ..
            },
        )) if !matches!(sniffed, Some(Format::Native | Format::Pprof)) => {
            let mut all = std::io::Cursor::new(head).chain(reader);
            read_streamed(f, stream, &name, &mut all, codec, opts)
        }
        // Content that is no format kiln reads stops here, after its first 64 KiB.
        None if format.is_none() && !head.iter().all(u8::is_ascii_whitespace) => {
            Err(FormatError::Undetected {
                name: name.clone(),
                formats: list(&readable()),
            })
        }
        _ => read_bytes(&name, read_rest(reader, head)?, opts),
    }
}

/// Reads a text format in blocks as it arrives: only what each sample's stack needs is
/// kept.
fn read_streamed(
    f: Format,
    stream: StreamReader,
    name: &str,
    input: &mut dyn Read,
    codec: Option<compressed::Codec>,
    opts: &ReadOptions,
) -> Result<ReadResult, FormatError> {
    let c = stream(name, input, &opts.collapse).map_err(|e| match e {
        kiln_collapse::perf::ReadError::Io(e) => match codec {
            Some(c) => compressed::error(name, c, e, 0),
            None => FormatError::Io {
                name: name.to_string(),
                source: e,
            },
        },
        kiln_collapse::perf::ReadError::Collapse(e) => FormatError::Collapse(e),
        e => FormatError::Malformed {
            name: name.to_string(),
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
    let (collapsed, notes) = match format.info().reader {
        Some(Reader::Bytes(read)) => read(name, &data, opts)?,
        Some(Reader::Text { collapse, .. }) => {
            let input = kiln_collapse::Input { name, data: &data };
            (collapse(input, &opts.collapse)?, Vec::new())
        }
        Some(Reader::File(_)) => {
            return Err(FormatError::NeedsPath {
                format: format.name(),
            })
        }
        None => {
            return Err(FormatError::NotHere {
                what: format!("the input '{name}'"),
                format: format.name(),
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

/// kiln's native profile: one profile per event, the one kept chosen like `perf script`
/// input's.
pub(crate) fn read_native(
    name: &str,
    data: &[u8],
    opts: &ReadOptions,
) -> Result<(Collapsed, Vec<String>), FormatError> {
    let filter = opts.collapse.perf.event_filter.as_deref();
    let profiles = kiln_model::native::decode(data, Path::new(name))?;
    let counts: Vec<u64> = profiles.iter().map(|p| p.samples.len() as u64).collect();
    Ok((pick(name, profiles, &counts, filter, "event")?, Vec::new()))
}

/// pprof: the sample type asked for (or the file's default), notes on the others and on
/// zero-valued samples.
pub(crate) fn read_pprof(
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
    let (d, chosen) = pprof::decode_chosen(name, data, opts.max_input, &choose).map_err(|e| match e {
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

/// perf.data, read directly (no `perf script`) from its file: one profile per event, the
/// one kept chosen like `perf script` input's.
pub(crate) fn read_perf_data(
    path: Option<&Path>,
    name: &str,
    opts: &ReadOptions,
) -> Result<ReadResult, FormatError> {
    let path = path.ok_or(FormatError::NeedsPath {
        format: "perf.data",
    })?;
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

/// An exported run (or a store file), from its file: its latest run, or group of
/// `--repeat` runs, with one profile per event, repeats merged.
pub(crate) fn read_store_file(
    path: Option<&Path>,
    name: &str,
    opts: &ReadOptions,
) -> Result<ReadResult, FormatError> {
    let path = path.ok_or(FormatError::NeedsPath {
        format: "a stored run",
    })?;
    let files = opts.files.as_ref().ok_or(FormatError::NoReader {
        name: name.to_string(),
        format: "a kiln run store",
    })?;
    let merged = files
        .run_store(path, opts.max_input)
        .map_err(|source| FormatError::Store {
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
