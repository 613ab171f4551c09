//! `kiln run --variant`: two or more variants of one experiment, each with the command
//! that puts the server into its state, run interleaved for `--repeat` rounds.
//!
//! A machine that drifts (other jobs, thermal or host contention) moves every run of a
//! round about alike, so runs of one round are compared with each other
//! (`kiln-compare`'s `rounds`) and the drift cancels. The order within a round is ABBA
//! by default — round r runs the variants in order when r is odd and in reverse when it
//! is even, so neither variant always goes first — or a random permutation per round
//! from a seed.
//!
//! ```text
//! kiln run --variant before='rabbitmqctl trace_off' --variant after='rabbitmqctl trace_on' \
//!     --repeat 6 -p "$(pgrep -o beam.smp)" -d 5 load amqp -r 25000
//! ```
use kiln_os::stop::Stop;
use kiln_store::{Attachment, CommandRecord, RunData};
use std::process::Command;
use std::time::Duration;

/// Why variants cannot be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VariantError {
    /// Not NAME=COMMAND.
    #[error("--variant '{0}': expected NAME=SETUP_COMMAND (e.g. --variant before='rabbitmqctl trace_off')")]
    Syntax(String),
    /// A name a run cannot have.
    #[error("--variant {name}: {why}")]
    Name {
        /// The name.
        name: String,
        /// Why not.
        why: String,
    },
    /// A name given twice.
    #[error("--variant {0} is given twice")]
    Twice(String),
    /// Fewer than two variants.
    #[error("an experiment needs two or more variants (--variant NAME=SETUP_COMMAND, repeated)")]
    TooFew,
    /// A --variant-pid that is not NAME=PID[,PID...] or names no variant.
    #[error("--variant-pid '{spec}': {why}")]
    Pid {
        /// As given.
        spec: String,
        /// Why not.
        why: String,
    },
    /// A set-up command that failed.
    #[error("variant '{variant}': its set-up command `{command}` {status}{output}")]
    SetupFailed {
        /// The variant.
        variant: String,
        /// The command.
        command: String,
        /// How it ended, in words.
        status: String,
        /// The end of its stderr, when it wrote any.
        output: String,
    },
    /// The shell could not be started.
    #[error("{role} `{command}`: cannot start sh: {source}")]
    Spawn {
        /// `setup` or `after-each`.
        role: String,
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
}

/// One variant: its name (its runs' name and group) and its set-up command.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Name.
    pub name: String,
    /// Run through `sh -c` before each of its runs.
    pub setup: String,
    /// Its own target (`--variant-pid`), else the run's `-p`.
    pub pids: Option<Vec<u32>>,
}

impl Variant {
    /// Parses `NAME=SETUP_COMMAND` (the first `=` ends the name; the command may be
    /// empty: nothing to set up).
    pub fn parse(spec: &str) -> Result<Variant, VariantError> {
        let (name, setup) = spec
            .split_once('=')
            .ok_or_else(|| VariantError::Syntax(spec.to_string()))?;
        let name = name.trim();
        kiln_store::check_name(name).map_err(|e| VariantError::Name {
            name: name.to_string(),
            why: e.to_string(),
        })?;
        if name.contains('@') {
            return Err(VariantError::Name {
                name: name.to_string(),
                why: "a variant's name cannot hold '@' (kiln compare reads NAME@STEP as a sweep's step)".into(),
            });
        }
        Ok(Variant {
            name: name.to_string(),
            setup: setup.to_string(),
            pids: None,
        })
    }
}

/// The order of the variants within each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// In order in odd rounds, reversed in even ones (A B, B A, A B...).
    Abba,
    /// A random permutation per round, from this seed.
    Random(u64),
}

/// One run of the experiment: its round (1-based) and the variant's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The round.
    pub round: u32,
    /// Index into the experiment's variants.
    pub variant: usize,
}

/// Variants run interleaved.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// Its id, shared by all its runs (`before/after@1764301234567`).
    pub id: String,
    /// The variants, two or more, names distinct.
    pub variants: Vec<Variant>,
    /// Rounds (`--repeat`).
    pub rounds: u32,
    /// The order within rounds.
    pub order: Order,
}

impl Experiment {
    /// An experiment of `specs` (`NAME=SETUP_COMMAND` each) with `pid_specs`
    /// (`NAME=PID[,PID...]` each), started at `unix_ms`.
    pub fn new(
        specs: &[String],
        pid_specs: &[String],
        rounds: u32,
        order: Order,
        unix_ms: i64,
    ) -> Result<Experiment, VariantError> {
        let mut variants: Vec<Variant> = Vec::new();
        for s in specs {
            let v = Variant::parse(s)?;
            if variants.iter().any(|w| w.name == v.name) {
                return Err(VariantError::Twice(v.name));
            }
            variants.push(v);
        }
        if variants.len() < 2 {
            return Err(VariantError::TooFew);
        }
        for spec in pid_specs {
            let bad = |why: &str| VariantError::Pid {
                spec: spec.clone(),
                why: why.to_string(),
            };
            let (name, pids) = spec
                .split_once('=')
                .ok_or_else(|| bad("expected NAME=PID[,PID...]"))?;
            let pids = pids
                .split(',')
                .map(|p| p.trim().parse::<u32>().ok().filter(|p| *p > 0))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| bad("a PID is a positive number"))?;
            let v = variants
                .iter_mut()
                .find(|v| v.name == name.trim())
                .ok_or_else(|| bad("no --variant of that name"))?;
            v.pids.get_or_insert_with(Vec::new).extend(pids);
        }
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        Ok(Experiment {
            id: format!("{}@{unix_ms}", names.join("/")),
            variants,
            rounds,
            order,
        })
    }

    /// The group a variant's runs are stored under.
    pub fn group(&self, variant: usize) -> String {
        let at = self.id.rsplit('@').next().unwrap_or("");
        format!("{}@{at}", self.variants[variant].name)
    }

    /// Every run in the order they are made.
    pub fn steps(&self) -> Vec<Turn> {
        schedule(self.variants.len(), self.rounds, self.order)
    }
}

/// The runs of `variants` variants over `rounds` rounds, in order.
pub fn schedule(variants: usize, rounds: u32, order: Order) -> Vec<Turn> {
    let mut rng = match order {
        Order::Random(seed) => Some(SplitMix(seed)),
        Order::Abba => None,
    };
    let mut steps = Vec::with_capacity(variants * rounds as usize);
    for round in 1..=rounds {
        let mut idx: Vec<usize> = (0..variants).collect();
        match rng.as_mut() {
            None if round % 2 == 0 => idx.reverse(),
            None => {}
            Some(r) => {
                // Fisher–Yates.
                for i in (1..idx.len()).rev() {
                    let j = (r.next() % (i as u64 + 1)) as usize;
                    idx.swap(i, j);
                }
            }
        }
        steps.extend(idx.into_iter().map(|variant| Turn { round, variant }));
    }
    steps
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a seeded sequence, the same on every host.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A command run around a run, with what it wrote (its head and tail, within
/// [`kiln_os::child::CAPTURE_LIMIT`] bytes a stream).
#[derive(Clone, Debug)]
pub struct Ran {
    /// The command and how it ended.
    pub record: CommandRecord,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
    /// The signal whose stop ended it, when one did.
    pub signal_stop: Option<i32>,
}

impl Ran {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.record.exit_code == Some(0)
    }

    /// How it ended, in words: `exited with status 3`, `was ended by signal 9`, `was
    /// ended by kiln: it ran past --setup-timeout 600 s`.
    pub fn status_text(&self) -> String {
        if let Some(why) = &self.record.stopped {
            return format!("was ended by kiln: {why}");
        }
        match (self.record.exit_code, self.record.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was ended by signal {s}"),
            (None, None) => "ended without a status".into(),
        }
    }

    /// Whether kiln ended it because a signal asked kiln to stop.
    pub fn stopped_by_signal(&self) -> bool {
        self.signal_stop.is_some()
    }

    /// Keeps it with `run`: the record in its metadata, the output (when there is any)
    /// as the attachments `ROLE.stdout` and `ROLE.stderr`.
    pub fn keep(self, run: &mut RunData) {
        let (record, attachments) = self.split();
        run.attachments.extend(attachments);
        run.meta.commands.push(record);
    }

    /// Its record and its output as the attachments `ROLE.stdout` and `ROLE.stderr` (those
    /// that are not empty).
    pub fn split(self) -> (CommandRecord, Vec<Attachment>) {
        let mut attachments = Vec::new();
        for (what, data) in [("stdout", self.stdout), ("stderr", self.stderr)] {
            if !data.is_empty() {
                attachments.push(Attachment {
                    name: format!("{}.{what}", self.record.role),
                    data,
                });
            }
        }
        (self.record, attachments)
    }

    /// The error for a variant's set-up that failed.
    pub fn setup_failed(&self, variant: &str) -> VariantError {
        let err = String::from_utf8_lossy(&self.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        let output = if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.into_iter().rev().collect();
            format!("; its stderr ends:\n  {}", lines.join("\n  "))
        };
        VariantError::SetupFailed {
            variant: variant.to_string(),
            command: self.record.command.clone(),
            status: self.status_text(),
            output,
        }
    }
}

/// Runs `command` through `sh -c` (stdin empty), its output kept within a bound; `role` is
/// `setup` or `after-each`. It runs in a process group of its own that kiln ends — within
/// a second — when `stop` is raised or after `timeout` (`--setup-timeout`), and that dies
/// with kiln ([`kiln_os::child`]).
pub fn run_command(
    role: &str,
    command: &str,
    stop: &Stop,
    timeout: Duration,
) -> Result<Ran, VariantError> {
    use kiln_os::child::Ended;
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(command);
    let f = kiln_os::child::run(sh, stop, timeout).map_err(|source| VariantError::Spawn {
        role: role.to_string(),
        command: command.to_string(),
        source,
    })?;
    let (stopped, signal_stop) = match f.ended {
        Ended::Itself => (None, None),
        Ended::Stopped(sig) => (
            Some(match sig {
                Some(s) => format!("stopped on {}", signal_name(s)),
                None => "stopped".to_string(),
            }),
            sig,
        ),
        Ended::TimedOut(t) => (
            Some(format!("it ran past --setup-timeout {} s", t.as_secs_f64())),
            None,
        ),
    };
    let notes = [f.stdout.note("stdout"), f.stderr.note("stderr")]
        .into_iter()
        .flatten()
        .collect();
    Ok(Ran {
        record: CommandRecord {
            role: role.to_string(),
            command: command.to_string(),
            exit_code: f.code(),
            signal: f.signal(),
            stopped,
            notes,
        },
        stdout: f.stdout.data,
        stderr: f.stderr.data,
        signal_stop,
    })
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        s => format!("signal {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(steps: &[Turn]) -> Vec<(u32, usize)> {
        steps.iter().map(|s| (s.round, s.variant)).collect()
    }

    #[test]
    fn abba_and_seeded_rounds() {
        assert_eq!(
            order(&schedule(2, 4, Order::Abba)),
            [
                (1, 0),
                (1, 1),
                (2, 1),
                (2, 0),
                (3, 0),
                (3, 1),
                (4, 1),
                (4, 0)
            ]
        );
        assert_eq!(
            order(&schedule(3, 2, Order::Abba)),
            [(1, 0), (1, 1), (1, 2), (2, 2), (2, 1), (2, 0)]
        );
        // Random: each round a permutation, the same for the same seed, and not always
        // the same order (12 rounds of 2: all alike has probability 2^-11).
        let a = schedule(3, 12, Order::Random(7));
        assert_eq!(a, schedule(3, 12, Order::Random(7)));
        assert_ne!(a, schedule(3, 12, Order::Random(8)));
        for r in 1..=12 {
            let mut v: Vec<usize> = a
                .iter()
                .filter(|s| s.round == r)
                .map(|s| s.variant)
                .collect();
            v.sort();
            assert_eq!(v, [0, 1, 2], "round {r}");
        }
        let two = schedule(2, 12, Order::Random(7));
        let firsts: Vec<usize> = two.chunks(2).map(|c| c[0].variant).collect();
        assert!(firsts.contains(&0) && firsts.contains(&1), "{firsts:?}");
    }

    #[test]
    fn variants_parse() {
        let specs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let x = Experiment::new(
            &specs(&["before=rabbitmqctl trace_off", "after=echo a=b"]),
            &specs(&["after=12,13"]),
            6,
            Order::Abba,
            1000,
        )
        .unwrap();
        assert_eq!(x.id, "before/after@1000");
        assert_eq!(x.variants[1].setup, "echo a=b");
        assert_eq!(x.variants[1].pids, Some(vec![12, 13]));
        assert_eq!(x.variants[0].pids, None);
        assert_eq!(x.group(1), "after@1000");
        assert_eq!(x.steps().len(), 12);
        let err = |v: &[&str], p: &[&str]| {
            Experiment::new(&specs(v), &specs(p), 6, Order::Abba, 1)
                .unwrap_err()
                .to_string()
        };
        assert!(err(&["a=true"], &[]).contains("two or more variants"));
        assert!(err(&["a=true", "a=false"], &[]).contains("--variant a is given twice"));
        assert!(err(&["nocommand", "b=x"], &[]).contains("expected NAME=SETUP_COMMAND"));
        assert!(err(&["12=x", "b=x"], &[]).starts_with("--variant 12:"));
        assert!(err(&["a=x", "b=x"], &["c=1"]).contains("no --variant of that name"));
        assert!(err(&["a=x", "b=x"], &["a=x1"]).contains("a PID is a positive number"));
    }

    #[test]
    fn commands_run_through_sh_and_keep_their_output() {
        let forever = Duration::from_secs(3600);
        let run_command = |role: &str, c: &str| run_command(role, c, &Stop::new(), forever);
        let ran = run_command("setup", "echo out; echo err >&2; exit 3").unwrap();
        assert!(!ran.ok());
        assert_eq!(ran.status_text(), "exited with status 3");
        let e = ran.setup_failed("after").to_string();
        assert_eq!(
            e,
            "variant 'after': its set-up command `echo out; echo err >&2; exit 3` exited with status 3; its stderr ends:\n  err"
        );
        let mut run = RunData::default();
        ran.keep(&mut run);
        assert_eq!(run.meta.commands[0].exit_code, Some(3));
        let names: Vec<&str> = run.attachments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["setup.stdout", "setup.stderr"]);
        assert_eq!(run.attachments[0].data, b"out\n");
        let killed = run_command("after-each", "kill -9 $$").unwrap();
        assert_eq!(killed.status_text(), "was ended by signal 9");
        assert!(run_command("setup", "true").unwrap().ok());
        let hung = super::run_command(
            "setup",
            "sleep 100000",
            &Stop::new(),
            Duration::from_millis(50),
        )
        .unwrap();
        assert!(!hung.ok());
        assert_eq!(
            hung.status_text(),
            "was ended by kiln: it ran past --setup-timeout 0.05 s"
        );
        assert!(!hung.stopped_by_signal());
        let stop = Stop::new();
        stop.raise_for_signal(libc::SIGTERM);
        let stopped = super::run_command("after-each", "sleep 100000", &stop, forever).unwrap();
        assert_eq!(
            stopped.status_text(),
            "was ended by kiln: stopped on SIGTERM"
        );
        assert!(stopped.stopped_by_signal());
    }
}
