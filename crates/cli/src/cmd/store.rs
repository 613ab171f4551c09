//! The run store as the commands see it: `--store`, `KILN_STORE`, run references.
use anyhow::{Context, Result};
use kiln_store::{RunMeta, Store, StoreError};
use std::path::{Path, PathBuf};

/// `--store`, shared by the commands that keep or read runs.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The run store: an SQLite file (created if missing), or a PostgreSQL database that
    /// several machines share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB (its tables are
    /// created on first use). Default: $KILN_STORE, else ./kiln-runs.db.
    #[arg(long, value_name = "FILE|URL", global = true)]
    pub store: Option<PathBuf>,

    /// The most bytes a stored blob may inflate to: `--max-input`, a global flag the
    /// command sets here; every store opened through these arguments holds it.
    #[arg(skip = kiln_model::input::DEFAULT_LIMIT)]
    pub max_input: u64,
}

impl Default for StoreArgs {
    fn default() -> Self {
        StoreArgs {
            store: None,
            max_input: kiln_model::input::DEFAULT_LIMIT,
        }
    }
}

impl StoreArgs {
    /// The store's location as given (a file, or a URL with its password).
    pub fn location(&self) -> PathBuf {
        kiln_store::default_location(self.store.as_deref())
    }

    /// The location for messages (a URL without its password).
    fn shown(&self) -> String {
        let l = self.location();
        match l.to_str() {
            Some(s) if kiln_store::is_url(&l) => kiln_store::redact(s),
            _ => l.display().to_string(),
        }
    }

    /// Opens (or creates) the store.
    pub fn open(&self) -> Result<Box<dyn Store>> {
        match kiln_store::open(&self.location()) {
            Ok(mut s) => {
                s.set_max_input(self.max_input);
                Ok(s)
            }
            // Already names the store (without its password).
            Err(e @ (StoreError::Postgres { .. } | StoreError::Damaged { .. })) => Err(e.into()),
            Err(e) => {
                Err(e).with_context(|| format!("Cannot open the run store '{}'", self.shown()))
            }
        }
    }

    /// Opens an existing store to read it, read-only (reading commands: a missing store
    /// is an error, not a new empty one).
    pub fn open_existing(&self) -> Result<Box<dyn Store>> {
        self.existing(kiln_store::open_existing)
    }

    /// Opens an existing store to change it (`kiln runs rm`).
    pub fn open_existing_to_write(&self) -> Result<Box<dyn Store>> {
        self.existing(kiln_store::open_existing_to_write)
    }

    fn existing(
        &self,
        open: fn(&Path) -> kiln_store::Result<Box<dyn Store>>,
    ) -> Result<Box<dyn Store>> {
        match open(&self.location()) {
            Ok(mut s) => {
                s.set_max_input(self.max_input);
                Ok(s)
            }
            Err(
                e @ (StoreError::Missing { .. }
                | StoreError::Postgres { .. }
                | StoreError::Damaged { .. }),
            ) => Err(e.into()),
            Err(e) => {
                Err(e).with_context(|| format!("Cannot open the run store '{}'", self.shown()))
            }
        }
    }
}

/// The runs `reference` names: `NAME` (its latest group of repeats), `#ID`/`id:ID`/`ID`,
/// `name:NAME` (the rule: [`kiln_store::Reference`]), and `REF@WINDOW`, a window of each (a sweep step: `sweep@48`, `sweep@connections=48`; a span of seconds of its measurement: `before@10-20`), whose
/// metadata then holds that window as its measurement and the window's own figures.
pub fn resolve(store: &dyn Store, reference: &str) -> Result<Vec<RunMeta>> {
    match store.resolve(reference) {
        Ok(runs) => Ok(runs),
        Err(e) => Ok(resolve_window(store, reference, e)?
            .into_iter()
            .map(|d| d.meta)
            .collect()),
    }
}

/// The runs `reference` names as [`resolve`] does, each loaded; a window's run holds the
/// window's figures and its profiles cut to the window's samples.
pub fn resolve_data(store: &dyn Store, reference: &str) -> Result<Vec<kiln_store::RunData>> {
    match store.resolve(reference) {
        Ok(runs) => runs
            .iter()
            .map(|m| Ok(store.load(m.id.context("run without id")?)?))
            .collect(),
        Err(e) => resolve_window(store, reference, e),
    }
}

/// `REF@WINDOW` once the store did not know `reference` as a whole (`err`, returned when
/// it is no window either).
fn resolve_window(
    store: &dyn Store,
    reference: &str,
    err: StoreError,
) -> Result<Vec<kiln_store::RunData>> {
    let Some((run, window)) = reference.rsplit_once('@') else {
        return Err(err.into());
    };
    let runs = store.resolve(run)?;
    let mut out = Vec::new();
    for m in runs {
        let w = named_window(&m, run, window)?;
        let data = store.load(m.id.context("run without id")?)?;
        check_seconds(&data, run, &w)?;
        out.push(kiln_compare::window::window_data(data, &w));
    }
    Ok(out)
}

/// A window's figures come from the seconds whose middle lies in it: one that holds no
/// such second has none, and is an error rather than a comparison of nothing.
fn check_seconds(data: &kiln_store::RunData, run: &str, w: &kiln_store::Window) -> Result<()> {
    if kiln_store::window::seconds_in(data, w) == Some(0) {
        anyhow::bail!(
            "window '{}' of run '{}' (#{}) holds no whole second of the run's per-second figures (a second counts in the window its middle lies in): give a span of a second or more",
            kiln_model::text::clean_cut(&w.name, 80),
            kiln_model::text::clean_cut(run, 80),
            data.meta.id.unwrap_or(0)
        );
    }
    Ok(())
}

/// The latest run `reference` names, loaded once, and how many runs it names; for
/// `REF@WINDOW`, the run seen through the window: its metadata the window's (its
/// measurement and headline figures), its series and samples whole.
pub fn latest_data(store: &dyn Store, reference: &str) -> Result<(kiln_store::RunData, usize)> {
    let (runs, window) = match store.resolve(reference) {
        Ok(runs) => (runs, None),
        Err(e) => {
            let Some((run, window)) = reference.rsplit_once('@') else {
                return Err(e.into());
            };
            (store.resolve(run)?, Some((run, window)))
        }
    };
    let n = runs.len();
    let last = runs.into_iter().last().context("no run")?;
    let mut data = store.load(last.id.context("run without id")?)?;
    if let Some((run, window)) = window {
        let w = named_window(&data.meta, run, window)?;
        check_seconds(&data, run, &w)?;
        data.meta = kiln_compare::window::window_view(&data, &w);
    }
    Ok((data, n))
}

/// The window `window` of run `m` (named `run`), or an error naming the windows it has.
fn named_window(m: &RunMeta, run: &str, window: &str) -> Result<kiln_store::Window> {
    kiln_compare::window::find_window(m, window).with_context(|| {
        let names: Vec<&str> = m.windows.iter().map(|w| w.name.as_str()).collect();
        format!(
            "run '{}' (#{}) has no window '{}' (it has: measure{}{}; or give a span of its measurement's seconds, START-END: @10-20)",
            kiln_model::text::clean_cut(run, 80),
            m.id.unwrap_or(0),
            kiln_model::text::clean_cut(window, 80),
            if names.is_empty() { "" } else { ", " },
            kiln_model::text::clean_cut(&names.join(", "), 300)
        )
    })
}

/// The profiles of a group of runs, one per event, repeats merged: what profile readers
/// (`flamegraph run:before`) see. Runs seen through a window (`sweep@48`) give that
/// window's samples only.
pub fn group_profiles(store: &dyn Store, runs: &[RunMeta]) -> Result<Vec<kiln_model::Profile>> {
    let mut merged: Vec<kiln_model::Profile> = Vec::new();
    for r in runs {
        for p in run_profiles(store, r)? {
            match merged.iter_mut().find(|m| m.event.name == p.event.name) {
                Some(m) => m.merge_from(&p),
                None => merged.push(p),
            }
        }
    }
    Ok(merged)
}

/// The profiles of one run, one per event; a run seen through a window (`sweep@48`)
/// gives that window's samples only.
pub fn run_profiles(store: &dyn Store, r: &RunMeta) -> Result<Vec<kiln_model::Profile>> {
    let id = r.id.context("run without id")?;
    let windowed = r.measure.name != "measure";
    Ok(store
        .profiles(id)?
        .into_iter()
        .map(|p| {
            if windowed {
                p.time_slice(r.measure.start_ns, r.measure.end_ns)
            } else {
                p
            }
        })
        .collect())
}

/// A whole run as `r` sees it: a window of it (a sweep's step, `RUN@A-B`) cut to its
/// seconds, with its figures and its samples.
pub fn run_data(store: &dyn Store, r: &RunMeta) -> Result<kiln_store::RunData> {
    let id = r.id.context("run without id")?;
    let data = store.load(id)?;
    Ok(if r.measure.name != "measure" {
        kiln_store::window::window_data(data, &r.measure)
    } else {
        data
    })
}

/// A profile input that is a stored run: `run:REF` (in the default store), or a file that
/// is a store (an exported run; its latest run). Its blobs inflate to at most `max_input`
/// bytes (the input limit).
pub fn run_input(
    path: &Path,
    max_input: u64,
) -> Option<Result<(String, Vec<kiln_model::Profile>)>> {
    let s = path.to_str()?;
    if let Some(reference) = s.strip_prefix("run:") {
        if path.exists() {
            return None;
        }
        let args = StoreArgs {
            store: None,
            max_input,
        };
        return Some((|| {
            let store = args.open_existing()?;
            let runs = resolve(&*store, reference)?;
            let name = format!("run:{reference}");
            Ok((name, group_profiles(&*store, &runs)?))
        })());
    }
    None
}
