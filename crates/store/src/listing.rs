//! What `kiln runs` lists of a run, kept beside its metadata: a line's worth of columns
//! written in the save's transaction (and filled for older runs when a store is migrated),
//! so that listing reads them and never a run's metadata. Also the one rule of what makes
//! runs the same configuration ([`configuration`]), kept as a column with an index so that
//! the runs of one configuration are found without reading the others.
use crate::model::{RunId, RunMeta};
use crate::Stored;
use sha2::Digest;

/// A run as `kiln runs` lists it: the columns kept beside its metadata.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Listed {
    /// Its id.
    pub id: RunId,
    /// Its name.
    pub name: String,
    /// Its group of `--repeat` runs.
    pub group: String,
    /// Start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// The measurement window ran to its end.
    pub complete: bool,
    /// The target's name (`comm`); empty for a damaged run.
    pub target: String,
    /// The load as a command line gives it ([`crate::LoadInfo`]'s `Display`); empty for a
    /// damaged run. Untrusted text: escape it before a terminal shows it.
    pub load: String,
    /// Operations completed per second.
    pub throughput: Option<f64>,
    /// Latency median, µs.
    pub p50_us: Option<f64>,
    /// 99th percentile, µs.
    pub p99_us: Option<f64>,
    /// Target CPU per operation, µs.
    pub cpu_per_op_us: Option<f64>,
    /// Its configuration's key ([`configuration`]); empty for a damaged run.
    pub config: String,
    /// What is wrong with a damaged run (its metadata does not parse or holds impossible
    /// values, [`crate::check_meta`]); `None` for a sound one.
    pub damaged: Option<String>,
}

impl Listed {
    /// The columns of a run read whole (its metadata as it reads back, or what is wrong
    /// with it): what a save writes, a migration fills in, and an older store opened to
    /// read lists from.
    pub fn of(s: &Stored, complete: bool) -> Listed {
        let mut l = Listed {
            id: s.id,
            name: s.name.clone(),
            group: s.group.clone(),
            started_unix_ms: s.started_unix_ms,
            complete,
            ..Listed::default()
        };
        match &s.meta {
            Ok(m) => {
                let h = &m.headline;
                l.complete = m.status.complete;
                l.target = m.target.comm.clone();
                l.load = m.load.to_string();
                l.throughput = h.throughput;
                l.p50_us = h.p50_us;
                l.p99_us = h.p99_us;
                l.cpu_per_op_us = h.cpu_per_op_us;
                l.config = configuration(m);
            }
            Err(what) => l.damaged = Some(what.clone()),
        }
        l
    }
}

/// What makes runs the same configuration, as a key (32 hex digits, a hash of the rule's
/// text) that runs of one configuration share: the load and its options, the target
/// executable and its build id, the host, the events and frequency, the tags in any order
/// (`--note` is free text and does not count). A configuration change on the server that
/// none of these show (a setting changed with `rabbitmqctl`) is the user's to tag (`--tag
/// tracing=on`). Kept beside each run ([`crate::Select::Config`]); `kiln compare` judges
/// by it too.
pub fn configuration(r: &RunMeta) -> String {
    let mut tags = r.tags.clone();
    tags.sort();
    let text = format!(
        "{}\0{}\0{}\0{}\0{}\0{}\0{}\0{:?}",
        r.load.protocol,
        r.load.argv.join(" "),
        r.target.exe,
        r.target.build_id,
        r.host,
        r.events.join(","),
        r.frequency,
        tags
    );
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The listing columns in the order the stores' statements give them after `id, name,
/// grp, started_ms, complete`.
pub(crate) const COLUMNS: &str =
    "target_comm, load_text, throughput, p50_us, p99_us, cpu_per_op_us, config, damaged";

/// The metadata column where a run's listing must be read from it: its columns are empty
/// (a row changed or written around kiln), or hold a figure no save writes (changed by
/// hand: `1e300`, a negative latency; NaN and infinities are past every bound) — the
/// bounds of [`crate::check_meta`].
pub(crate) const META_WHEN_NEEDED: &str = "CASE WHEN config IS NULL AND damaged IS NULL \
     OR throughput < 0 OR throughput > 1e12 \
     OR p50_us < 0 OR p50_us > 31536000000000 OR p99_us < 0 OR p99_us > 31536000000000 \
     OR cpu_per_op_us < 0 OR cpu_per_op_us > 1e12 THEN meta END";

/// The complete runs of one name, by configuration, as the listing columns give them: no
/// run's metadata is decoded, and only what finds a run is kept of each row, so a name
/// with 100,000 runs costs its listing. `kiln runs trend` and a name-as-baseline `kiln
/// compare` read this first, then the metadata of the newest runs only.
#[derive(Debug, Default)]
pub struct Configurations {
    /// Each configuration's key and its complete runs, oldest first (by start, then id);
    /// the configuration with the newest run first.
    pub configs: Vec<(String, Vec<RunRef>)>,
    /// Damaged runs of the name (`kiln runs check` lists them).
    pub damaged: usize,
    /// Incomplete runs of the name.
    pub incomplete: usize,
}

/// A run as [`Configurations`] keeps it: what finds it and orders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRef {
    /// Its id.
    pub id: RunId,
    /// Its start, ms since the Unix epoch.
    pub started_unix_ms: i64,
    /// Its group of `--repeat` runs.
    pub group: String,
}

/// The runs named `name` in `store`, as [`Configurations`].
pub fn configurations(store: &dyn crate::Store, name: &str) -> crate::Result<Configurations> {
    let mut out = Configurations::default();
    store.listing(crate::Select::Name(name), &mut |l| {
        if l.name != name {
            return;
        }
        if l.damaged.is_some() {
            out.damaged += 1;
        } else if !l.complete {
            out.incomplete += 1;
        } else {
            let r = RunRef {
                id: l.id,
                started_unix_ms: l.started_unix_ms,
                group: l.group,
            };
            match out.configs.iter_mut().find(|(k, _)| *k == l.config) {
                Some((_, runs)) => runs.push(r),
                None => out.configs.push((l.config, vec![r])),
            }
        }
    })?;
    for (_, runs) in &mut out.configs {
        runs.sort_by_key(|r| (r.started_unix_ms, r.id));
    }
    let newest = |runs: &Vec<RunRef>| runs.last().map(|r| (r.started_unix_ms, r.id));
    out.configs
        .sort_by_key(|(_, runs)| std::cmp::Reverse(newest(runs)));
    Ok(out)
}
