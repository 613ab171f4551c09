//! Flag groups shared by several subcommands, and their conversion into library options.
use anyhow::{Context, Result};
use kiln_model::transform::{default_merge_rules, regex, MergeRule, Transforms};
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Transforms, available to every command that reads or writes a profile.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Transforms")]
pub struct TransformArgs {
    /// Merge processes/threads whose names differ only by a number (BEAM's `1_scheduler`,
    /// `2_scheduler`…; `pool-1-thread-3`; `worker-12`) into one root frame.
    ///
    /// Replaces `sed -e 's/^[0-9]\+_//' out.folded` in the usual RabbitMQ recipe.
    #[arg(long)]
    pub merge_threads: bool,

    /// A custom thread-merging rule `REGEX=REPLACEMENT` applied to the root frame
    /// (repeatable; implies --merge-threads, and replaces the default rules).
    /// Example: --merge-rule '^([a-z]+)_[0-9]+$=$1'
    #[arg(long, value_name = "REGEX=REPL")]
    pub merge_rule: Vec<String>,

    /// Remove frames matching REGEX; their callees attach to their caller.
    #[arg(long, value_name = "REGEX")]
    pub drop_frames: Option<String>,

    /// Remove whole samples whose stack has a frame matching REGEX (idle loops, sleeps).
    /// Example: --drop-samples '^(cpu_idle|do_idle|schedule)$'
    #[arg(long, value_name = "REGEX")]
    pub drop_samples: Option<String>,

    /// Keep only samples whose stack has a frame matching REGEX.
    #[arg(long, value_name = "REGEX")]
    pub focus: Option<String>,

    /// Make the REGEX options above case-insensitive.
    #[arg(long)]
    pub ignore_case: bool,

    /// Merge directly recursive calls (f;f;f becomes f).
    #[arg(long)]
    pub collapse_recursion: bool,

    /// Remove `+0x1f` offsets from names.
    #[arg(long)]
    pub strip_offsets: bool,

    /// Replace hexadecimal addresses in names by `0x...` (difffolded.pl -s).
    #[arg(long)]
    pub strip_addresses: bool,
}

impl TransformArgs {
    /// The library's transforms for these flags.
    pub fn to_transforms(&self) -> Result<Transforms> {
        let rx = |p: &Option<String>, what: &str| -> Result<_> {
            p.as_deref()
                .map(|p| regex(p, self.ignore_case))
                .transpose()
                .with_context(|| format!("Invalid {what}"))
        };
        let merge_rules = if !self.merge_rule.is_empty() {
            self.merge_rule
                .iter()
                .map(|r| MergeRule::parse(r))
                .collect::<Result<Vec<_>, _>>()
                .context("Invalid --merge-rule")?
        } else if self.merge_threads {
            default_merge_rules()
        } else {
            Vec::new()
        };
        Ok(Transforms {
            merge_rules,
            drop_frames: rx(&self.drop_frames, "--drop-frames")?,
            drop_samples: rx(&self.drop_samples, "--drop-samples")?,
            focus: rx(&self.focus, "--focus")?,
            collapse_recursion: self.collapse_recursion,
            strip_offsets: self.strip_offsets,
            strip_addresses: self.strip_addresses,
        })
    }
}

/// Writes through `f` to `path` atomically, or to stdout (buffered unless a terminal) when
/// `path` is `None` or `-`.
pub fn write_output(
    path: Option<&Path>,
    f: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    match path {
        Some(p) if p != Path::new("-") => {
            let mut file = kiln_model::io::AtomicFile::create(p)
                .with_context(|| format!("Failed to create '{}'", p.display()))?;
            f(&mut file)?;
            file.commit()
                .with_context(|| format!("Failed to write '{}'", p.display()))?;
            Ok(())
        }
        _ => {
            ensure_stdout_open()?;
            let stdout = io::stdout();
            if stdout.is_terminal() {
                let mut lock = stdout.lock();
                f(&mut lock)?;
                lock.flush()?;
            } else {
                let mut w = io::BufWriter::with_capacity(128 * 1024, stdout.lock());
                f(&mut w)?;
                w.flush().context("Failed to write to stdout")?;
            }
            Ok(())
        }
    }
}

/// Refuses an output path that is one of the inputs (same device and inode, links
/// followed): `kiln flamegraph f.folded -o f.folded` would replace the profile with a
/// picture of it. Outputs are completed in a temporary file before they replace anything,
/// so a command that writes the *same* format back (`kiln collapse f.folded -o f.folded`)
/// may; `same_format` says whether this command would, and a note says what happens.
pub fn check_output_not_input(
    output: Option<&Path>,
    inputs: &[Option<&Path>],
    same_format: bool,
) -> Result<()> {
    let Some(out) = output.filter(|p| *p != Path::new("-")) else {
        return Ok(());
    };
    for input in inputs.iter().flatten().filter(|p| **p != Path::new("-")) {
        if kiln_model::io::same_file(out, input) {
            if same_format {
                eprintln!(
                    "note: '{}' is also the input: it is read whole, then replaced by the result",
                    out.display()
                );
            } else {
                anyhow::bail!(
                    "the output '{}' is the input '{}': writing would replace the profile with its result; choose another -o",
                    out.display(),
                    input.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether the file at `path` holds folded stacks (by its first 64 KiB).
pub fn looks_folded(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .is_ok()
        && kiln_collapse::detect(&head) == Some(kiln_collapse::Format::Folded)
}

/// Whether descriptor 1 was closed when kiln started (`>&-`). Rust's runtime puts
/// `/dev/null` in its place before `main`, which then cannot be told from a redirection to
/// `/dev/null` (Python's `subprocess.DEVNULL` and service managers open it read-write, as
/// the runtime does), so it is looked at earlier: from `.init_array`, which the C library
/// runs before the runtime's start-up.
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

#[used]
#[link_section = ".init_array"]
static CHECK_STDOUT_AT_START: extern "C" fn() = check_stdout_at_start;

extern "C" fn check_stdout_at_start() {
    // SAFETY: F_GETFD on a descriptor number only reads kernel state.
    if unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1 {
        STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
    }
}

/// Fails when standard output was closed (`>&-`): data written there would be lost
/// without a word (Rust's runtime gives the closed descriptor `/dev/null`). Call it only
/// where data is about to go to standard output.
pub fn ensure_stdout_open() -> Result<()> {
    if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
        anyhow::bail!("standard output is closed: nowhere to write the data (give -o FILE, or redirect stdout)")
    }
    Ok(())
}

/// Input options shared by commands that read profiler output.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Input format: perf (perf script text), folded, bcc (folded), bpftrace.
    /// Default: detected from the content. perf.data files and kiln's own .kiln profiles
    /// (kiln record -o x.kiln) are always recognised; --event-filter picks one of their
    /// events.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Treat malformed input as an error (exit 1) instead of a counted warning.
    #[arg(long)]
    pub strict: bool,

    /// Do not print the summary of samples read, kept and skipped (warnings still print).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Opens `path`, or stdin for `None`/`-`, returning its display name and a reader.
pub fn open_input(path: Option<&Path>) -> Result<(String, Box<dyn io::Read>)> {
    match path {
        Some(p) if p != Path::new("-") => {
            let f = std::fs::File::open(p)
                .with_context(|| format!("Failed to open '{}'", p.display()))?;
            Ok((p.display().to_string(), Box::new(f)))
        }
        _ => Ok(("<stdin>".to_string(), Box::new(io::stdin()))),
    }
}

/// Collapses one input into profiles, printing warnings and (unless quiet) the summary.
///
/// `perf script` text and folded stacks are streamed in blocks (memory stays small
/// whatever their size); bpftrace output is read whole. `keep_order` keeps folded lines in input order (flame charts).
pub fn collapse_input(
    path: Option<&Path>,
    args: &InputArgs,
    perf: kiln_collapse::perf::PerfOptions,
    always_summarise: bool,
    keep_order: bool,
) -> Result<kiln_collapse::Collapsed> {
    use std::io::Read;
    if let Some(r) = path.and_then(super::store::run_input) {
        let (name, profiles) = r?;
        let c = pick_stored(&name, profiles, &perf)?;
        report(&name, &c, args.quiet, always_summarise);
        return Ok(c);
    }
    let (name, mut reader) = open_input(path)?;
    let mut head = Vec::with_capacity(64 * 1024);
    (&mut reader)
        .take(64 * 1024)
        .read_to_end(&mut head)
        .with_context(|| format!("Failed to read '{name}'"))?;
    if head.starts_with(b"PERFILE2") {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            anyhow::bail!("perf.data input must be given as a file path, not on standard input");
        };
        let c = collapse_perf_data(path, &name, &perf)?;
        report(&name, &c, args.quiet, always_summarise);
        return Ok(c);
    }
    if kiln_store::is_store_file(&head) {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            anyhow::bail!("a stored run must be given as a file path, not on standard input");
        };
        let profiles = super::store::store_file_profiles(path)?;
        let c = pick_stored(&name, profiles, &perf)?;
        report(&name, &c, args.quiet, always_summarise);
        return Ok(c);
    }
    if kiln_model::native::is_native(&head) {
        let mut data = head;
        reader
            .read_to_end(&mut data)
            .with_context(|| format!("Failed to read '{name}'"))?;
        let c = collapse_native(&name, &data, &perf)?;
        report(&name, &c, args.quiet, always_summarise);
        return Ok(c);
    }
    let format = match &args.format {
        Some(f) => f.parse::<kiln_collapse::Format>()?,
        None => match kiln_collapse::detect(&head) {
            Some(f) => f,
            None if head.iter().all(u8::is_ascii_whitespace) => kiln_collapse::Format::Folded,
            None => return Err(kiln_collapse::CollapseError::Undetected(name).into()),
        },
    };
    let opts = kiln_collapse::Options {
        strict: args.strict,
        perf,
        keep_order,
        ..Default::default()
    };
    let read_error = |e| match e {
        kiln_collapse::perf::ReadError::Io(e) => {
            anyhow::Error::new(e).context(format!("Failed to read '{name}'"))
        }
        e => e.into(),
    };
    let c = if format == kiln_collapse::Format::Perf {
        let mut all = io::Cursor::new(head).chain(reader);
        kiln_collapse::perf::collapse_reader(&name, &mut all, &opts).map_err(read_error)?
    } else if format == kiln_collapse::Format::Folded {
        // Streamed too: only each line's frame ids are kept, not the text.
        let mut all = io::Cursor::new(head).chain(reader);
        kiln_collapse::folded::collapse_reader(&name, &mut all, &opts).map_err(read_error)?
    } else {
        let mut data = head;
        reader
            .read_to_end(&mut data)
            .with_context(|| format!("Failed to read '{name}'"))?;
        kiln_collapse::collapse(
            kiln_collapse::Input {
                name: &name,
                data: &data,
            },
            format,
            &opts,
        )?
    };
    report(&name, &c, args.quiet, always_summarise);
    Ok(c)
}

/// Reads a perf.data recording directly (no `perf script`): one profile per event; the
/// one kept is chosen like `perf script` input's (`--event-filter`, else the first), and
/// the others' samples are counted as skipped.
fn collapse_perf_data(
    path: &Path,
    name: &str,
    perf: &kiln_collapse::perf::PerfOptions,
) -> Result<kiln_collapse::Collapsed> {
    if perf.include_pid || perf.include_tid || perf.include_addrs {
        eprintln!("warning: {name}: --pid, --tid and --addrs apply to perf script text, not perf.data; ignored");
    }
    let opts = kiln_record::perf_data::PerfDataOptions {
        naming: kiln_record::NamingOptions {
            annotate_kernel: perf.annotate_kernel,
            annotate_jit: perf.annotate_jit,
        },
        // One rule for perf.data and `perf script` text: periods, or --count-samples.
        count_samples: perf.weight == kiln_collapse::perf::PerfWeight::Samples,
    };
    let (profiles, summary) = kiln_record::perf_data::read_with_summary(path, &opts)
        .with_context(|| format!("Failed to read perf.data file '{name}'"))?;
    for w in &summary.warnings {
        eprintln!("warning: {name}: {w}");
    }
    if summary.lost > 0 {
        eprintln!(
            "warning: {name}: {} records were lost by the kernel during recording",
            summary.lost
        );
    }
    if summary.bad_records > 0 {
        eprintln!(
            "warning: {name}: {} records could not be parsed",
            summary.bad_records
        );
    }
    pick_event(
        name,
        profiles,
        &summary.samples,
        perf.event_filter.as_deref(),
    )
}

/// Reads a native `.kiln` profile file (whole; from a path or standard input): its
/// event is chosen like perf.data's.
fn collapse_native(
    name: &str,
    bytes: &[u8],
    perf: &kiln_collapse::perf::PerfOptions,
) -> Result<kiln_collapse::Collapsed> {
    let profiles = kiln_model::native::decode(bytes, Path::new(name))?;
    let counts: Vec<u64> = profiles.iter().map(|p| p.samples.len() as u64).collect();
    pick_event(name, profiles, &counts, perf.event_filter.as_deref())
}

/// The event of a stored run's profiles that `--event-filter` picks (else the first).
fn pick_stored(
    name: &str,
    profiles: Vec<kiln_model::Profile>,
    perf: &kiln_collapse::perf::PerfOptions,
) -> Result<kiln_collapse::Collapsed> {
    if profiles.is_empty() {
        anyhow::bail!("'{name}' has no profile (the run recorded nothing)");
    }
    let counts: Vec<u64> = profiles.iter().map(|p| p.samples.len() as u64).collect();
    pick_event(name, profiles, &counts, perf.event_filter.as_deref())
}

/// Keeps the profile of one event of a multi-event input (`filter`: an event name, or
/// its category before `:`; else the first) and counts the others' samples as skipped.
fn pick_event(
    name: &str,
    mut profiles: Vec<kiln_model::Profile>,
    counts: &[u64],
    filter: Option<&str>,
) -> Result<kiln_collapse::Collapsed> {
    use kiln_collapse::{Collapsed, SkipReason, Stats};
    let matches = |e: &str, f: &str| {
        e == f || e.split(':').next() == Some(f) || e.strip_suffix(":ppp") == Some(f)
    };
    let chosen = match filter {
        Some(f) => profiles
            .iter()
            .position(|p| matches(&p.event.name, f))
            .with_context(|| {
                let names: Vec<_> = profiles.iter().map(|p| p.event.name.as_str()).collect();
                format!("'{name}' has no event '{f}' (it has: {})", names.join(", "))
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
        kiln_model::Profile::default()
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

/// Prints warnings and the summary of a collapse to stderr.
pub fn report(name: &str, c: &kiln_collapse::Collapsed, quiet: bool, always: bool) {
    for w in &c.warnings {
        eprintln!("warning: {w}");
    }
    let shown = c.warnings.len() as u64;
    if c.stats.warnings > shown {
        eprintln!(
            "warning: {name}: {} more malformed lines not shown",
            c.stats.warnings - shown
        );
    }
    let eventful = c.stats.skipped_total() > 0 || c.stats.warnings > 0;
    if !quiet && (always || eventful) {
        eprintln!("{name}: {}", c.stats);
    }
}

/// Applies transforms, reporting what they removed.
pub fn apply_transforms(
    p: kiln_model::Profile,
    t: &Transforms,
    quiet: bool,
) -> kiln_model::Profile {
    if t.is_identity() {
        return p;
    }
    let (q, st) = t.apply(&p);
    if !quiet && st.removed() > 0 {
        let mut parts = Vec::new();
        if st.dropped.0 > 0 {
            parts.push(format!("{} by --drop-samples", st.dropped.0));
        }
        if st.unfocused.0 > 0 {
            parts.push(format!("{} outside --focus", st.unfocused.0));
        }
        if st.emptied.0 > 0 {
            parts.push(format!(
                "{} left with no frame by --drop-frames",
                st.emptied.0
            ));
        }
        eprintln!(
            "transforms removed {} samples: {}",
            st.removed(),
            parts.join(", ")
        );
    }
    q
}
