//! `kiln collapse`: profiler output in, folded stacks out.
use super::common::{
    apply_transforms, collapse_input, write_output, InputArgs, OtlpArgs, TransformArgs,
};
use anyhow::Result;
use kiln_collapse::perf::{PerfOptions, PerfWeight};
use kiln_model::{FoldedOptions, FoldedWriter};
use std::path::PathBuf;
use std::process::ExitCode;

/// Turn `perf script` text, folded stacks, bpftrace output, perf.data, pprof or a stored
/// run into folded stacks, or convert it to another profile format.
///
/// A drop-in for stackcollapse-perf.pl and inferno-collapse-perf that counts every
/// sample: a summary on stderr says how many were read, kept and skipped, and why.
/// `-o`'s extension (or --output-format) chooses the output: folded (default; .folded,
/// .txt), kiln (.kiln), pprof (.pb.gz, .pprof, .pb uncompressed), speedscope
/// (.speedscope.json), gecko (.gecko.json, the Firefox Profiler), otlp (.otlp.pb,
/// OpenTelemetry profiles, opentelemetry-proto v1.8.0: a signal in development).
///
/// Examples:
///   perf script | kiln collapse > out.folded
///   kiln collapse --merge-threads --kernel out.perf -o out.folded
///   kiln collapse --format bpftrace offcpu.txt > offcpu.folded
///   kiln collapse --sample-type alloc_space heap.pb.gz > alloc.folded
///   kiln collapse perf.data -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
///   kiln collapse run:before --otlp-endpoint http://127.0.0.1:4318
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Input file; standard input when absent or `-`.
    pub input: Option<PathBuf>,

    /// Write to FILE (atomically) instead of standard output; its extension chooses the
    /// format (.folded, .kiln, .pb.gz, .speedscope.json, .gecko.json, .otlp.pb).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Output format, whatever -o's name (or on standard output): folded, kiln, pprof,
    /// speedscope, gecko, otlp.
    #[arg(long, value_name = "FORMAT")]
    pub output_format: Option<String>,

    #[command(flatten)]
    pub otlp: OtlpArgs,

    #[command(flatten)]
    pub perf: PerfArgs,

    #[command(flatten)]
    pub input_args: InputArgs,

    #[command(flatten)]
    pub transforms: TransformArgs,
}

/// stackcollapse-perf.pl's options.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "perf script input")]
pub struct PerfArgs {
    /// Include the PID in the root frame (`comm-PID`).
    #[arg(long)]
    pub pid: bool,
    /// Include PID and TID in the root frame (`comm-PID/TID`).
    #[arg(long)]
    pub tid: bool,
    /// Annotate kernel frames with `_[k]`.
    #[arg(long)]
    pub kernel: bool,
    /// Annotate JIT frames (from /tmp/perf-PID.map) with `_[j]`.
    #[arg(long)]
    pub jit: bool,
    /// Annotate inlined frames with `_[i]`.
    #[arg(long)]
    pub inline: bool,
    /// All annotations: --kernel --jit --inline.
    #[arg(long)]
    pub all: bool,
    /// Name frames without a symbol `[module <ADDR>]` instead of `[module]`.
    #[arg(long)]
    pub addrs: bool,
    /// Parser threads (default: one per core for perf script text, one for folded
    /// stacks, where a second thread paid off only on an idle machine).
    #[arg(long, value_name = "N", default_value_t = 0, alias = "nthreads")]
    pub threads: usize,
}

impl PerfArgs {
    /// The library options for these flags; `count_samples`: `--count-samples` (a
    /// transform flag, which perf input honours while it reads).
    pub fn to_options(&self, count_samples: bool) -> PerfOptions {
        PerfOptions {
            include_pid: self.pid || self.tid,
            include_tid: self.tid,
            annotate_kernel: self.kernel || self.all,
            annotate_jit: self.jit || self.all,
            annotate_inline: self.inline || self.all,
            include_addrs: self.addrs,
            weight: if count_samples {
                PerfWeight::Samples
            } else {
                PerfWeight::Period
            },
            threads: self.threads,
            ..Default::default()
        }
    }
}

pub fn run(mut args: Args, max_input: u64) -> Result<ExitCode> {
    args.input_args.max_input = max_input;
    let transforms = args.transforms.to_transforms()?;
    args.otlp.check()?;
    let outputs = kiln_formats::PROFILE_OUTPUTS;
    let format = kiln_formats::output_format(
        args.output.as_deref(),
        args.output_format.as_deref(),
        outputs,
        Some(kiln_formats::Format::Folded),
    )?;
    let folded = format == kiln_formats::Format::Folded;
    // Folded output needs one row per stack, not per sample; other formats keep samples.
    let popts = PerfOptions {
        aggregate: folded,
        ..args.perf.to_options(args.transforms.count_samples)
    };
    super::common::check_output_not_input(
        args.output.as_deref(),
        &[args.input.as_deref()],
        folded
            && args
                .input
                .as_deref()
                .is_some_and(super::common::looks_folded),
    )?;
    let c = collapse_input(args.input.as_deref(), &args.input_args, popts, true, false)?;
    if c.after.is_some() {
        anyhow::bail!(
            "the input has two counts per line (a differential profile); render it with \
             `kiln flamegraph` or split it before collapsing"
        );
    }
    let profile = apply_transforms(c.profile, &transforms, args.input_args.quiet);
    let wopts = kiln_formats::WriteOptions {
        title: args.input.as_ref().map(|p| p.display().to_string()),
        uncompressed: args
            .output
            .as_deref()
            .is_some_and(kiln_formats::pprof_uncompressed),
        ..Default::default()
    };
    let to_stdout = args.otlp.to_stdout(args.output.as_deref());
    if args.output.is_some() || to_stdout {
        write_output(args.output.as_deref(), |w| {
            if folded {
                FoldedWriter::new(FoldedOptions::default()).write(&profile, w)?;
            } else {
                kiln_formats::write(std::slice::from_ref(&profile), format, &wopts, w)?;
            }
            Ok(())
        })?;
    }
    let otlp = kiln_formats::otlp::WriteOptions {
        time_nanos: wopts.time_nanos,
        comment: wopts.title.clone(),
        resource: Vec::new(),
    };
    args.otlp
        .send("collapse", std::slice::from_ref(&profile), &otlp)?;
    Ok(ExitCode::SUCCESS)
}
