//! `kiln record`: sample a live process (or a command, or the whole machine) straight to a
//! profile, folded stacks, an SVG flame graph or the HTML viewer.
use super::common::{write_output, TransformArgs};
use anyhow::{bail, Context, Result};
use kiln_formats::Format;
use kiln_model::{FoldedOptions, FoldedWriter, Profile};
use kiln_record::{EventSpec, NamingOptions, RecordOptions, StopReason, Target, UnwindMode};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Sample a live process: CPU, off-CPU, page faults, syscalls or any tracepoint, with
/// complete stacks through native and JIT code, and Python functions (CPython 3.10 to 3.13)
/// in place of the interpreter's loop (no `perf script`).
///
/// Examples:
///   kiln record -p $(pgrep beam.smp) -d 30 -o rabbit.svg --merge-threads
///   kiln record -e cpu,page-faults,mmap -o run.kiln -- ./server --port 8080
///   kiln record -a -F 99 -d 10 > all.folded
///   kiln record -p $(pgrep -x myserver) -d 30 --otlp-endpoint http://127.0.0.1:4318
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Record these processes (all threads, including threads started later).
    /// Comma-separated or repeated.
    #[arg(short, long, value_name = "PID[,PID...]", value_delimiter = ',', conflicts_with_all = ["all_cpus", "command"])]
    pub pid: Vec<u32>,

    /// Record every process on every CPU.
    #[arg(short, long, conflicts_with = "command")]
    pub all_cpus: bool,

    /// Events to record, one profile each: cpu, offcpu (time blocked), runnable (time waiting
    /// for a CPU: preempted or yielded), page-faults, mmap and
    /// munmap (weighed by the bytes each call maps or unmaps), brk (weighed by the bytes
    /// the heap grew by), or a tracepoint such as sched:sched_switch or
    /// syscalls:sys_enter_read (counted, as perf does).
    /// Example: -e cpu,page-faults,mmap
    #[arg(
        short,
        long,
        value_name = "EVENT[,EVENT...]",
        value_delimiter = ',',
        default_value = "cpu"
    )]
    pub event: Vec<String>,

    /// Off-CPU blocks shorter than this many microseconds add no time (bcc offcputime's
    /// -m): keeps scheduler ping-pong out of an investigation of long waits. Blocks
    /// left out are counted in the summary.
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 0)]
    pub min_block: u64,

    /// With -e offcpu: follow each blocked stack with the stack of the thread that woke
    /// it (as bcc's offwaketime), above a `--` frame, drawn in the chain palette (waker
    /// frames in aqua). In lock contention the waker is the lock's holder.
    /// Example: kiln record -e offcpu --wakers -p $(pgrep -o myserver) -d 10 -o wake.svg
    #[arg(long)]
    pub wakers: bool,

    /// Unit of off-CPU time in the output: us (microseconds, as bcc's offcputime and the
    /// usual off-CPU flame graph recipes) or ns (nanoseconds, as measured). The unit is
    /// written into .kiln profiles and labels SVG and HTML output.
    #[arg(long, value_enum, value_name = "UNIT", default_value = "us")]
    pub units: UnitsArg,

    /// Sampling frequency of the cpu event, in Hz.
    #[arg(short = 'F', long = "freq", value_name = "HZ", default_value_t = 999)]
    pub frequency: u32,

    /// Stop after this many seconds (otherwise on Ctrl-C or when the target exits).
    #[arg(short, long, value_name = "SECONDS")]
    pub duration: Option<f64>,

    /// Output file; its extension chooses the format: .folded (folded stacks), .svg (flame
    /// graph), .html (interactive viewer), .kiln (native profile keeping timestamps, threads
    /// and every event), .pb.gz/.pprof (pprof, for go tool pprof; .pb uncompressed),
    /// .speedscope.json (speedscope), .gecko.json (Firefox Profiler), .otlp.pb (OpenTelemetry
    /// profiles, opentelemetry-proto v1.8.0, development status). kiln, speedscope, gecko
    /// and otlp files hold every event; with several events the others write one file per
    /// event (NAME.EVENT.EXT). Default: folded stacks to stdout (one event only).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Output format, whatever -o's name (or on standard output): folded, svg, html,
    /// kiln, pprof, speedscope, gecko, otlp.
    #[arg(long, value_name = "FORMAT")]
    pub output_format: Option<String>,

    /// Where user stacks are unwound. kernel: at sample time by an eBPF program that
    /// follows CFI tables (from .eh_frame, present even in stripped binaries) for native
    /// code and frame pointers for JIT code, reading the thread's memory wherever its
    /// frames are (complete stacks through the BEAM's Erlang stacks); needs root and BTF;
    /// applies to every event but offcpu (its own eBPF program). copy: from a copy of the stack taken with each
    /// sample (--stack-size bytes), unwound afterwards, as perf's --call-graph dwarf.
    /// auto: kernel where possible, else copy.
    #[arg(long, value_enum, value_name = "WHERE", default_value = "auto")]
    pub unwind: UnwindArg,

    /// Bytes of user stack copied per sample when stacks are unwound from copies
    /// (--unwind copy, a process's first samples before its tables reach the kernel,
    /// off-CPU snapshots). Larger reaches deeper
    /// stacks at more overhead; 0 records kernel stacks only.
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    pub stack_size: u32,

    /// Annotate kernel frames with _[k] (as stackcollapse-perf --kernel).
    #[arg(long)]
    pub kernel: bool,

    /// Annotate JIT frames (from perf maps) with _[j] (as stackcollapse-perf --jit).
    #[arg(long)]
    pub jit: bool,

    /// Title of the SVG or HTML output.
    #[arg(long)]
    pub title: Option<String>,

    #[command(flatten)]
    pub otlp: super::common::OtlpArgs,

    #[command(flatten)]
    pub transforms: TransformArgs,

    /// Command to start and record (with its children), after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// `--units` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum UnitsArg {
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
}

/// `--unwind` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum UnwindArg {
    /// In the kernel where possible, else from copies.
    Auto,
    /// In the kernel at sample time (eBPF).
    Kernel,
    /// From copies of the stack, afterwards.
    Copy,
}

/// What `kiln record -o` writes.
pub const OUTPUTS: &[Format] = &[
    Format::Folded,
    Format::Svg,
    Format::Html,
    Format::Native,
    Format::Pprof,
    Format::Speedscope,
    Format::Gecko,
    Format::Otlp,
];

impl Args {
    fn record_options(&self) -> Result<RecordOptions> {
        let target = if !self.pid.is_empty() {
            Target::Pids(self.pid.clone())
        } else if self.all_cpus {
            Target::System
        } else if !self.command.is_empty() {
            Target::Command(self.command.clone())
        } else {
            bail!("Nothing to record: give -p PID, -a, or a command after `--` (e.g. kiln record -- ./server)");
        };
        let events = self
            .event
            .iter()
            .map(|e| EventSpec::parse(e.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let duration = match self.duration {
            Some(d) if !(d > 0.0 && d.is_finite()) => {
                bail!("-d/--duration must be a positive number of seconds")
            }
            Some(d) => Some(Duration::from_secs_f64(d)),
            None => None,
        };
        let mut o = RecordOptions::new(target);
        o.events = events;
        o.frequency = self.frequency;
        o.duration = duration;
        o.stack_bytes = self.stack_size;
        o.offcpu_min_block_us = self.min_block;
        o.offcpu_wakers = self.wakers;
        if self.wakers && !o.events.contains(&EventSpec::OffCpu) {
            bail!("--wakers goes with the offcpu event: add -e offcpu");
        }
        o.offcpu_unit = match self.units {
            UnitsArg::Us => kiln_model::WeightUnit::Microseconds,
            UnitsArg::Ns => kiln_model::WeightUnit::Nanoseconds,
        };
        o.unwind = match self.unwind {
            UnwindArg::Auto => UnwindMode::Auto,
            UnwindArg::Kernel => UnwindMode::Kernel,
            UnwindArg::Copy => UnwindMode::Copy,
        };
        o.naming = NamingOptions {
            annotate_kernel: self.kernel,
            annotate_jit: self.jit,
        };
        Ok(o)
    }
}

/// Whether a profile holds Python frames read from an interpreter.
fn has_python_frames(p: &Profile) -> bool {
    p.frames
        .iter()
        .any(|(_, f)| f.kind == kiln_model::FrameKind::Python)
}

fn write_one(
    p: &Profile,
    path: Option<&Path>,
    format: Format,
    title: Option<&str>,
    wakers: bool,
    time_nanos: i64,
) -> Result<()> {
    // Off-CPU stacks followed by their wakers' are drawn as bcc's recipe draws them.
    let chain = wakers && p.event.name == "offcpu";
    write_output(path, |w| {
        match format {
            Format::Folded => FoldedWriter::new(FoldedOptions::default()).write(p, w)?,
            Format::Svg => {
                let mut o = kiln_flamegraph::Options::default();
                if chain {
                    o.colors = kiln_flamegraph::Palette::Chain;
                } else if has_python_frames(p) {
                    // Python functions green, the interpreter's C red, the kernel orange.
                    o.colors = kiln_flamegraph::Palette::Python;
                }
                o.title = title.map(str::to_string);
                o.count_name = p.event.count_name().to_string();
                o.subtitle = Some(format!("kiln record: {}", p.event.name));
                kiln_flamegraph::render(p, &o, w)?;
            }
            Format::Html => {
                let mut o = kiln_viewer::HtmlOptions::default();
                if chain {
                    o.palette = "chain".to_string();
                }
                if let Some(t) = title {
                    o.title = t.to_string();
                }
                o.subtitle = Some(format!("kiln record: {}", p.event.name));
                kiln_viewer::write_html(p, &o, w)?;
            }
            other => {
                let o = kiln_formats::WriteOptions {
                    time_nanos,
                    title: title.map(str::to_string),
                    uncompressed: path.is_some_and(kiln_formats::pprof_uncompressed),
                };
                kiln_formats::write(std::slice::from_ref(p), other, &o, w)?;
            }
        }
        Ok(())
    })
}

pub fn run(args: Args, stop: &kiln_os::stop::Stop) -> Result<ExitCode> {
    let mut opts = args.record_options()?;
    let format = kiln_formats::output_format(
        args.output.as_deref(),
        args.output_format.as_deref(),
        OUTPUTS,
        Some(Format::Folded),
    )?;
    let multi = format.info().multi;
    args.otlp.check()?;
    let to_stdout = args
        .output
        .as_deref()
        .is_none_or(|p| kiln_os::io::stream_fd(p).is_some());
    let write = args.output.is_some() || args.otlp.to_stdout(None);
    if write && to_stdout && opts.events.len() > 1 && !multi {
        bail!("Several events give several profiles: write them with -o FILE.kiln (one file) or -o FILE.svg (one per event)");
    }
    let time_nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(0));
    let transforms = args.transforms.to_transforms()?;
    opts.stop = Some(stop.clone());
    let mut rec = kiln_record::record(&opts).context("Recording failed")?;
    let write_start = std::time::Instant::now();
    // (The recorder gives timer profiles the period one sample stands for, 1e9/F ns, so
    // pages show CPU time rather than bare sample counts.)
    let mut profiles = std::mem::take(&mut rec.profiles);
    if !transforms.is_identity() {
        profiles = profiles.iter().map(|p| transforms.apply(p).0).collect();
    }
    write_profiles(&args, format, &profiles, time_nanos)?;
    let written = write_start.elapsed();
    // Which packages ship the stripped binaries (for the fix the summary names): asked
    // once the output is written, not before.
    rec.summary.find_packages();
    report(&args, &rec, &profiles, written);
    if let Some(st) = rec.exit_status {
        if !st.success() {
            eprintln!("kiln record: the command exited with {st}");
        }
    }
    let otlp = kiln_formats::otlp::WriteOptions {
        time_nanos,
        comment: args.title.clone(),
        resource: Vec::new(),
    };
    args.otlp.send("record", &profiles, &otlp)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the recording's profiles: every event in one file for formats that hold
/// several, else one file per event (or the only one to standard output).
fn write_profiles(
    args: &Args,
    format: Format,
    profiles: &[Profile],
    time_nanos: i64,
) -> Result<()> {
    let multi = format.info().multi;
    let to_stdout = args
        .output
        .as_deref()
        .is_none_or(|p| kiln_os::io::stream_fd(p).is_some());
    let write = args.output.is_some() || args.otlp.to_stdout(None);
    match args.output.as_deref() {
        // Only sent (--otlp-endpoint without -o).
        _ if !write => {}
        // Formats holding several profiles take every event in one file.
        path if multi => write_output(path, |w| {
            let o = kiln_formats::WriteOptions {
                time_nanos,
                title: args.title.clone(),
                uncompressed: false,
            };
            kiln_formats::write(profiles, format, &o, w)?;
            Ok(())
        })?,
        path if profiles.len() == 1 || to_stdout => write_one(
            &profiles[0],
            path,
            format,
            args.title.as_deref(),
            args.wakers,
            time_nanos,
        )?,
        Some(path) => {
            for p in profiles {
                write_one(
                    p,
                    Some(&kiln_formats::per_event_path(path, format, &p.event.name)),
                    format,
                    args.title.as_deref(),
                    args.wakers,
                    time_nanos,
                )?;
            }
        }
        None => unreachable!("stdout handled above"),
    }
    Ok(())
}

/// What the recording read, named, lost and cost, on standard error.
fn report(args: &Args, rec: &kiln_record::Recording, profiles: &[Profile], written: Duration) {
    let ready = rec.processing + written;
    let s = &rec.summary;
    let why = match rec.stopped {
        StopReason::Duration => "duration reached",
        StopReason::Interrupted => "interrupted",
        StopReason::TargetExited => "target exited",
        _ => "stopped",
    };
    for (p, n) in profiles.iter().zip(&s.samples) {
        eprintln!(
            "kiln record: {n} samples of {} (total weight {} {})",
            p.event.name,
            p.total_weight(),
            p.event.unit.name()
        );
    }
    eprintln!(
        "kiln record: sampling started {:.3} s after launch; output written {:.3} s after sampling stopped \
         (last samples read {:.3} s, frames named and stacks built {:.3} s, written {:.3} s)",
        rec.startup.as_secs_f64(),
        ready.as_secs_f64(),
        rec.final_drain.as_secs_f64(),
        (rec.processing - rec.final_drain).as_secs_f64(),
        written.as_secs_f64()
    );
    // Warnings and image paths come from the traced processes (a file named with
    // escape sequences is as easy to map as any): shown escaped.
    for w in &s.warnings {
        eprintln!("kiln record: warning: {}", super::common::shown(w));
    }
    if s.frames > 0 {
        report_names(s);
        report_python(&s.python);
    }
    if s.offcpu_blocks > 0 {
        report_offcpu(s, args.wakers);
    }
    if s.brk_unknown_base > 0 {
        eprintln!(
            "kiln record: {} brk calls weigh 0: their process's previous break was unknown (its first call seen, usually a query)",
            s.brk_unknown_base
        );
    }
    if s.unweighable > 0 {
        eprintln!(
            "kiln record: warning: {} samples skipped: their raw data lacked the length they are weighed by",
            s.unweighable
        );
    }
    let unseen = if s.unseen_samples > 0 {
        format!(
            " ({} of them samples the kernel counted but never gave: skipped while another eBPF program held the CPU)",
            s.unseen_samples
        )
    } else {
        String::new()
    };
    eprintln!(
        "kiln record: {why}; {} lost records{unseen}, {} throttled intervals, {} samples with a one-frame user stack, {} unreadable records",
        s.lost, s.throttled, s.shallow_user_stacks, s.bad_records
    );
    #[cfg(feature = "bpf")]
    if let Some(k) = &s.in_kernel {
        report_in_kernel(k, profiles);
    }
    if let Some(ns) = s.own_bpf_cpu_ns() {
        let secs = (rec.sampling.1.saturating_sub(rec.sampling.0)) as f64 / 1e9;
        let per: Vec<String> = s
            .own_bpf
            .iter()
            .map(|c| {
                let missed = if c.missed > 0 {
                    format!(
                        ", skipped {} times while another eBPF program ran on the CPU",
                        c.missed
                    )
                } else {
                    String::new()
                };
                format!(
                    "{} {:.3} s in {} runs ({:.0} ns each){missed}",
                    c.program,
                    c.cpu_ns as f64 / 1e9,
                    c.runs,
                    c.cpu_ns as f64 / c.runs.max(1) as f64
                )
            })
            .collect();
        eprintln!(
            "kiln record: kiln's eBPF programs used {:.3} s of CPU in the kernel ({:.1}% of one CPU over {:.1} s): {}",
            ns as f64 / 1e9,
            if secs > 0.0 { ns as f64 / 1e9 / secs * 100.0 } else { 0.0 },
            secs,
            per.join(", ")
        );
    }
}

/// How many frames have a name, and where those without one are.
fn report_names(s: &kiln_record::RecordingSummary) {
    eprintln!(
        "kiln record: {:.1}% of frames named by a symbol ({} of {})",
        100.0 * s.named_frames as f64 / s.frames as f64,
        s.named_frames,
        s.frames
    );
    for u in &s.unnamed_images {
        eprintln!(
            "kiln record:   {} frames without a name in {}",
            u.frames,
            super::common::shown(&format!(
                "{}{}{}",
                u.path.display(),
                u.build_id
                    .as_deref()
                    .map(|b| format!(" (build id {b})"))
                    .unwrap_or_default(),
                u.note
                    .as_deref()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ))
        );
        let fix = u.fix();
        if !fix.is_empty() {
            eprintln!(
                "kiln record:   to name them: {}",
                super::common::shown(&fix)
            );
        }
    }
}

/// The Python processes whose frames were read, and the samples without them.
fn report_python(py: &kiln_record::PythonSummary) {
    if py.processes.is_empty() {
        return;
    }
    let procs: Vec<String> = py
        .processes
        .iter()
        .map(|(pid, (major, minor))| format!("{pid} (Python {major}.{minor})"))
        .collect();
    eprintln!(
        "kiln record: Python frames of {}: {} samples with them in place of the evaluation loop, \
         {} without (threads Python does not know; samples unwound from stack copies have \
         none either), {} cut at 128 frames, {} at unreadable memory",
        procs.join(", "),
        py.merged,
        py.without_frames,
        py.truncated,
        py.unreadable
    );
    if py.unplaced_runs + py.empty_loops + py.unnamed_frames > 0 {
        eprintln!(
            "kiln record: Python frames: {} runs put at the root side (the native walk ended \
             before their loop), {} loop frames without Python frames left out, {} frames \
             whose code object could not be read left out",
            py.unplaced_runs, py.empty_loops, py.unnamed_frames
        );
    }
}

/// Off-CPU blocks seen, too short, lost, and without their waker.
fn report_offcpu(s: &kiln_record::RecordingSummary, wakers: bool) {
    eprintln!(
        "kiln record: off-CPU: {} blocks, {} shorter than --min-block, {} lost",
        s.offcpu_blocks, s.offcpu_short_blocks, s.offcpu_dropped_blocks
    );
    if s.offcpu_dropped_blocks > 0 {
        eprintln!(
            "kiln record: error: {} off-CPU blocks ({:.3} s off CPU) are not in the profile: \
             the kernel's buffer of finished blocks was full",
            s.offcpu_dropped_blocks,
            s.offcpu_dropped_ns as f64 / 1e9
        );
    }
    if s.offcpu_before_window > 0 {
        eprintln!(
            "kiln record: off-CPU: {} blocks wholly outside the sampling window (ended before it began) are not in the profile; blocks across its edges are cut to it",
            s.offcpu_before_window
        );
    }
    if s.offcpu_unseen_ends > 0 {
        eprintln!(
            "kiln record: warning: {} off-CPU blocks are not in the profile: their end was not \
             seen (the kernel refused the thread's state as it ran again)",
            s.offcpu_unseen_ends
        );
    }
    if s.offcpu_fp_only > 0 {
        eprintln!(
            "kiln record: warning: {}",
            kiln_record::fp_only_said(s.offcpu_fp_only, s.offcpu_blocks)
        );
    }
    if wakers {
        eprintln!(
            "kiln record: off-CPU: {} blocks without their waker (no wake-up seen, or woken before --min-block)",
            s.offcpu_without_waker
        );
    }
}

/// How the stacks unwound in the kernel ended, per event too.
#[cfg(feature = "bpf")]
fn report_in_kernel(k: &kiln_record::InKernelSummary, profiles: &[Profile]) {
    eprintln!(
        "kiln record: stacks unwound in the kernel: {} reached their root, {} stopped at unreadable memory, \
         {} at code without unwind rules, {} at a bad frame, {} at the depth limit; {} without a user stack; \
         {} unwound from stack copies (taken before the process's tables were loaded, right after an exec, or in a library \
         mapped since); frames: {} by CFI, {} by frame pointers",
        k.ended_at_root,
        k.ended_unreadable,
        k.ended_no_rule,
        k.ended_bad_frame,
        k.ended_depth,
        k.no_user_stack,
        k.no_tables + k.stale_tables + k.incomplete_tables,
        k.cfi_frames,
        k.fp_frames
    );
    if k.per_event.len() > 1 {
        let per: Vec<String> = k
            .per_event
            .iter()
            .map(|w| {
                let name = profiles.get(w.event).map_or("?", |p| p.event.name.as_str());
                format!(
                    "{name} {} of {} ({:.1}%)",
                    w.at_root,
                    w.walks,
                    100.0 * w.at_root as f64 / w.walks.max(1) as f64
                )
            })
            .collect();
        eprintln!(
            "kiln record: stacks that reached their root, per event: {}",
            per.join(", ")
        );
    }
    if k.images_without_table + k.processes_over_mapping_limit + k.processes_not_stored > 0 {
        eprintln!(
            "kiln record: warning: in the kernel, {} images had no unwind table (no .eh_frame, or the table was full) \
             and were walked by frame pointers; {} processes had more code mappings than it holds; \
             {} processes' mappings could not be stored (unwound from stack copies)",
            k.images_without_table, k.processes_over_mapping_limit, k.processes_not_stored
        );
    }
}
