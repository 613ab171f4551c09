//! Flag groups shared by several subcommands, and their conversion into library options.
use anyhow::{Context, Result};
use kiln_model::transform::{default_merge_rules, regex, MergeRule, Transforms};
use std::io::{self, IsTerminal, Write};
use std::path::Path;

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

    /// Replace hexadecimal addresses in names by `0x?`.
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
