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

    /// Keep only samples carrying the label KEY=VALUE (pprof labels, such as Go's
    /// pprof.Do labels, or a heap sample's bytes=1024); repeatable: all must hold.
    /// Example: --focus-label handler=query
    #[arg(long, value_name = "KEY=VALUE")]
    pub focus_label: Vec<String>,

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

    /// Count each sample once instead of summing its weight: mmap's calls instead of
    /// their bytes, off-CPU blocks instead of their time, perf samples instead of their
    /// periods (nanoseconds for cpu-clock, as stackcollapse-perf.pl and inferno weigh by
    /// default). Labels follow (calls, blocks, samples).
    /// Example: kiln flamegraph --event-filter mmap --count-samples run:before -o calls.svg
    #[arg(long)]
    pub count_samples: bool,

    /// Leave out off-CPU time of runtimes' idle threads waiting for work (the BEAM's
    /// idle schedulers, aux and poller threads; Go's idle Ms and sysmon): what is left
    /// is waiting in the work (locks, I/O, sleeps, polls). The time left out is counted
    /// and reported. Example: kiln flamegraph --event-filter offcpu --drop-idle run:before -o off.html
    #[arg(long)]
    pub drop_idle: bool,
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
            count_samples: self.count_samples,
            drop_idle: self.drop_idle,
            focus_labels: self
                .focus_label
                .iter()
                .map(|l| {
                    kiln_model::LabelMatch::parse(l)
                        .with_context(|| format!("Invalid --focus-label '{l}': expected KEY=VALUE"))
                })
                .collect::<Result<_>>()?,
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
            let mut file = kiln_os::io::AtomicFile::create(p)
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
        if kiln_os::io::same_file(out, input) {
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
        && kiln_formats::sniff(&head) == Some(kiln_formats::Format::Folded)
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
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// Input format: perf (perf script text), folded (or bcc), bpftrace. Default:
    /// detected from the content. Binary inputs are always recognised by their content:
    /// perf.data, kiln's .kiln profiles, exported runs, pprof (gzipped or not); gzipped
    /// text is inflated first. --event-filter picks one of several events.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// pprof input: the sample type to read (alloc_space, inuse_objects, contentions,
    /// delay...). Default: the one `go tool pprof` shows (the file's default, else the
    /// last).
    #[arg(long, value_name = "TYPE")]
    pub sample_type: Option<String>,

    /// Keep only samples of EVENT, for inputs that hold several (perf script text,
    /// perf.data, kiln's profiles, stored runs). Default: the first event in the input, as
    /// stackcollapse-perf.pl does; the others are counted as skipped.
    /// Example: --event-filter offcpu
    #[arg(long, value_name = "EVENT")]
    pub event_filter: Option<String>,

    /// Treat malformed input as an error (exit 1) instead of a counted warning.
    #[arg(long)]
    pub strict: bool,

    /// Do not print the summary of samples read, kept and skipped (warnings still print).
    #[arg(short, long)]
    pub quiet: bool,

    /// The most bytes one input may be read whole as or inflate to: `--max-input`, a
    /// global flag the command sets here.
    #[arg(skip = kiln_model::input::DEFAULT_LIMIT)]
    pub max_input: u64,
}

/// Collapses one input into profiles, printing warnings and (unless quiet) the summary.
///
/// The format is recognised from the content (the one table, `kiln_formats`); `run:REF`
/// names a stored run. `perf script` text and folded stacks are streamed in blocks
/// (memory stays small whatever their size); other formats are read whole. `keep_order` keeps folded lines in
/// input order (flame charts).
pub fn collapse_input(
    path: Option<&Path>,
    args: &InputArgs,
    perf: kiln_collapse::perf::PerfOptions,
    always_summarise: bool,
    keep_order: bool,
) -> Result<kiln_collapse::Collapsed> {
    let mut perf = perf;
    if perf.event_filter.is_none() {
        perf.event_filter = args.event_filter.clone();
    }
    if let Some(r) = path.and_then(|p| super::store::run_input(p, args.max_input)) {
        let (name, profiles) = r?;
        let c = kiln_formats::pick_stored(&name, profiles, perf.event_filter.as_deref())?;
        report(&name, &c, args.quiet, always_summarise);
        return Ok(c);
    }
    let text_formats = [
        kiln_formats::Format::PerfScript,
        kiln_formats::Format::Folded,
        kiln_formats::Format::Bpftrace,
    ];
    let format = args
        .format
        .as_deref()
        .map(|f| kiln_formats::Format::by_name(f, &text_formats))
        .transpose()?;
    let opts = kiln_formats::ReadOptions {
        format,
        collapse: kiln_collapse::Options {
            strict: args.strict,
            perf,
            keep_order,
            ..Default::default()
        },
        sample_type: args.sample_type.clone(),
        files: Some(std::sync::Arc::new(kiln_run::FileReaders)),
        max_input: args.max_input,
    };
    let r = kiln_formats::read(path, &opts)?;
    let name = match path {
        Some(p) if p != Path::new("-") => p.display().to_string(),
        _ => "<stdin>".to_string(),
    };
    if r.format != kiln_formats::Format::Pprof && args.sample_type.is_some() {
        eprintln!("warning: {name}: --sample-type applies to pprof input; ignored");
    }
    // Warnings and notes quote the input (a malformed line, a pprof's comments): shown
    // escaped.
    for w in &r.warnings {
        eprintln!("warning: {}", shown(w));
    }
    if !args.quiet {
        for n in &r.notes {
            eprintln!("note: {}", shown(n));
        }
    }
    report(&name, &r.collapsed, args.quiet, always_summarise);
    Ok(r.collapsed)
}

/// Prints warnings and the summary of a collapse to stderr.
pub fn report(name: &str, c: &kiln_collapse::Collapsed, quiet: bool, always: bool) {
    for w in &c.warnings {
        eprintln!("warning: {}", shown(&w.to_string()));
    }
    let listed = c.warnings.len() as u64;
    if c.stats.warnings > listed {
        eprintln!(
            "warning: {name}: {} more malformed lines not shown",
            c.stats.warnings - listed
        );
    }
    let eventful = c.stats.skipped_total() > 0 || c.stats.warnings > 0;
    if !quiet && (always || eventful) {
        eprintln!(
            "{name}: {}",
            kiln_model::text::clean_lines(&c.stats.to_string())
        );
    }
}

/// A message that quotes outside text (a file's lines, a server's words, stored names),
/// as a terminal may show it: [`kiln_model::text`]'s escapes, cut to a few hundred
/// characters.
pub fn shown(message: &str) -> std::borrow::Cow<'_, str> {
    kiln_model::text::clean_cut(message, 2 * kiln_model::text::MAX_SHOWN)
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
        if st.idle.0 > 0 {
            parts.push(format!(
                "{} of idle waiting by --drop-idle ({} of {})",
                st.idle.0,
                p.event.quantity().format_value(st.idle.1 as f64),
                p.event.name
            ));
        }
        if st.unfocused.0 > 0 {
            parts.push(format!("{} outside --focus", st.unfocused.0));
        }
        if st.unlabeled.0 > 0 {
            parts.push(format!(
                "{} without the --focus-label labels",
                st.unlabeled.0
            ));
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

/// `--otlp-endpoint`: the profiles sent to an OpenTelemetry collector as well.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OtlpArgs {
    /// Also send the profiles to an OpenTelemetry collector's OTLP/HTTP receiver (the
    /// profiles signal of opentelemetry-proto v1.8.0, development status; the Collector
    /// takes it with --feature-gates=service.profilesSupport): a base URL such as
    /// http://127.0.0.1:4318, to which /v1development/profiles is added, or the full URL of
    /// the profiles endpoint. Without -o nothing is written to standard output. If the
    /// collector does not take them, the request is kept in ./kiln-unsent-*.otlp.pb.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

impl OtlpArgs {
    /// Checks the URL before any work is done.
    pub fn check(&self) -> Result<()> {
        if let Some(url) = &self.otlp_endpoint {
            kiln_formats::otlp::profiles_url(url)
                .map_err(|e| anyhow::anyhow!("Invalid --otlp-endpoint: {e}"))?;
        }
        Ok(())
    }

    /// Whether the profiles go to standard output (no -o, no endpoint).
    pub fn to_stdout(&self, output: Option<&Path>) -> bool {
        self.otlp_endpoint.is_none() && output.is_none_or(|p| p == Path::new("-"))
    }

    /// Sends `profiles` to the endpoint, if one was given, saying on stderr where they went.
    /// When the collector does not take them, the request is kept in a new file
    /// `./kiln-unsent-SECONDS.otlp.pb` (named in the error) so that nothing measured is
    /// lost.
    pub fn send(
        &self,
        command: &str,
        profiles: &[kiln_model::Profile],
        opts: &kiln_formats::otlp::WriteOptions,
    ) -> Result<()> {
        let Some(url) = &self.otlp_endpoint else {
            return Ok(());
        };
        let request = kiln_formats::otlp::encode(profiles, opts);
        match kiln_formats::otlp::send(&request, url, std::time::Duration::from_secs(30)) {
            Ok(sent) => {
                eprintln!(
                    "kiln {command}: {} profile{} ({} bytes) sent to {}",
                    profiles.len(),
                    if profiles.len() == 1 { "" } else { "s" },
                    request.len(),
                    sent.url
                );
                if sent.rejected > 0 || !sent.message.is_empty() {
                    eprintln!(
                        "kiln {command}: warning: the collector rejected {} of them: {}",
                        sent.rejected, sent.message
                    );
                }
                Ok(())
            }
            Err(why) => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let kept = (0..100)
                    .map(|n| {
                        let suffix = if n == 0 {
                            String::new()
                        } else {
                            format!("-{n}")
                        };
                        std::path::PathBuf::from(format!("kiln-unsent-{stamp}{suffix}.otlp.pb"))
                    })
                    .find(|p| std::fs::symlink_metadata(p).is_err());
                let saved = kept.as_ref().and_then(|p| {
                    let mut f = kiln_os::io::AtomicFile::create(p).ok()?;
                    f.write_all(&request).ok()?;
                    f.commit().ok()?;
                    Some(p)
                });
                match saved {
                    Some(p) => anyhow::bail!(
                        "the OTLP export failed: {why}\nThe request is kept in {}; send it later \
                         with: curl --data-binary @{} -H 'Content-Type: application/x-protobuf' {}",
                        p.display(),
                        p.display(),
                        kiln_formats::otlp::profiles_url(url).unwrap_or_else(|_| url.clone())
                    ),
                    None => anyhow::bail!(
                        "the OTLP export failed: {why} (and the request could not be kept in \
                         the working directory)"
                    ),
                }
            }
        }
    }
}
