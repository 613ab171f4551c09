//! What a run measures: named counters, latency histograms and flags, per second and in
//! total, whatever the protocol.
use hdrhistogram::Histogram;
use serde::ser::SerializeMap;
use std::borrow::Cow;

/// A name or unit: static when a driver declares it, owned when read back from JSON.
pub type Name = Cow<'static, str>;

/// When a counter appears in the per-second text line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Always.
    Always,
    /// When it is not zero.
    NonZero,
    /// When it is not zero or this latency was measured.
    NonZeroOrLatency(LatencyId),
    /// Never (the files still have it).
    Never,
}

/// A counter a protocol keeps (`sent`, `requests`, `connected`…).
#[derive(Debug, Clone, Copy)]
pub struct CounterDef {
    /// Name in the series, the files and [`Tick::counter`].
    pub name: &'static str,
    /// What one count is: `msg`, `req`, `conn`, `B`…
    pub unit: &'static str,
    /// One line for people.
    pub description: &'static str,
    /// When the per-second line shows it.
    pub show: Show,
    /// The summary's average-rate line label (`sending rate`), if it has one.
    pub rate_label: Option<&'static str>,
}

impl CounterDef {
    /// A counter without a summary rate line.
    pub const fn new(
        name: &'static str,
        unit: &'static str,
        description: &'static str,
        show: Show,
    ) -> Self {
        CounterDef {
            name,
            unit,
            description,
            show,
            rate_label: None,
        }
    }
    /// The same counter with the summary's average-rate line `label`.
    pub const fn rate(self, label: &'static str) -> Self {
        CounterDef {
            rate_label: Some(label),
            ..self
        }
    }
}

/// A latency a protocol measures, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct LatencyDef {
    /// Name in the series and JSON (`consumer_latency`).
    pub name: &'static str,
    /// Column prefix in CSV (`consumer` → `consumer_p99_us`).
    pub csv: &'static str,
    /// Label in the per-second line (`min/median/…/max consumer latency`).
    pub line_label: &'static str,
    /// Label in the summary (`consumer latency`).
    pub summary_label: &'static str,
    /// One line for people: service time or from the intended send time, and of what.
    pub description: &'static str,
}

/// A condition marked on the seconds it held in (`blocked`, `stalled`, `disconnected`).
#[derive(Debug, Clone, Copy)]
pub struct FlagDef {
    /// Name in the series and files.
    pub name: &'static str,
    /// The marker in the per-second line (`BLOCKED`).
    pub marker: &'static str,
    /// One line for people.
    pub description: &'static str,
}

/// A level a protocol observes at the end of each second, not counted by its agents: the
/// depth of the queue a load feeds (`queue_depth`), read from the broker itself.
#[derive(Debug, Clone, Copy)]
pub struct LevelDef {
    /// Name in the series and files.
    pub name: &'static str,
    /// What one unit is (`msg`).
    pub unit: &'static str,
    /// One line for people: what is observed, and how.
    pub description: &'static str,
}

/// Whether two names are equal, at compile time.
const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A typed handle of one entry of a protocol's table of counters, latencies or flags: a
/// driver names what it counts with these (its `Metrics` struct), the engine's [`Ctx`]
/// takes only the right kind, and a name that is not in the table does not compile.
///
/// [`Ctx`]: crate::engine::Ctx
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $def:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name {
            index: usize,
            name: &'static str,
        }

        impl $name {
            /// The entry named `name` in `defs`, found at compile time when called in a
            /// `const`: a name and its position cannot disagree.
            pub(crate) const fn named(defs: &[$def], name: &str) -> Self {
                let mut i = 0;
                while i < defs.len() {
                    if same_name(defs[i].name, name) {
                        return $name {
                            index: i,
                            name: defs[i].name,
                        };
                    }
                    i += 1;
                }
                panic!(concat!("no ", $what, " of that name in the table"))
            }

            /// Its position in the schema's table, and in a [`Tick`]'s list of the same kind.
            pub const fn index(self) -> usize {
                self.index
            }

            /// Its name in the schema's table, the series and the files.
            pub const fn name(self) -> &'static str {
                self.name
            }

            /// The entry of this handle in `list` (a list of this kind, in the schema's
            /// order when it was counted with it): at its position when the name there
            /// agrees, else found by name (a list read back from a file), else none.
            pub(crate) fn find<T>(self, list: &[T], name_of: impl Fn(&T) -> &str) -> Option<&T> {
                list.get(self.index)
                    .filter(|x| name_of(x) == self.name)
                    .or_else(|| list.iter().find(|x| name_of(x) == self.name))
            }
        }

        impl $def {
            /// The handle of `defs[index]`.
            fn handle(defs: &'static [$def], index: usize) -> $name {
                $name {
                    index,
                    name: defs[index].name,
                }
            }
        }
    };
}

handle!(
    /// A counter of a protocol's [`Schema`].
    CounterId,
    CounterDef,
    "counter"
);
handle!(
    /// A latency of a protocol's [`Schema`].
    LatencyId,
    LatencyDef,
    "latency"
);
handle!(
    /// A flag of a protocol's [`Schema`].
    FlagId,
    FlagDef,
    "flag"
);
handle!(
    /// A level of a protocol's [`Schema`].
    LevelId,
    LevelDef,
    "level"
);

/// Declares a driver's `Metrics` struct and its value `M`: one typed handle per counter,
/// latency and flag it counts, each field named as the entry of its table (so a name
/// not in the table does not compile), and any arrays of handles the driver indexes
/// (HTTP's status classes).
///
/// ```ignore
/// metrics! {
///     counters(COUNTERS) { sent, received }
///     latencies(LATENCIES) { latency }
///     flags(FLAGS) { stalled }
/// }
/// ctx.add(agent, M.sent, 1);
/// ```
macro_rules! metrics {
    (
        counters($ct:expr) { $($c:ident),* $(,)? }
        latencies($lt:expr) { $($l:ident),* $(,)? }
        flags($ft:expr) { $($f:ident),* $(,)? }
        $(levels($vt:expr) { $($v:ident),* $(,)? })?
        $(arrays { $($(#[$am:meta])* $a:ident: $aty:ty = $av:expr),* $(,)? })?
    ) => {
        /// What the driver counts, by name: typed handles into its tables, made at compile
        /// time, so the engine's [`Ctx`](crate::engine::Ctx) takes a counter where a counter
        /// is meant and a latency where a latency is.
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct Metrics {
            $(
                #[doc = concat!("Counter `", stringify!($c), "`.")]
                pub(crate) $c: $crate::engine::stats::CounterId,
            )*
            $(
                #[doc = concat!("Latency `", stringify!($l), "`.")]
                pub(crate) $l: $crate::engine::stats::LatencyId,
            )*
            $(
                #[doc = concat!("Flag `", stringify!($f), "`.")]
                pub(crate) $f: $crate::engine::stats::FlagId,
            )*
            $($(
                #[doc = concat!("Level `", stringify!($v), "`.")]
                pub(crate) $v: $crate::engine::stats::LevelId,
            )*)?
            $($($(#[$am])* pub(crate) $a: $aty,)*)?
        }

        /// The driver's metrics.
        pub(crate) const M: Metrics = Metrics {
            $($c: $crate::engine::stats::CounterId::named($ct, stringify!($c)),)*
            $($l: $crate::engine::stats::LatencyId::named($lt, stringify!($l)),)*
            $($f: $crate::engine::stats::FlagId::named($ft, stringify!($f)),)*
            $($($v: $crate::engine::stats::LevelId::named($vt, stringify!($v)),)*)?
            $($($a: $av,)*)?
        };
    };
}
pub(crate) use metrics;

/// Everything a protocol measures, declared once by its driver.
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    /// Protocol name (`amqp`, `mqtt`, `http`).
    pub protocol: &'static str,
    /// Counters, in series order.
    pub counters: &'static [CounterDef],
    /// Latencies (microseconds), in series order.
    pub latencies: &'static [LatencyDef],
    /// Flags, in series order.
    pub flags: &'static [FlagDef],
    /// Levels observed at the end of each second, in series order.
    pub levels: &'static [LevelDef],
    /// The counter whose rate is the headline throughput.
    pub throughput: CounterId,
    /// Unit of the throughput (`msg/s`, `req/s`).
    pub throughput_unit: &'static str,
    /// The counter of operations sent (messages published, requests written).
    pub sent: CounterId,
    /// The flag the engine sets when the counter beside it stayed at 0 in a second in
    /// which the driver expected traffic.
    pub stall: Option<(FlagId, CounterId)>,
}

impl Schema {
    /// The counter named `name` (for names that come from outside, a user's or a file's).
    pub fn counter(&self, name: &str) -> Option<CounterId> {
        let i = self.counters.iter().position(|c| c.name == name)?;
        Some(CounterDef::handle(self.counters, i))
    }
    /// The latency named `name`.
    pub fn latency(&self, name: &str) -> Option<LatencyId> {
        let i = self.latencies.iter().position(|c| c.name == name)?;
        Some(LatencyDef::handle(self.latencies, i))
    }
    /// The flag named `name`.
    pub fn flag(&self, name: &str) -> Option<FlagId> {
        let i = self.flags.iter().position(|c| c.name == name)?;
        Some(FlagDef::handle(self.flags, i))
    }
    /// The level named `name`.
    pub fn level(&self, name: &str) -> Option<LevelId> {
        let i = self.levels.iter().position(|c| c.name == name)?;
        Some(LevelDef::handle(self.levels, i))
    }
    /// The definition of `counter`.
    pub fn counter_def(&self, counter: CounterId) -> &'static CounterDef {
        &self.counters[counter.index]
    }
    /// The counters with `values` (in series order), named and with their units.
    pub fn counts(&self, values: &[u64]) -> Vec<Count> {
        self.counters
            .iter()
            .zip(values)
            .map(|(c, &v)| Count {
                name: c.name.into(),
                unit: c.unit.into(),
                value: v,
            })
            .collect()
    }
    /// The latencies' percentiles from `histograms` (in series order; none where a
    /// latency has no histogram or it is empty).
    pub(crate) fn latency_percentiles(
        &self,
        histograms: &[Option<Histogram<u64>>],
    ) -> Vec<Latency> {
        self.latencies
            .iter()
            .zip(histograms)
            .map(|(l, h)| Latency {
                name: l.name.into(),
                unit: "µs".into(),
                percentiles: h.as_ref().and_then(Percentiles::of),
            })
            .collect()
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Percentiles {
    /// Number of measured values.
    pub count: u64,
    /// Minimum.
    pub min_us: u64,
    /// Median.
    pub p50_us: u64,
    /// 75th percentile.
    pub p75_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// 99.9th percentile.
    pub p999_us: u64,
    /// Maximum.
    pub max_us: u64,
}

impl Percentiles {
    /// The percentiles of `h`, `None` when it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        Some(Percentiles {
            count: h.len(),
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.5),
            p75_us: h.value_at_quantile(0.75),
            p95_us: h.value_at_quantile(0.95),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        })
    }
}

/// A new latency histogram: 1 µs to 1 hour at 3 significant digits (~190 KB, allocated on
/// first use, so thousands of idle agents cost nothing).
pub(crate) fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds are valid")
}

/// Records `us` into a lazily allocated histogram (values beyond an hour are clamped).
#[inline]
pub fn record(h: &mut Option<Histogram<u64>>, us: u64) {
    h.get_or_insert_with(new_hist).saturating_record(us.max(1));
}

/// Adds `from` into `into` (allocating it on first use).
pub fn merge(into: &mut Option<Histogram<u64>>, from: &Histogram<u64>) {
    if !from.is_empty() {
        let _ = into.get_or_insert_with(new_hist).add(from);
    }
}

/// One named count in a [`Tick`] or a total.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Count {
    /// Counter name.
    pub name: Name,
    /// Unit of one count.
    pub unit: Name,
    /// The count.
    pub value: u64,
}

/// One named latency in a [`Tick`] or the headline (microseconds).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    /// Latency name.
    pub name: Name,
    /// Always `µs`.
    pub unit: Name,
    /// Percentiles, `None` when nothing was measured.
    pub percentiles: Option<Percentiles>,
}

/// One named flag in a [`Tick`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flag {
    /// Flag name.
    pub name: Name,
    /// Whether it held at some point of the interval.
    pub value: bool,
}

/// One named level in a [`Tick`]: its value at the end of the interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Level {
    /// Level name.
    pub name: Name,
    /// Its unit.
    pub unit: Name,
    /// The latest observation in the interval, `None` when none succeeded.
    pub value: Option<f64>,
}

/// One second of a run, the same shape for every protocol.
///
/// In JSON the counters, latencies and flags are flattened into the object by name
/// (`{"time_s":1.0,"interval_s":1.0,"end_mono_ns":…,"sent":5000,…,"consumer_latency":{…},
/// "blocked":false}`), the shape `kiln load amqp` has always written.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Seconds since the load started, at the end of this interval.
    pub time_s: f64,
    /// Length of the interval in seconds (about 1; shorter for the last one).
    pub interval_s: f64,
    /// `CLOCK_MONOTONIC` ns at the end of the interval (the clock of `kiln record`).
    pub end_mono_ns: u64,
    /// Counts in the interval, in the protocol's order.
    pub counters: Vec<Count>,
    /// Latency percentiles of the interval.
    pub latencies: Vec<Latency>,
    /// Conditions that held in the interval.
    pub flags: Vec<Flag>,
    /// Levels observed at the end of the interval (the queue's depth), in the protocol's
    /// order; written under `levels` in JSON.
    pub levels: Vec<Level>,
    /// In a sweep, the index of the step (in [`crate::Report::steps`]) this second belongs
    /// to; `time_s` is then counted from that step's start.
    pub step: Option<u32>,
    /// The interval's latency histograms (µs), in the schema's order, for callers that
    /// merge exact percentiles over a window of their own (`kiln run`). Present only in the
    /// tick handed to `on_tick`: the report's series keeps percentiles, so a long run's
    /// memory does not grow by a histogram a second.
    pub histograms: Vec<Option<Histogram<u64>>>,
}

impl Tick {
    /// The count of `name` in this interval (0 if the protocol has no such counter).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.value)
    }

    /// The count of `counter` (of the schema this second was counted with) in this
    /// interval; `None` in a second read back from a file without it.
    pub fn count_of(&self, counter: CounterId) -> Option<u64> {
        counter.find(&self.counters, |c| &c.name).map(|c| c.value)
    }

    /// Every counter of this interval with its rate per second, in the schema's order.
    pub fn rates(&self) -> impl Iterator<Item = (&Count, f64)> + '_ {
        self.counters
            .iter()
            .map(|c| (c, per_second(c.value, self.interval_s)))
    }

    /// `name` per second in this interval.
    pub fn rate(&self, name: &str) -> f64 {
        per_second(self.counter(name), self.interval_s)
    }

    /// The latency `name` in this interval.
    pub fn latency(&self, name: &str) -> Option<&Percentiles> {
        self.latencies
            .iter()
            .find(|l| l.name == name)
            .and_then(|l| l.percentiles.as_ref())
    }

    /// The level `level` (of the schema this second was counted with) at the end of this
    /// interval, when it was observed.
    pub fn level_of(&self, level: LevelId) -> Option<f64> {
        level.find(&self.levels, |l| &l.name).and_then(|l| l.value)
    }

    /// The level `name` at the end of this interval, when it was observed.
    pub fn level(&self, name: &str) -> Option<f64> {
        self.levels
            .iter()
            .find(|l| l.name == name)
            .and_then(|l| l.value)
    }

    /// Whether flag `name` held in this interval.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f.name == name && f.value)
    }

    /// `CLOCK_MONOTONIC` ns at the start of the interval.
    pub fn start_mono_ns(&self) -> u64 {
        self.end_mono_ns
            .saturating_sub((self.interval_s * 1e9).round() as u64)
    }
}

pub(crate) fn per_second(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

impl serde::Serialize for Tick {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("time_s", &self.time_s)?;
        m.serialize_entry("interval_s", &self.interval_s)?;
        for c in &self.counters {
            m.serialize_entry(&c.name, &c.value)?;
        }
        for l in &self.latencies {
            m.serialize_entry(&l.name, &l.percentiles)?;
        }
        for f in &self.flags {
            m.serialize_entry(&f.name, &f.value)?;
        }
        if !self.levels.is_empty() {
            let levels: serde_json::Map<String, serde_json::Value> = self
                .levels
                .iter()
                .map(|l| (l.name.to_string(), serde_json::json!(l.value)))
                .collect();
            m.serialize_entry("levels", &levels)?;
        }
        m.serialize_entry("end_mono_ns", &self.end_mono_ns)?;
        if let Some(step) = self.step {
            m.serialize_entry("step", &step)?;
        }
        m.end()
    }
}

impl<'de> serde::Deserialize<'de> for Tick {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        use serde_json::Value;
        let map = serde_json::Map::<String, Value>::deserialize(d)?;
        let mut t = Tick {
            histograms: Vec::new(),
            time_s: 0.0,
            interval_s: 0.0,
            end_mono_ns: 0,
            counters: Vec::new(),
            latencies: Vec::new(),
            flags: Vec::new(),
            levels: Vec::new(),
            step: None,
        };
        for (k, v) in map {
            let key = k.clone();
            match (key.as_str(), v) {
                ("time_s", v) => t.time_s = v.as_f64().ok_or_else(|| D::Error::custom("time_s"))?,
                ("interval_s", v) => {
                    t.interval_s = v.as_f64().ok_or_else(|| D::Error::custom("interval_s"))?
                }
                ("end_mono_ns", v) => {
                    t.end_mono_ns = v.as_u64().ok_or_else(|| D::Error::custom("end_mono_ns"))?
                }
                ("step", v) => {
                    t.step = Some(
                        v.as_u64()
                            .and_then(|s| u32::try_from(s).ok())
                            .ok_or_else(|| D::Error::custom("step"))?,
                    )
                }
                ("levels", Value::Object(levels)) => {
                    for (name, v) in levels {
                        let value = match v {
                            Value::Null => None,
                            v => Some(v.as_f64().ok_or_else(|| {
                                D::Error::custom(format!("level {name} is not a number"))
                            })?),
                        };
                        t.levels.push(Level {
                            name: name.into(),
                            unit: "".into(),
                            value,
                        });
                    }
                }
                (_, Value::Bool(b)) => t.flags.push(Flag {
                    name: k.into(),
                    value: b,
                }),
                (_, Value::Number(n)) => t.counters.push(Count {
                    name: k.into(),
                    unit: "".into(),
                    value: n
                        .as_u64()
                        .ok_or_else(|| D::Error::custom(format!("{key} is not a count")))?,
                }),
                (_, v @ (Value::Null | Value::Object(_))) => t.latencies.push(Latency {
                    name: k.into(),
                    unit: "µs".into(),
                    percentiles: serde_json::from_value(v).map_err(D::Error::custom)?,
                }),
                (_, _) => return Err(D::Error::custom(format!("unexpected field {key}"))),
            }
        }
        Ok(t)
    }
}

/// Something that happened during a run, at a time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Seconds since the start of the load.
    pub time_s: f64,
    /// `blocked`, `unblocked`, `connection-lost`, `reconnected`, `refused`…
    pub kind: String,
    /// Details (the server's reason, the error).
    pub detail: String,
}
