//! `kiln runs`: list, show, remove, export and import stored runs.
use super::store::{resolve, StoreArgs};
use anyhow::{bail, Context, Result};
use kiln_compare::format_value as fv;
use kiln_model::text;
use kiln_store::{RunMeta, SqliteStore, Store};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Stored runs: list them (the default), show one, remove, export one to a file to share,
/// import such a file.
///
/// A run is named by its id (#12, id:12, or a bare 12: run names cannot be numbers) or by
/// its name (the latest run, or group of --repeat runs, of that name; name:NAME forces a
/// name). Every command that reads a profile also takes a stored run: kiln flamegraph
/// run:before -o before.html.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<RunsCommand>,

    #[command(flatten)]
    pub list: ListArgs,

    #[command(flatten)]
    pub store: StoreArgs,
}

/// `kiln runs` listing options.
#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// Only runs with this name.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Print JSON: an array of one object per run, one per line (metadata and headline
    /// figures; a damaged run: id, name, group, started_unix_ms and `damaged`, what is
    /// wrong). It reads every run's metadata, where the table reads only the line kept
    /// beside each run.
    #[arg(long)]
    pub json: bool,
}

/// `kiln runs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List runs (the default).
    List(ListArgs),
    /// Everything about a run: what ran, headline figures, warnings, series, profiles.
    Show {
        /// The run (id or name), or a window of it: RUN@START-END (seconds from the
        /// start of its measurement, `spin@2.5-9`) or a sweep's step (`sweep@48`), whose
        /// figures, BEAM scheduler states and profiles are the window's.
        run: String,
        /// Print JSON: the metadata and headline figures, and the per-second series
        /// (`series`: each table's `time_ns` and columns of values).
        #[arg(long)]
        json: bool,
    },
    /// Read every run and print one line per damaged run (id, name, what is wrong: metadata
    /// that does not parse, or impossible values such as a NaN or a negative rate); exit 1
    /// when any is damaged. Damaged runs are listed as such by kiln runs and skipped by
    /// every command that does not name them.
    Check,
    /// Remove runs; says which (id and name) it removed.
    Rm {
        /// The runs (#ID, ID or NAME: a name removes its latest group).
        #[arg(required = true)]
        runs: Vec<String>,
    },
    /// Write runs (a name: its latest group) to one self-contained file to share, or one
    /// run for the Firefox Profiler. Example: kiln runs export before --format firefox -o
    /// before.json, then drop before.json on profiler.firefox.com
    Export {
        /// The run (id or name). With --format firefox, a window of it too, RUN@START-END
        /// or a sweep's step (`sweep@48`): the whole run, its measurement marker the
        /// window.
        run: String,
        /// The file to write (conventionally NAME.kiln; `-` for stdout); other kiln
        /// commands read it as a profile, kiln runs import adds it to a store.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// store (the default): the runs' own file. firefox (or gecko; the default for a
        /// name ending in .gecko.json): the run (a name: its latest) in the Firefox
        /// Profiler's processed format: each thread's samples a track, each per-second
        /// series (rates, latency percentiles, target CPU, queue depth) a counter track,
        /// the warm-up, the measurement and sweep steps markers, on one time axis.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
    },
    /// Write a run's report: one offline HTML file with its figures, every series on one
    /// time axis, and its flame graphs; a window dragged on a chart shows its samples.
    /// Example: kiln runs report before -o before.html
    Report {
        /// The run (id or name; a name with --repeat runs: the latest of them), or a
        /// window of it, RUN@START-END (seconds from the start of its measurement) or a
        /// sweep's step (`sweep@48`): the whole run on a page whose measurement, figures
        /// and time axis are the window's.
        run: String,
        /// The HTML file to write (`-` for stdout).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Category rules (CATEGORY = REGEX per line) tried before the built-in BEAM, Go,
        /// JVM and kernel sets in the CPU-by-category charts.
        #[arg(long, value_name = "FILE")]
        categories: Option<PathBuf>,
    },
    /// Write a file kept with a run (a load's output, the target's pprof profiles) to FILE,
    /// or list them (--list). Example: kiln runs attachment go pprof-mutex.pb.gz -o
    /// mutex.pb.gz && go tool pprof -top mutex.pb.gz
    Attachment {
        /// The run (id or name; a name with --repeat runs: the latest of them).
        run: String,
        /// The attachment's name (kiln runs show lists them).
        name: Option<String>,
        /// The file to write (`-` for stdout).
        #[arg(short, long, value_name = "FILE", required_unless_present = "list")]
        output: Option<PathBuf>,
        /// List the run's attachments.
        #[arg(long, conflicts_with_all = ["name", "output"])]
        list: bool,
    },
    /// Add the runs of an exported file (or of a kiln-unsaved-runs.db that kiln run kept
    /// a run in) to the store. Every file is checked first: one that cannot be read
    /// imports nothing and leaves no new store behind.
    Import {
        /// Files written by kiln runs export, or kept by kiln run.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    // Its help is the doc of `trend::Args`.
    Trend(super::trend::Args),
}

/// UTC, to the minute (`2026-11-23 16:18`).
fn date(ms: i64) -> String {
    let mut d = kiln_os::clock::utc_date_time(ms);
    d.truncate(16);
    d
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "-".to_string(), |v| fv(v, unit))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The head of `kiln runs`' table.
const HEAD: [&str; 10] = [
    "id",
    "name",
    "date (UTC)",
    "target",
    "load",
    "rate",
    "p50",
    "p99",
    "cpu/op",
    "status",
];

/// One row of `kiln runs`' table: a run's listing columns (a damaged run: what is kept
/// beside its metadata, and `DAMAGED` as its status).
fn list_row(l: &kiln_store::Listed) -> Vec<String> {
    // Names and command lines come from outside: escaped before they are cut.
    let name = truncate(&text::clean(&l.name), 24);
    if l.damaged.is_some() {
        let dash = || "-".to_string();
        return vec![
            l.id.to_string(),
            name,
            date(l.started_unix_ms),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
            "DAMAGED".into(),
        ];
    }
    vec![
        l.id.to_string(),
        name,
        date(l.started_unix_ms),
        truncate(&text::clean(&l.target), 16),
        truncate(&text::clean(&l.load), 40),
        opt(l.throughput, "/s"),
        opt(l.p50_us, "us"),
        opt(l.p99_us, "us"),
        opt(l.cpu_per_op_us, "us"),
        if l.complete {
            "complete".into()
        } else {
            "incomplete".into()
        },
    ]
}

/// `kiln runs`' table as it is read: each row kept as one string, its cells apart by a
/// unit separator (cells are escaped: none holds one), and the widest cell of each column.
struct Table {
    rows: Vec<String>,
    widths: [usize; HEAD.len()],
}

/// Between the cells of a row of [`Table`].
const SEP: char = '\u{1f}';

impl Table {
    fn new() -> Table {
        let mut t = Table {
            rows: Vec::new(),
            widths: [0; HEAD.len()],
        };
        t.push(HEAD.map(String::from).to_vec());
        t
    }

    fn push(&mut self, cells: Vec<String>) {
        let mut row = String::new();
        for (i, c) in cells.iter().enumerate() {
            self.widths[i] = self.widths[i].max(c.chars().count());
            if i > 0 {
                row.push(SEP);
            }
            row.push_str(c);
        }
        self.rows.push(row);
    }

    fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut line = String::new();
        for r in &self.rows {
            line.clear();
            for (i, c) in r.split(SEP).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(self.widths[i] - c.chars().count());
                // Numbers right-aligned, text left-aligned.
                if i == 0 || (5..=8).contains(&i) {
                    line.push_str(&pad);
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&pad);
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// One line about a damaged run: its id, name and what is wrong (`kiln runs check`, and
/// the warnings under `kiln runs`).
fn damaged_line(id: i64, name: &str, what: &str) -> String {
    format!(
        "run #{id} '{}' is damaged: {}",
        text::clean_cut(name, 80),
        text::clean_cut(what, 2 * text::MAX_SHOWN)
    )
}

/// What `kiln runs show --json` prints of a run: its metadata (as stored) with the
/// per-second series beside it, each table's times and columns as stored (`time_ns` ends of
/// the intervals on the run's CLOCK_MONOTONIC clock, `measure` being on the same clock),
/// and its findings (`findings`, ranked; `finding_limits`: what the run lacked to tell more).
fn show_json(run: &kiln_store::RunData) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(&run.meta)?;
    let found = kiln_findings::analyse(run, None);
    if let Some(o) = v.as_object_mut() {
        o.insert("series".into(), serde_json::to_value(&run.series)?);
        o.insert("findings".into(), serde_json::to_value(&found.findings)?);
        o.insert(
            "finding_limits".into(),
            serde_json::to_value(&found.limits)?,
        );
        // A sweep's steps as its table gives them (those cut short marked), its knee.
        if let Some(sw) = kiln_compare::sweep::sweep(run, &Default::default(), 0) {
            o.insert("sweep".into(), serde_json::to_value(&sw)?);
        }
    }
    Ok(v)
}

fn show(store: &dyn Store, reference: &str, json: bool) -> Result<String> {
    let mut out = String::new();
    // A window (`run@10-20`, a sweep's step) comes with its figures and its samples.
    for run in super::store::resolve_data(store, reference)? {
        let m = &run.meta;
        if json {
            out.push_str(&serde_json::to_string_pretty(&show_json(&run)?)?);
            out.push('\n');
            continue;
        }
        out.push_str(&super::run::summary(&run, store.location()));
        origin(m, &mut out);
        contents(&run, &mut out);
    }
    Ok(out)
}

/// Where and how a run was made: host, command, target, note, tags, repeats, commands.
fn origin(m: &RunMeta, out: &mut String) {
    use std::fmt::Write as _;
    let c = |x: &str| text::clean_cut(x, 2 * text::MAX_SHOWN).into_owned();
    let _ = writeln!(
        out,
        "  started {} UTC on {} (kernel {}, {} CPUs), kiln {}",
        date(m.started_unix_ms),
        c(&m.host),
        c(&m.kernel),
        m.cpus,
        c(&m.kiln_version)
    );
    let _ = writeln!(out, "  command: {}", c(&m.command_line.join(" ")));
    let _ = writeln!(
        out,
        "  target: {} {} (build id {})",
        c(&m.target.exe),
        c(&m.target.cmdline.join(" ")),
        if m.target.build_id.is_empty() {
            "none".to_string()
        } else {
            c(&m.target.build_id)
        }
    );
    if let Some(n) = &m.note {
        let _ = writeln!(out, "  note: {}", c(n));
    }
    if !m.tags.is_empty() {
        let tags: Vec<String> = m
            .tags
            .iter()
            .map(|(k, v)| format!("{}={}", c(k), c(v)))
            .collect();
        let _ = writeln!(out, "  tags: {}", tags.join(" "));
    }
    if let (Some(x), Some(r)) = (&m.experiment, m.round) {
        let _ = writeln!(
            out,
            "  round {r} of {} of experiment {} (group {})",
            m.repeat.1,
            c(x),
            c(&m.group)
        );
    } else if m.repeat.1 > 1 {
        let _ = writeln!(
            out,
            "  repeat {} of {} (group {})",
            m.repeat.0,
            m.repeat.1,
            c(&m.group)
        );
    }
    for cmd in &m.commands {
        let how = match (cmd.exit_code, cmd.signal) {
            (Some(0), _) => "ok".to_string(),
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("ended by signal {sig}"),
            _ => "no status".to_string(),
        };
        let _ = writeln!(out, "  {}: {} ({how})", c(&cmd.role), c(&cmd.command));
    }
}

/// What a run holds: its series, profiles, histograms and attachments.
fn contents(run: &kiln_store::RunData, out: &mut String) {
    use std::fmt::Write as _;
    let c = |x: &str| text::clean_cut(x, 2 * text::MAX_SHOWN).into_owned();
    for s in &run.series {
        let cols: Vec<String> = s.columns.iter().map(|col| c(&col.name)).collect();
        let _ = writeln!(
            out,
            "  series '{}': {} seconds of {}",
            c(&s.name),
            s.time_ns.len(),
            cols.join(", ")
        );
    }
    for p in &run.profiles {
        let _ = writeln!(
            out,
            "  profile '{}': {} samples, {} stacks",
            c(&p.event.name),
            p.samples.len(),
            p.stacks.len()
        );
    }
    for h in &run.histograms {
        if h.window == kiln_store::PER_SECOND {
            let _ = writeln!(
                out,
                "  latency histograms '{}': one per second (HdrHistogram interval log)",
                c(&h.name)
            );
        } else {
            let _ = writeln!(
                out,
                "  latency histogram '{}' ({})",
                c(&h.name),
                c(&h.window)
            );
        }
    }
    for a in &run.attachments {
        let _ = writeln!(out, "  attachment '{}': {} bytes", c(&a.name), a.data.len());
    }
}

pub fn run(mut args: Args, max_input: u64) -> Result<ExitCode> {
    args.store.max_input = max_input;
    if matches!(
        args.command,
        None | Some(RunsCommand::List(_) | RunsCommand::Show { .. } | RunsCommand::Check)
    ) {
        super::common::ensure_stdout_open()?;
    }
    let mut out = std::io::stdout().lock();
    match args.command {
        None => list(&args.store, &args.list, &mut out)?,
        Some(RunsCommand::List(l)) => list(&args.store, &l, &mut out)?,
        Some(RunsCommand::Show { run, json }) => {
            let store = args.store.open_existing()?;
            write!(out, "{}", show(&*store, &run, json)?)?;
        }
        Some(RunsCommand::Check) => {
            if check(&args.store, &mut out)? > 0 {
                return Ok(ExitCode::from(1));
            }
        }
        Some(RunsCommand::Rm { runs }) => remove(&args.store, &runs)?,
        Some(RunsCommand::Export {
            run,
            output,
            format,
        }) => {
            let store = args.store.open_existing()?;
            if export_format(&output, format.as_deref())? == kiln_formats::Format::Gecko {
                return export_firefox(&*store, &run, &output);
            }
            export(&*store, &run, &output)?;
        }
        Some(RunsCommand::Report {
            run,
            output,
            categories,
        }) => report(&args.store, &run, &output, categories.as_deref())?,
        Some(RunsCommand::Attachment {
            run,
            name,
            output,
            list,
        }) => {
            let store = args.store.open_existing()?;
            let data = latest_data(&*store, &run, None)?;
            if list {
                for a in &data.attachments {
                    writeln!(
                        out,
                        "{}\t{}",
                        text::clean_cut(&a.name, 2 * text::MAX_SHOWN),
                        a.data.len()
                    )?;
                }
            } else {
                attachment(&*store, &data, name, output, &mut out)?;
            }
        }
        Some(RunsCommand::Import { files }) => import(&args.store, &files)?,
        Some(RunsCommand::Trend(t)) => {
            drop(out);
            return super::trend::run(t, &args.store);
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The latest run `reference` names, loaded whole; `RUN@WINDOW` (a span of its
/// measurement's seconds, a sweep's step): the run seen through the window, its
/// measurement the window and its headline figures the window's (as `kiln runs show`
/// gives them), its series and samples whole, for a page or a profile that shows the
/// rest of the run around the window.
/// When `reference` names several runs, says which one `doing` (reporting, exporting)
/// takes.
fn latest_data(
    store: &dyn Store,
    reference: &str,
    doing: Option<&str>,
) -> Result<kiln_store::RunData> {
    let (data, n) = super::store::latest_data(store, reference)?;
    if let Some(doing) = doing.filter(|_| n > 1) {
        eprintln!(
            "'{}' names {n} runs; {doing} the latest, #{} (name another by its id)",
            text::clean_cut(reference, 80),
            data.meta.id.unwrap_or(0)
        );
    }
    Ok(data)
}

/// `kiln runs rm`: the runs named, damaged ones too (removing one is how a store is
/// mended).
fn remove(store: &StoreArgs, runs: &[String]) -> Result<()> {
    let mut store = store.open_existing_to_write()?;
    let mut doomed: Vec<kiln_store::Stored> = Vec::new();
    for r in runs {
        for m in store.resolve_stored(r)? {
            if !doomed.iter().any(|d| d.id == m.id) {
                doomed.push(m);
            }
        }
    }
    for m in &doomed {
        store.remove(m.id)?;
        eprintln!(
            "removed run #{} '{}' ({} UTC) from {}",
            m.id,
            text::clean_cut(&m.name, 80),
            date(m.started_unix_ms),
            store.location().display()
        );
    }
    Ok(())
}

/// `kiln runs export` in kiln's own file: every run `run` names.
fn export(store: &dyn Store, run: &str, output: &std::path::Path) -> Result<()> {
    // A window of a run the store has (a run it lacks is the store's error, below).
    let windowed = run
        .rsplit_once('@')
        .is_some_and(|(base, _)| store.resolve(run).is_err() && store.resolve(base).is_ok());
    if windowed {
        bail!(
            "'{}' is a window of a run: kiln's own file holds whole runs (export the run, or \
             give --format firefox for the run with the window as its measurement)",
            text::clean_cut(run, 80)
        );
    }
    let ids: Vec<i64> = resolve(store, run)?
        .into_iter()
        .filter_map(|m| m.id)
        .collect();
    if output.as_os_str() == "-" {
        // `-o -`: the file's bytes on standard output, as everywhere in kiln.
        super::common::write_output(None, |w| {
            kiln_store::export_to(store, &ids, w, std::path::Path::new("<stdout>"))?;
            Ok(())
        })?;
        eprintln!("wrote {} run(s) to standard output", ids.len());
        return Ok(());
    }
    if let (Some(dest), Some(file)) = (
        output.to_str().filter(|_| output.exists()),
        store.local_file(),
    ) {
        if kiln_os::io::same_file(output, file) {
            bail!("the output '{dest}' is the store itself; choose another -o");
        }
    }
    kiln_store::export(store, &ids, output)?;
    eprintln!("wrote {} run(s) to {}", ids.len(), output.display());
    Ok(())
}

/// `kiln runs report`: the latest run `run` names as one HTML page.
fn report(
    store: &StoreArgs,
    run: &str,
    output: &std::path::Path,
    categories: Option<&std::path::Path>,
) -> Result<()> {
    let store = store.open_existing()?;
    let mut opts = kiln_report::ReportOptions::default();
    if let Some(c) = categories {
        opts.rules = kiln_report::Rules::from_file_and_builtin(c)?;
    }
    let data = latest_data(&*store, run, Some("reporting"))?;
    if output.as_os_str() == "-" {
        super::common::write_output(None, |w| {
            kiln_report::write_run_report(&data, &opts, w)?;
            Ok(())
        })?;
    } else {
        kiln_report::write_run_report_file(&data, &opts, output)
            .with_context(|| format!("Failed to write '{}'", output.display()))?;
        eprintln!("wrote {}", output.display());
    }
    Ok(())
}

/// `kiln runs attachment RUN NAME -o FILE`: one attachment's bytes.
fn attachment(
    store: &dyn Store,
    data: &kiln_store::RunData,
    name: Option<String>,
    output: Option<PathBuf>,
    out: &mut dyn Write,
) -> Result<()> {
    let name =
        name.context("give the attachment's name (kiln runs attachment RUN --list lists them)")?;
    let Some(a) = data.attachments.iter().find(|a| a.name == name) else {
        let names: Vec<String> = data
            .attachments
            .iter()
            .map(|a| text::clean_cut(&a.name, 80).into_owned())
            .collect();
        bail!(
            "run #{} has no attachment '{}'; it has: {}",
            data.meta.id.unwrap_or(0),
            text::clean_cut(&name, 80),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        );
    };
    let output = output.context("give -o FILE")?;
    if output.as_os_str() == "-" {
        out.write_all(&a.data)?;
        return Ok(());
    }
    if kiln_os::io::same_file(&output, store.location()) {
        bail!(
            "the output '{}' is the store itself; choose another -o",
            output.display()
        );
    }
    kiln_os::io::write_atomically(&output, |w| w.write_all(&a.data))
        .with_context(|| format!("Failed to write '{}'", output.display()))?;
    eprintln!("wrote {} ({} bytes)", output.display(), a.data.len());
    Ok(())
}

/// What `kiln runs export` writes: `--format`, else the name's extension (`.gecko.json`),
/// else the runs' own file, whatever the name (NAME.kiln by convention).
fn export_format(output: &std::path::Path, forced: Option<&str>) -> Result<kiln_formats::Format> {
    use kiln_formats::{output_format, Format, RUN_OUTPUTS};
    match output_format(Some(output), forced, RUN_OUTPUTS, Some(Format::RunStore)) {
        Ok(f) => Ok(f),
        Err(_) if forced.is_none() => Ok(Format::RunStore),
        Err(e) => Err(e.into()),
    }
}

/// `kiln runs export --format firefox`: the run (a name: its latest) for the Firefox
/// Profiler.
fn export_firefox(store: &dyn Store, run: &str, output: &std::path::Path) -> Result<ExitCode> {
    if kiln_os::io::same_file(output, store.location()) {
        bail!(
            "the output '{}' is the store itself; choose another -o",
            output.display()
        );
    }
    let data = latest_data(store, run, Some("exporting"))?;
    let last = data.meta.id.unwrap_or(0);
    let to = (output.as_os_str() != "-").then_some(output);
    super::common::write_output(to, |w| {
        kiln_report::write_run_firefox(&data, w)?;
        Ok(())
    })?;
    // Threads with samples: the tracks written.
    let threads: usize = data
        .profiles
        .iter()
        .map(|p| {
            let mut t: Vec<u32> = p.samples.thread.iter().map(|t| t.0).collect();
            t.sort_unstable();
            t.dedup();
            t.len()
        })
        .sum();
    let timeline = kiln_report::firefox_timeline(&data);
    let zero = match timeline.left_out.len() {
        0 => String::new(),
        n => format!("; {n} series without a value other than 0 left out"),
    };
    eprintln!(
        "wrote run #{last} for the Firefox Profiler ({threads} thread(s), {} counter(s), {} marker(s){zero}) to {}",
        timeline.counters.len(),
        timeline.markers.len(),
        to.map_or_else(|| "standard output".to_string(), |p| p.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// `kiln runs import`: every file is opened (read-only) and checked before the store is
/// opened; a run that cannot be read stops the import with an error naming it, and a
/// store this import created is removed again when nothing landed in it.
fn import(store_args: &StoreArgs, files: &[PathBuf]) -> Result<()> {
    let mut sources = Vec::new();
    for f in files {
        let mut from = SqliteStore::open_existing(f)
            .with_context(|| format!("Cannot import '{}'", f.display()))?;
        from.set_max_input(store_args.max_input);
        let mut runs = Vec::new();
        for r in from
            .stored(kiln_store::Select::All)
            .with_context(|| format!("Cannot import '{}'", f.display()))?
        {
            runs.push(
                r.into_meta(f)
                    .with_context(|| format!("Cannot import '{}'", f.display()))?,
            );
        }
        sources.push((f, from, runs));
    }
    let location = store_args.location();
    let created = !kiln_store::is_url(&location) && std::fs::symlink_metadata(&location).is_err();
    let mut store = store_args.open()?;
    let mut imported = 0;
    let outcome = (|| -> Result<()> {
        for (f, from, runs) in &sources {
            if store
                .local_file()
                .is_some_and(|s| kiln_os::io::same_file(f, s))
            {
                bail!("'{}' is the store itself", f.display());
            }
            for m in runs {
                let id = m.id.context("run without id")?;
                let run = from
                    .load(id)
                    .with_context(|| format!("Cannot import run #{id} of '{}'", f.display()))?;
                let new = store.save(&run)?;
                imported += 1;
                eprintln!(
                    "imported '{}' from {} as #{new}",
                    text::clean_cut(&m.name, 80),
                    f.display()
                );
            }
            if runs.is_empty() {
                eprintln!("warning: '{}' holds no run", f.display());
            }
        }
        Ok(())
    })();
    if outcome.is_err() && imported == 0 && created {
        // Nothing landed: the store this import created goes with it.
        if let Some(file) = store.local_file().map(|p| p.to_path_buf()) {
            drop(store);
            kiln_store::remove_store_file(&file);
        }
    }
    outcome
}

fn list(store: &StoreArgs, l: &ListArgs, out: &mut dyn Write) -> Result<()> {
    let s = match store.open_existing() {
        Ok(s) => s,
        Err(e) => match e.downcast_ref::<kiln_store::StoreError>() {
            Some(kiln_store::StoreError::Missing { location }) => {
                eprintln!("no runs yet: no store at '{location}' (kiln run creates it)");
                return Ok(());
            }
            _ => return Err(e),
        },
    };
    let select = match l.name.as_deref() {
        Some(n) => kiln_store::Select::Name(n.strip_prefix("name:").unwrap_or(n)),
        None => kiln_store::Select::All,
    };
    let mut damaged = Vec::new();
    if l.json {
        // Each run's metadata is written as it is read: what is held is one run's.
        let mut written: Result<usize> = Ok(0);
        write!(out, "[")?;
        s.scan(select, &mut |r| {
            if let Err(what) = &r.meta {
                damaged.push(damaged_line(r.id, &r.name, what));
            }
            if let Ok(n) = &mut written {
                let sep = if *n == 0 { "\n" } else { ",\n" };
                match write!(out, "{sep}")
                    .map_err(anyhow::Error::from)
                    .and_then(|_| list_json(&r, out))
                {
                    Ok(()) => *n += 1,
                    Err(e) => written = Err(e),
                }
            }
        })?;
        written?;
        writeln!(out, "\n]")?;
    } else {
        // The lines come from the columns kept beside each run, never its metadata: what
        // is read and held grows with the lines.
        let mut table = Table::new();
        s.listing(select, &mut |r| {
            if let Some(what) = &r.damaged {
                damaged.push(damaged_line(r.id, &r.name, what));
            }
            table.push(list_row(&r));
        })?;
        table.write(out)?;
    }
    out.flush()?;
    for d in &damaged {
        eprintln!("warning: {d} (kiln runs check lists the damaged runs)");
    }
    Ok(())
}

/// Writes a run as `kiln runs --json` prints it (one line): its metadata, or, for a
/// damaged run, its id, name, group, start and `damaged`: what is wrong.
fn list_json(r: &kiln_store::Stored, out: &mut dyn Write) -> Result<()> {
    match &r.meta {
        Ok(m) => serde_json::to_writer(out, m)?,
        Err(what) => serde_json::to_writer(
            out,
            &serde_json::json!({
                "id": r.id,
                "name": r.name,
                "group": r.group,
                "started_unix_ms": r.started_unix_ms,
                "damaged": what,
            }),
        )?,
    }
    Ok(())
}

/// The listing's fields that are not what the run's metadata makes of them.
fn listing_differs(l: &kiln_store::Listed, want: &kiln_store::Listed) -> Vec<&'static str> {
    let same = |a: Option<f64>, b: Option<f64>| a.map(f64::to_bits) == b.map(f64::to_bits);
    [
        ("target", l.target == want.target),
        ("load", l.load == want.load),
        ("throughput", same(l.throughput, want.throughput)),
        ("p50", same(l.p50_us, want.p50_us)),
        ("p99", same(l.p99_us, want.p99_us)),
        ("cpu/op", same(l.cpu_per_op_us, want.cpu_per_op_us)),
        ("complete", l.complete == want.complete),
        ("configuration", l.config == want.config),
        ("damaged", l.damaged == want.damaged),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(what, _)| what)
    .collect()
}

/// `kiln runs check`: every run read; one line per damaged run on standard output. `Ok(n)`:
/// how many are damaged.
fn check(store: &StoreArgs, out: &mut dyn Write) -> Result<usize> {
    let s = store.open_existing()?;
    let mut total = 0usize;
    // What is wrong with each damaged run, by id: its metadata, and any blob no reader
    // can read back (an attachment past the input limit makes every command that reads
    // the run fail).
    let mut wrong: std::collections::BTreeMap<i64, (String, Vec<String>)> = Default::default();
    let mut names: std::collections::HashMap<i64, String> = Default::default();
    // What `kiln runs` lists of each run, to hold against its metadata.
    let mut listed: std::collections::HashMap<i64, kiln_store::Listed> = Default::default();
    s.listing(kiln_store::Select::All, &mut |l| {
        listed.insert(l.id, l);
    })?;
    s.scan(kiln_store::Select::All, &mut |r| {
        total += 1;
        if let Err(what) = &r.meta {
            wrong.insert(r.id, (r.name.clone(), vec![what.clone()]));
            return;
        }
        if let Some(l) = listed.get(&r.id) {
            let differ = listing_differs(l, &kiln_store::Listed::of(&r, l.complete));
            if !differ.is_empty() {
                wrong.insert(
                    r.id,
                    (
                        r.name.clone(),
                        vec![format!(
                            "its listing columns disagree with its metadata ({}; changed around kiln)",
                            differ.join(", ")
                        )],
                    ),
                );
                return;
            }
        }
        names.insert(r.id, r.name);
    })?;
    s.unreadable_blobs(&mut |id, what| {
        let name = names.get(&id).cloned().unwrap_or_default();
        wrong
            .entry(id)
            .or_insert_with(|| (name, Vec::new()))
            .1
            .push(what);
    })?;
    let damaged: Vec<String> = wrong
        .iter()
        .map(|(id, (name, what))| damaged_line(*id, name, &what.join("; ")))
        .collect();
    for d in &damaged {
        writeln!(out, "{d}")?;
    }
    out.flush()?;
    eprintln!(
        "{total} run(s) read in {}: {} damaged{}",
        s.location().display(),
        damaged.len(),
        if damaged.is_empty() {
            ""
        } else {
            " (kiln runs rm ID removes one; the others are not affected)"
        }
    );
    Ok(damaged.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(date(0), "1970-01-01 00:00");
        assert_eq!(date(1_795_449_600_000), "2026-11-23 16:00");
    }
}
