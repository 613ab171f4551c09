//! The report of one run: what `web/src/report/` draws (see `data.ts` there for the same
//! shapes on the page's side).
use crate::categories::{categorise, frame_categories, CategorySeries};
use crate::latency::{self, Distribution, WindowPercentiles};
use crate::page::{self, Viewer};
use crate::{ReportError, ReportOptions};
use kiln_model::Profile;
use kiln_store::{columns, RunData, RunMeta, SeriesTable, Window};
use kiln_viewer::HtmlOptions;
use serde::Serialize;
use std::borrow::Cow;
use std::io::Write;

/// A series table as the page gets it: times relative to the page's origin.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Table {
    pub name: String,
    /// End of each interval, ns since the origin.
    pub time: Vec<i64>,
    pub columns: Vec<Col>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Col {
    pub name: String,
    pub unit: String,
    pub values: Vec<Option<f64>>,
}

pub(crate) fn table(t: &SeriesTable, origin: u64) -> Table {
    Table {
        name: t.name.clone(),
        time: t
            .time_ns
            .iter()
            .map(|&x| x as i64 - origin as i64)
            .collect(),
        columns: t
            .columns
            .iter()
            .map(|c| Col {
                name: c.name.clone(),
                unit: c.unit.clone(),
                values: c
                    .values
                    .iter()
                    .map(|v| v.filter(|x| x.is_finite()))
                    .collect(),
            })
            .collect(),
    }
}

/// A span of time relative to the origin, ns.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Span {
    pub name: String,
    pub start: i64,
    pub end: i64,
    /// What of it the recording holds, when it reaches outside it (a sweep step that began
    /// during the warm-up), as `kiln runs show RUN@STEP` warns of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A marker of the run on the page's clock ([`crate::markers::Marker`]).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct MarkerSpan {
    pub lane: String,
    pub name: String,
    pub kind: String,
    pub start: i64,
    pub end: i64,
    pub count: Option<u64>,
    pub unit: String,
    pub detail: String,
}

pub(crate) fn span(w: &Window, origin: u64) -> Span {
    Span {
        name: w.name.clone(),
        start: w.start_ns as i64 - origin as i64,
        end: w.end_ns as i64 - origin as i64,
        note: None,
    }
}

/// The BEAM's scheduler states as `kiln runs show` prints them, for the measurement and
/// for windows of the run's seconds ([`kiln_store::seconds`]): every span of whole seconds
/// when the run has at most [`BEAM_CUTS`] of them, else every span of whole blocks of
/// `step` seconds, and every named window.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct BeamPage {
    /// The seconds' ends, ns since the origin (the load's seconds).
    pub time: Vec<i64>,
    /// The seconds a window's ends are multiples of (`step` seconds from the first).
    pub step: usize,
    /// The measurement's line (the run's headline, as `kiln runs show RUN` prints it).
    pub whole: String,
    /// `(first second, end second, line)`: the line of the seconds `first..end`, as `kiln
    /// runs show RUN@A-B` prints it for a window holding those seconds.
    pub windows: Vec<(usize, usize, String)>,
}

/// What the page says of seconds that hold no scheduler sample (`kiln runs show` prints no
/// BEAM line for them).
const NO_BEAM_STATES: &str = "BEAM schedulers by state: no scheduler sample in these seconds";

/// At most this many cuts of the run's seconds have every span between them on the page.
const BEAM_CUTS: usize = 40;

fn beam_page(run: &RunData, grid: &[(u64, u64)], origin: u64) -> Option<BeamPage> {
    let whole = run.meta.headline.beam.as_ref()?;
    let by = kiln_store::seconds::StatesBySecond::of(&run.profiles, grid)?;
    let n = by.seconds();
    let step = n.div_ceil(BEAM_CUTS).max(1);
    let mut cuts: Vec<usize> = (0..n).step_by(step).collect();
    cuts.push(n);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, &a) in cuts.iter().enumerate() {
        spans.extend(cuts[i + 1..].iter().map(|&b| (a, b)));
    }
    for w in std::iter::once(&run.meta.measure).chain(&run.meta.windows) {
        let r = kiln_store::seconds::range_in(grid, w);
        if !spans.contains(&(r.start, r.end)) {
            spans.push((r.start, r.end));
        }
    }
    let line = kiln_findings::text::beam_states;
    Some(BeamPage {
        time: grid
            .iter()
            .map(|&(_, e)| e as i64 - origin as i64)
            .collect(),
        step,
        whole: line(whole),
        windows: spans
            .into_iter()
            .map(|(a, b)| {
                let text = by
                    .between(a..b)
                    .map_or_else(|| NO_BEAM_STATES.to_string(), |states| line(&states));
                (a, b, text)
            })
            .collect(),
    })
}

/// kiln's eBPF CPU per second of the run's seconds, % of one CPU, as the page's table
/// `kiln eBPF` (column `kiln eBPF cpu`): what `kiln runs show RUN@A-B` sums for a window.
pub(crate) fn bpf_table(run: &RunData, grid: &[(u64, u64)], origin: u64) -> Option<Table> {
    let per = kiln_store::seconds::bpf_cpu_per_second(run, grid)?;
    Some(Table {
        name: "kiln eBPF".into(),
        time: grid
            .iter()
            .map(|&(_, e)| e as i64 - origin as i64)
            .collect(),
        columns: vec![Col {
            name: "kiln eBPF cpu".into(),
            unit: "%".into(),
            values: grid
                .iter()
                .zip(per)
                .map(|(&(a, b), s)| Some(s * 1e11 / (b - a).max(1) as f64))
                .collect(),
        }],
    })
}

/// A line of the header: `Target: beam.smp (pid 42)`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Fact {
    pub key: &'static str,
    pub label: &'static str,
    pub value: String,
}

/// A headline figure: its value (for tests and sorting) and how it reads.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Figure {
    pub key: &'static str,
    pub label: String,
    pub value: f64,
    pub unit: String,
    pub text: String,
    /// A second line (user/system split, per-operation figure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One step of a sweep, with its figures.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SweepPoint {
    pub name: String,
    /// The swept parameter's value (`rate=2000` → 2000).
    pub value: Option<f64>,
    pub start: i64,
    pub end: i64,
    /// Operations completed per second in the step.
    pub throughput: Option<f64>,
    pub latency: Option<WindowPercentiles>,
    /// Latency from the intended send time, when the rate was fixed.
    pub intended: Option<WindowPercentiles>,
    /// Target CPU, % of one CPU (mean of the step's seconds).
    pub target_cpu: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct Sweep {
    /// `rate`, `concurrency`...
    pub param: String,
    pub points: Vec<SweepPoint>,
}

/// One step's headline row.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct KneeStep {
    pub name: String,
    pub start: i64,
    pub end: i64,
    pub attempted: Option<f64>,
    pub achieved: Option<f64>,
    /// `held`, `not held (−20%)`.
    pub held: Option<String>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub cpu_per_op_us: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct KneeDiff {
    pub key: String,
    pub title: String,
    /// The comparison's overall line.
    pub line: Option<String>,
}

/// A sweep as `kiln_compare::sweep` reads it: steps, knee, finding, the diff across it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct KneePage {
    pub steps: Vec<KneeStep>,
    pub knee: Option<usize>,
    pub finding: String,
    pub diff: Option<KneeDiff>,
}

/// The sweep's page part, and the viewer of the windows before and after its knee.
fn knee_page<'a>(
    sw: &'a kiln_compare::sweep::Sweep,
    name: &str,
    origin: u64,
    keys: &[String],
    opts: &ReportOptions,
    viewers: &mut Vec<Viewer<'a>>,
) -> KneePage {
    let rel = |t: u64| t as i64 - origin as i64;
    let diff = sw.across.as_ref().and_then(|c| {
        let (b, a) = c.diff.as_ref()?;
        let (first, last) = c.ends();
        let key = page::key_for("knee", keys);
        let title = format!(
            "Before and after the knee: {first} → {last}, differential flame graph ({})",
            a.event.name
        );
        viewers.push(Viewer {
            key: key.clone(),
            profiles: vec![b, a],
            opts: HtmlOptions {
                title: title.clone(),
                diff_labels: (first.to_string(), last.to_string()),
                compress_above: opts.compress_above,
                sources: vec![
                    format!("run '{name}' {first}"),
                    format!("run '{name}' {last}"),
                ],
                // Under the sweep section's heading (h2).
                heading_level: Some(3),
                ..Default::default()
            },
        });
        Some(KneeDiff {
            key,
            title,
            line: Some(c.overall.line.clone()),
        })
    });
    KneePage {
        steps: sw
            .steps
            .iter()
            .map(|s| KneeStep {
                name: s.name.clone(),
                start: rel(s.start_ns),
                end: rel(s.end_ns),
                attempted: s.attempted,
                achieved: s.achieved,
                held: s.held.as_ref().map(|h| h.text()),
                p50_us: s.p50_us,
                p99_us: s.p99_us,
                cpu_per_op_us: s.cpu_per_op_us,
            })
            .collect(),
        knee: sw.knee.as_ref().map(|k| k.step),
        finding: sw.finding.clone(),
        diff,
    }
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProfileInfo {
    pub key: String,
    pub event: String,
    pub samples: usize,
    pub title: String,
    /// Where a profile not recorded by kiln came from (the target's own pprof endpoint),
    /// and what time it covers.
    pub origin: Option<String>,
}

/// The run's part of the page.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunPage {
    pub name: String,
    pub id: Option<i64>,
    pub complete: bool,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub tags: Vec<(String, String)>,
    pub facts: Vec<Fact>,
    pub figures: Vec<Figure>,
    pub warnings: Vec<String>,
    /// What one operation is (`msg`, `req`), `op` when unknown.
    pub unit: String,
    /// The latency the headline figures measure (`consumer_latency`).
    pub latency: Option<String>,
    pub cpus: u32,
    pub measure: Span,
    pub windows: Vec<Span>,
    pub tables: Vec<Table>,
    pub sweep: Option<Sweep>,
    /// The sweep's headline rows, its knee and the before/after diff.
    pub knee: Option<KneePage>,
    pub distributions: Vec<Distribution>,
    /// Per-second latency histograms: any window's exact percentiles.
    pub latency_seconds: latency::PerSecond,
    /// The load column counting completed operations (the throughput's).
    pub completed: Option<String>,
    pub categories: Vec<CategorySeries>,
    pub profiles: Vec<ProfileInfo>,
    /// The run's markers (its phases, then what the load did), as the Firefox Profiler
    /// export marks them: the marker row.
    pub markers: Vec<MarkerSpan>,
    /// What kiln finds in the run over its measurement (kiln-findings, as `kiln run`
    /// prints them), ranked; computed here, never by the page. Evidence times are seconds
    /// from the measurement's start. Added in 0.4.
    pub findings: Vec<kiln_findings::Finding>,
    /// What the run lacked to tell more. Added in 0.4.
    pub finding_limits: Vec<String>,
    /// The findings of each named window (a sweep's steps): `(name, findings)`. Added in 0.4.
    pub window_findings: Vec<(String, kiln_findings::Findings)>,
    /// The names of the series the page reads, as kiln writes them. Added in 0.4.
    pub columns: ColumnNames,
    /// The BEAM's scheduler states of the measurement and of windows of the run's seconds,
    /// when the run has them. Added in 0.4.
    pub beam: Option<BeamPage>,
    /// kiln's eBPF CPU spread over the run's seconds, when the run measured it. Added in
    /// 0.4.
    pub ebpf: Option<Table>,
}

/// The names of the tables and columns of a run's series that a page reads
/// ([`kiln_store::columns`]), sent with the data so that the page spells none itself.
#[derive(Serialize, Debug, Clone, Copy)]
pub(crate) struct ColumnNames {
    pub load: &'static str,
    pub target: &'static str,
    pub machine: &'static str,
    pub kiln: &'static str,
    pub cpu_user: &'static str,
    pub cpu_system: &'static str,
    pub rss: &'static str,
    pub jvm_heap_used: &'static str,
    pub jvm_old_used: &'static str,
    pub jvm_old_max: &'static str,
    pub threads: &'static str,
    pub voluntary: &'static str,
    pub involuntary: &'static str,
    pub open_files: &'static str,
    pub sockets: &'static str,
    pub busy: &'static str,
    pub kiln_cpu: &'static str,
    pub load_command_cpu: &'static str,
    pub sent: &'static str,
    pub connected: &'static str,
    pub dropped: &'static str,
    pub queue_depth: &'static str,
    /// The target's waits for a CPU: all its threads', its first thread's, its quota's.
    pub runnable: &'static str,
    pub main_runnable: &'static str,
    pub throttled: &'static str,
    /// The CPU of the processes it started, and of its copies that ended young.
    pub children_cpu: &'static str,
    pub young_copies_cpu: &'static str,
    /// Its threads blocked, per reason (`waiting:disk`), and each group's busiest thread.
    pub waiting: &'static str,
    pub busiest: &'static str,
    /// What joins a per-group column and its group (`cpu user:scheduler`).
    pub group_separator: char,
    /// What joins a table and the other host it is of (`target@db1`).
    pub host_separator: char,
}

impl ColumnNames {
    /// The names this kiln writes.
    pub(crate) const KILN: ColumnNames = ColumnNames {
        load: columns::LOAD,
        target: columns::TARGET,
        machine: columns::MACHINE,
        kiln: columns::KILN,
        cpu_user: columns::CPU_USER,
        cpu_system: columns::CPU_SYSTEM,
        rss: columns::RSS,
        jvm_heap_used: columns::JVM_HEAP_USED,
        jvm_old_used: columns::JVM_OLD_USED,
        jvm_old_max: columns::JVM_OLD_MAX,
        threads: columns::THREADS,
        voluntary: columns::VOLUNTARY,
        involuntary: columns::INVOLUNTARY,
        open_files: columns::OPEN_FILES,
        sockets: columns::SOCKETS,
        busy: columns::BUSY,
        kiln_cpu: columns::KILN_CPU,
        load_command_cpu: columns::LOAD_COMMAND_CPU,
        sent: columns::SENT,
        connected: columns::CONNECTED,
        dropped: columns::DROPPED,
        queue_depth: columns::QUEUE_DEPTH,
        runnable: columns::RUNNABLE,
        main_runnable: columns::MAIN_RUNNABLE,
        throttled: columns::THROTTLED,
        children_cpu: columns::CHILDREN_CPU,
        young_copies_cpu: columns::YOUNG_COPIES_CPU,
        waiting: columns::WAITING,
        busiest: columns::GROUP_BUSIEST,
        group_separator: columns::GROUP_SEPARATOR,
        host_separator: columns::HOST_SEPARATOR,
    };
}

/// The origin of a run's page: the start of its measurement (x = 0 on every chart).
pub(crate) fn origin_of(meta: &RunMeta, series: &[SeriesTable]) -> u64 {
    if meta.measure.start_ns > 0 {
        return meta.measure.start_ns;
    }
    series
        .iter()
        .filter_map(|t| t.time_ns.first().copied())
        .min()
        .unwrap_or(0)
}

fn rate_text(v: f64, unit: &str) -> String {
    if v >= 1e4 {
        format!("{:.1}k {unit}/s", v / 1e3)
    } else if v >= 100.0 {
        format!("{v:.0} {unit}/s")
    } else {
        format!("{v:.1} {unit}/s")
    }
}

fn us_text(v: f64) -> String {
    kiln_compare::format_value(v, "us")
}

/// Headline figures with their units, in the order a reader looks for them.
pub(crate) fn figures(m: &RunMeta) -> Vec<Figure> {
    let mut f = Figures(Vec::new());
    load_figures(m, &mut f);
    target_figures(m, &mut f);
    own_figures(m, &mut f);
    f.0
}

/// Figures in the making: one whose value is not finite is left out.
struct Figures(Vec<Figure>);

impl Figures {
    fn push(
        &mut self,
        key: &'static str,
        label: String,
        value: f64,
        u: &str,
        text: String,
        detail: Option<String>,
    ) {
        if value.is_finite() {
            self.0.push(Figure {
                key,
                label,
                value,
                unit: u.to_string(),
                text,
                detail,
            });
        }
    }
}

/// The load's figures: throughput, connections held, latency.
fn load_figures(m: &RunMeta, f: &mut Figures) {
    let h = &m.headline;
    let unit = op_unit(m);
    if let Some(t) = h.throughput {
        let detail = h
            .send_rate
            .filter(|s| (s - t).abs() > 0.5)
            .map(|s| format!("{} sent", rate_text(s, &unit)));
        f.push(
            "throughput",
            "throughput".into(),
            t,
            "/s",
            rate_text(t, &unit),
            detail,
        );
    }
    if let Some(n) = h.connections {
        f.push(
            "connections",
            "connections held".into(),
            n as f64,
            "count",
            kiln_model::thousands(n),
            Some("at the end of the window".into()),
        );
    }
    let lat = h.latency.clone().unwrap_or_else(|| "latency".into());
    for (key, q, v) in [
        ("p50", "p50", h.p50_us),
        ("p99", "p99", h.p99_us),
        ("p999", "p99.9", h.p999_us),
        ("max", "max", h.max_us),
    ] {
        if let Some(v) = v {
            f.push(key, format!("{lat} {q}"), v, "us", us_text(v), None);
        }
    }
}

/// The target's figures: CPU (per connection, per operation), memory, context switches.
fn target_figures(m: &RunMeta, f: &mut Figures) {
    let h = &m.headline;
    let unit = op_unit(m);
    let secs = m.measure.seconds();
    if let (Some(c), true) = (h.target_cpu_s, secs > 0.0) {
        let pct = c / secs * 100.0;
        let detail = Some(format!(
            "user {:.1}%, system {:.1}%",
            h.target_user_s.unwrap_or(0.0) / secs * 100.0,
            h.target_system_s.unwrap_or(0.0) / secs * 100.0
        ));
        f.push(
            "target_cpu",
            "target CPU".into(),
            pct,
            "%",
            format!("{pct:.1}% of one CPU"),
            detail,
        );
    }
    if let (Some(c), Some(n), true) = (h.target_cpu_s, h.connections, secs > 0.0) {
        if n > 0 {
            let pct = c / secs * 100.0 / (n as f64 / 1000.0);
            f.push(
                "cpu_per_1000_conn",
                "target CPU per 1,000 connections".into(),
                pct,
                "%",
                format!("{pct:.2}% of one CPU"),
                None,
            );
        }
    }
    if let Some(c) = h.cpu_per_op_us {
        f.push(
            "cpu_per_op",
            format!("target CPU per {unit}"),
            c,
            "us",
            us_text(c),
            None,
        );
    }
    if let Some(r) = h.rss_max_bytes {
        f.push(
            "rss",
            "target RSS max".into(),
            r as f64,
            "bytes",
            kiln_compare::format_value(r as f64, "bytes"),
            None,
        );
    }
    if let (Some(c), true) = (h.context_switches, secs > 0.0) {
        let per_s = c as f64 / secs;
        let detail = h.switches_per_op.map(|p| format!("{p:.2} per {unit}"));
        f.push(
            "switches",
            "context switches".into(),
            per_s,
            "1/s",
            format!("{per_s:.0}/s"),
            detail,
        );
    }
}

/// The observer's and the machine's figures: kiln's CPU, its eBPF programs', the load
/// command's, how busy the machine was.
fn own_figures(m: &RunMeta, f: &mut Figures) {
    let h = &m.headline;
    let secs = m.measure.seconds();
    if let (Some(k), true) = (h.kiln_cpu_s, secs > 0.0) {
        let pct = k / secs * 100.0;
        f.push(
            "kiln_cpu",
            "kiln's own CPU".into(),
            pct,
            "%",
            format!("{pct:.1}% of one CPU"),
            None,
        );
    }
    if let (Some(b), true) = (h.kiln_bpf_cpu_s, secs > 0.0) {
        let pct = b / secs * 100.0;
        f.push(
            "kiln_bpf_cpu",
            "kiln's eBPF programs".into(),
            pct,
            "%",
            format!("{pct:.1}% of one CPU"),
            Some("CPU the kernel spent in kiln's eBPF programs (stack walks, off-CPU blocks), on the recorded threads' time".into()),
        );
    }
    if let (Some(l), true) = (h.load_cpu_s, secs > 0.0) {
        let pct = l / secs * 100.0;
        f.push(
            "load_cpu",
            "load command CPU".into(),
            pct,
            "%",
            format!("{pct:.1}% of one CPU"),
            None,
        );
    }
    if let Some(b) = h.machine_busy_pct {
        f.push(
            "machine_busy",
            "machine busy".into(),
            b,
            "%",
            format!("{b:.0}% of {} CPUs", m.cpus),
            None,
        );
    }
}

fn op_unit(m: &RunMeta) -> String {
    if m.load.unit.is_empty() {
        "op".into()
    } else {
        m.load.unit.clone()
    }
}

/// A command line's words joined by spaces, each word that holds a control or
/// bidirectional formatting character (a `--note` with U+202E RIGHT-TO-LEFT OVERRIDE)
/// isolated (U+2068 … U+2069), so that it cannot reorder the words after it.
fn words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.chars().any(kiln_model::text::is_hidden) {
                format!("\u{2068}{a}\u{2069}")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn facts(m: &RunMeta) -> Vec<Fact> {
    let mut f = Vec::new();
    let mut push = |key, label, value: String| {
        if !value.trim().is_empty() {
            f.push(Fact { key, label, value });
        }
    };
    let pids: Vec<String> = m.target.pids.iter().map(|p| p.to_string()).collect();
    push(
        "target",
        "Target",
        format!("{} (pid {})", m.target.comm, pids.join(", ")),
    );
    let mut exe = m.target.exe.clone();
    if !m.target.build_id.is_empty() {
        exe.push_str(&format!(" (build id {})", m.target.build_id));
    }
    push("exe", "Executable", exe);
    push("target_cmdline", "Target command", words(&m.target.cmdline));
    // The services it called, as its connections stood when the measurement ended.
    push(
        "peers",
        "Connected as a client to",
        m.target
            .peers
            .iter()
            .map(|p| match &p.process {
                Some(who) => format!("{} ({} open, {who})", p.address, p.connections),
                None => format!("{} ({} open)", p.address, p.connections),
            })
            .collect::<Vec<_>>()
            .join("; "),
    );
    push(
        "load",
        "Load",
        format!("{} {}", m.load.protocol, words(&m.load.argv)),
    );
    push("command", "kiln command", words(&m.command_line));
    push("started", "Started", page::date(m.started_unix_ms));
    push(
        "measured",
        "Measured",
        format!("{:.1} s", m.measure.seconds()),
    );
    let mut ev = m.events.join(", ");
    if m.frequency > 0 && m.events.iter().any(|e| e.contains("cpu")) {
        ev.push_str(&format!(" at {} Hz", m.frequency));
    }
    push("events", "Events", ev);
    push(
        "host",
        "Host",
        format!("{} (kernel {}, {} CPUs)", m.host, m.kernel, m.cpus),
    );
    if m.repeat.1 > 1 {
        push(
            "repeat",
            "Repeat",
            format!("{} of {} (group {})", m.repeat.0, m.repeat.1, m.group),
        );
    }
    push("kiln", "kiln", m.kiln_version.clone());
    f
}

/// The usual interval of a table (its median step), 1 s when it has one row.
pub(crate) fn typical_step(times: &[u64]) -> u64 {
    let mut d: Vec<u64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    if d.is_empty() {
        return 1_000_000_000;
    }
    d.sort_unstable();
    d[d.len() / 2].max(1)
}

/// The mean of column `col` of `t` over the seconds of `w`, each weighted by its length
/// (the headline's rule for a rate: its count over the seconds counted).
fn mean_of(t: &SeriesTable, col: &str, w: &Window) -> Option<f64> {
    let v = kiln_store::window::values(Some(t), col, w);
    let secs: f64 = v.iter().map(|(_, s)| s).sum();
    (secs > 0.0).then(|| v.iter().map(|(x, s)| x * s).sum::<f64>() / secs)
}

/// The load column that counts completed operations: among the rates of the load's unit,
/// the one whose mean over the measurement equals the headline throughput.
pub(crate) fn completed_column(run: &RunData) -> Option<String> {
    let load = run.series.iter().find(|t| t.name == columns::LOAD)?;
    let unit = format!("{}/s", op_unit(&run.meta));
    let w = &run.meta.measure;
    let candidates: Vec<&str> = load
        .columns
        .iter()
        .filter(|c| c.unit == unit)
        .map(|c| c.name.as_str())
        .collect();
    match run.meta.headline.throughput {
        Some(t) => candidates
            .iter()
            .filter_map(|&c| Some((c, (mean_of(load, c, w)? - t).abs())))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c.to_string()),
        None => candidates
            .iter()
            .find(|&&c| c != columns::SENT)
            .or(candidates.first())
            .map(|c| c.to_string()),
    }
}

fn sweep(run: &RunData, origin: u64, skipped: &mut usize) -> Option<Sweep> {
    let m = &run.meta;
    if m.windows.is_empty() {
        return None;
    }
    let param = m.windows[0]
        .name
        .split_once('=')
        .map(|(p, _)| p.to_string())
        .unwrap_or_else(|| "step".into());
    let load = run.series.iter().find(|t| t.name == columns::LOAD);
    let completed = completed_column(run);
    let lat = m.headline.latency.clone().or_else(|| {
        run.histograms
            .iter()
            .find(|h| !h.name.ends_with("_intended"))
            .map(|h| h.name.clone())
    });
    let points = m
        .windows
        .iter()
        .map(|w| {
            let value = w
                .name
                .split_once('=')
                .and_then(|(_, v)| v.trim().parse::<f64>().ok());
            let throughput = match (load, &completed) {
                (Some(t), Some(c)) => mean_of(t, c, w),
                _ => None,
            };
            // The step's CPU by the rule of every window's headline.
            let secs = w.seconds();
            let target_cpu = kiln_store::window::figures(run, w)
                .target_cpu_s
                .filter(|_| secs > 0.0)
                .map(|c| c / secs * 100.0);
            let pct = |name: &str, skipped: &mut usize| {
                latency::merged(&run.histograms, name, &w.name, skipped)
                    .map(|h| latency::percentiles(&h))
            };
            SweepPoint {
                name: w.name.clone(),
                value,
                start: w.start_ns as i64 - origin as i64,
                end: w.end_ns as i64 - origin as i64,
                throughput,
                latency: lat.as_deref().and_then(|l| pct(l, skipped)),
                intended: lat
                    .as_deref()
                    .and_then(|l| pct(&format!("{l}_intended"), skipped)),
                target_cpu,
            }
        })
        .collect();
    Some(Sweep { param, points })
}

/// The latency distributions of the measurement window, the headline one first.
fn distributions(run: &RunData, skipped: &mut usize) -> Vec<Distribution> {
    let mut names: Vec<&str> = Vec::new();
    if let Some(l) = &run.meta.headline.latency {
        names.push(l);
    }
    for h in &run.histograms {
        if h.window == run.meta.measure.name && !names.contains(&h.name.as_str()) {
            names.push(&h.name);
        }
    }
    names
        .into_iter()
        .filter_map(|n| {
            let h = latency::merged(&run.histograms, n, &run.meta.measure.name, skipped)?;
            Some(latency::distribution(n, 0, &h))
        })
        .collect()
}

/// Interval edges for the category charts: the run's seconds (the load's: a window's
/// categories are those of the seconds its other figures count), else whole seconds of
/// the measurement.
fn category_edges(run: &RunData, grid: &[(u64, u64)]) -> Vec<u64> {
    if !grid.is_empty() {
        return kiln_store::seconds::edges(grid);
    }
    let m = &run.meta.measure;
    let mut e = vec![m.start_ns];
    while *e.last().unwrap_or(&0) < m.end_ns {
        let next = e.last().unwrap_or(&0) + 1_000_000_000;
        e.push(next.min(m.end_ns));
    }
    e
}

/// The run's profiles, each clock event given the CPU time one sample stands for when the
/// store does not say (1 s / the sampling frequency, as `kiln record` writes it): the
/// flame graphs then read in CPU time and the category chart in % of a CPU.
pub(crate) fn timed_profiles(run: &RunData) -> Vec<Cow<'_, Profile>> {
    let mut out = clocked_profiles(run);
    let whole: Vec<&Profile> = out.iter().map(|p| p.as_ref()).collect();
    let nodes = crate::nodes::per_node(&whole);
    out.extend(nodes.into_iter().map(Cow::Owned));
    out
}

/// The run's profiles, each clock event given the CPU time one sample stands for (see
/// [`timed_profiles`]), without the per-node ones.
pub(crate) fn clocked_profiles(run: &RunData) -> Vec<Cow<'_, Profile>> {
    let f = run.meta.frequency;
    run.profiles
        .iter()
        .map(|p| {
            if p.event.is_clock() && p.event.sample_period_ns.is_none() && f > 0 {
                let mut q = p.clone();
                q.event.sample_period_ns = Some(1_000_000_000 / u64::from(f));
                Cow::Owned(q)
            } else {
                Cow::Borrowed(p)
            }
        })
        .collect()
}

/// What the report says of a profile `kiln run --pprof` fetched from the target: its
/// endpoint (from the run's command line) and the time it covers; `None` for kiln's own.
fn pprof_origin(m: &RunMeta, event: &str) -> Option<String> {
    if !event.starts_with(kiln_store::PPROF_EVENT_PREFIX) {
        return None;
    }
    let mut urls = Vec::new();
    let mut args = m.command_line.iter();
    while let Some(a) = args.next() {
        if a == "--pprof" {
            urls.extend(args.next().cloned());
        } else if let Some(v) = a.strip_prefix("--pprof=") {
            urls.push(v.to_string());
        }
    }
    let what = if event.starts_with("pprof cpu") {
        "Go's CPU profile of the measurement window (profile?seconds=N from its start)"
    } else if event.starts_with("pprof goroutine") {
        "Go's goroutines at the end of the measurement window"
    } else if event.contains("inuse") {
        "Go's heap in use at the end of the measurement window"
    } else {
        "what Go counted during the measurement window (its end minus its start, as go tool pprof -base)"
    };
    let from = if urls.is_empty() {
        "the target's own net/http/pprof endpoint".to_string()
    } else {
        format!(
            "the target's own net/http/pprof endpoint ({})",
            urls.join(", ")
        )
    };
    Some(format!(
        "From {from}: {what}. Go's profiles carry no time: a selected window does not filter them."
    ))
}

/// The run's page model and its viewers.
pub(crate) fn run_page<'a>(
    run: &'a RunData,
    profiles_in: &'a [Cow<'a, Profile>],
    knee_of: Option<&'a kiln_compare::sweep::Sweep>,
    opts: &ReportOptions,
) -> Result<(RunPage, Vec<Viewer<'a>>, u64), ReportError> {
    let m = &run.meta;
    let origin = origin_of(m, &run.series);
    let mut warnings = run_warnings(m);
    let mut skipped = 0usize;
    let sweep = sweep(run, origin, &mut skipped);
    let distributions = distributions(run, &mut skipped);
    let load_time = run
        .series
        .iter()
        .find(|t| t.name == columns::LOAD)
        .map_or(&[][..], |t| &t.time_ns[..]);
    let latency_seconds = latency::per_second(&run.histograms, load_time, origin, &mut skipped);
    // The run's seconds: every window's figure is counted on them.
    let grid = kiln_store::seconds::grid(run);
    let categories = charted_categories(run, profiles_in, opts, origin, &grid, &mut warnings)?;
    if skipped > 0 {
        warnings.push(format!(
            "{skipped} stored latency histogram(s) could not be read and are left out"
        ));
    }
    let ProfileViewers {
        keys,
        mut viewers,
        profiles,
    } = profile_viewers(m, profiles_in, &categories, opts)?;
    let knee = knee_of.map(|sw| knee_page(sw, &m.name, origin, &keys, opts, &mut viewers));
    let found = kiln_findings::analyse(run, None);
    let page = RunPage {
        name: m.name.clone(),
        id: m.id,
        complete: m.status.complete,
        reason: m.status.reason.clone(),
        note: m.note.clone(),
        tags: m.tags.clone(),
        facts: facts(m),
        figures: figures(m),
        warnings,
        unit: op_unit(m),
        latency: m.headline.latency.clone(),
        cpus: m.cpus,
        measure: span(&m.measure, origin),
        windows: m
            .windows
            .iter()
            .map(|w| Span {
                note: kiln_store::seconds::recorded_part(&m.measure, w),
                ..span(w, origin)
            })
            .collect(),
        tables: run.series.iter().map(|t| table(t, origin)).collect(),
        sweep,
        knee,
        distributions,
        latency_seconds,
        // The load's own word for it; older runs did not store it.
        completed: Some(m.load.completed.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| completed_column(run)),
        categories,
        profiles,
        markers: marker_spans(run, origin),
        findings: found.findings,
        finding_limits: found.limits,
        window_findings: m
            .windows
            .iter()
            .map(|w| (w.name.clone(), kiln_findings::analyse(run, Some(w))))
            .collect(),
        columns: ColumnNames::KILN,
        beam: beam_page(run, &grid, origin),
        ebpf: bpf_table(run, &grid, origin),
    };
    Ok((page, viewers, origin))
}

/// What the page warns of first: a run that did not run to its end, then the run's own
/// warnings.
fn run_warnings(m: &RunMeta) -> Vec<String> {
    let mut warnings = Vec::new();
    if !m.status.complete {
        warnings.push(format!(
            "Incomplete run: {}",
            m.status
                .reason
                .as_deref()
                .unwrap_or("it did not run to its end")
        ));
    }
    warnings.extend(m.warnings.iter().cloned());
    warnings
}

/// Each profile's category chart over the run's seconds; samples it cannot chart (outside
/// the charted seconds, or without a time) are said in `warnings`.
fn charted_categories(
    run: &RunData,
    profiles_in: &[Cow<'_, Profile>],
    opts: &ReportOptions,
    origin: u64,
    grid: &[(u64, u64)],
    warnings: &mut Vec<String>,
) -> Result<Vec<CategorySeries>, ReportError> {
    let edges = category_edges(run, grid);
    let mut categories = Vec::new();
    for p in profiles_in.iter().map(|p| p.as_ref()) {
        if let Some(c) = categorise(p, &opts.rules, &edges, origin)? {
            if c.outside > 0 {
                warnings.push(format!(
                    "{} of the {} samples of '{}' lie outside the charted seconds and are not in its category chart (they are in its flame graph)",
                    c.outside,
                    p.samples.len(),
                    p.event.name
                ));
            }
            if c.untimed > 0 {
                warnings.push(format!(
                    "{} samples of '{}' have no timestamp: no time window selects them",
                    c.untimed, p.event.name
                ));
            }
            categories.push(c);
        }
    }
    Ok(categories)
}

/// A run's profiles as the page shows them.
struct ProfileViewers<'a> {
    /// The viewers' keys, in the profiles' order.
    keys: Vec<String>,
    /// One flame graph viewer per profile.
    viewers: Vec<Viewer<'a>>,
    /// What the page says of each profile.
    profiles: Vec<ProfileInfo>,
}

/// One flame graph viewer per profile, its frames coloured by the categories of its
/// chart.
fn profile_viewers<'a>(
    m: &RunMeta,
    profiles_in: &'a [Cow<'a, Profile>],
    categories: &[CategorySeries],
    opts: &ReportOptions,
) -> Result<ProfileViewers<'a>, ReportError> {
    let mut keys: Vec<String> = Vec::new();
    let mut viewers = Vec::new();
    let mut profiles = Vec::new();
    for p in profiles_in.iter().map(|p| p.as_ref()) {
        let key = page::key_for(&p.event.name, &keys);
        keys.push(key.clone());
        let title = format!("{} — run '{}'", p.event.name, m.name);
        let order = categories
            .iter()
            .find(|c| c.event == p.event.name)
            .map_or(&[][..], |c| &c.names[..]);
        let frame_cats =
            frame_categories(p, &opts.rules, order)?.and_then(|c| serde_json::to_value(c).ok());
        viewers.push(Viewer {
            key: key.clone(),
            profiles: vec![p],
            opts: HtmlOptions {
                title: title.clone(),
                palette: page::palette_for(&p.event.name).into(),
                compress_above: opts.compress_above,
                sources: vec![format!("run '{}' #{}", m.name, m.id.unwrap_or(0))],
                // Under the flame graphs' section (h2) and the profile's heading (h3).
                heading_level: Some(4),
                categories: frame_cats,
                cpus: (m.cpus > 0).then_some(m.cpus),
                ..Default::default()
            },
        });
        profiles.push(ProfileInfo {
            key,
            event: p.event.name.clone(),
            samples: p.samples.len(),
            title,
            origin: pprof_origin(m, &p.event.name),
        });
    }
    Ok(ProfileViewers {
        keys,
        viewers,
        profiles,
    })
}

/// The run's markers (events, phases, a sweep's steps) on the page's clock.
fn marker_spans(run: &RunData, origin: u64) -> Vec<MarkerSpan> {
    crate::markers::run_markers(run)
        .into_iter()
        .map(|m| MarkerSpan {
            lane: m.lane,
            name: m.name,
            kind: m.kind,
            start: m.start_ns as i64 - origin as i64,
            end: m.end_ns as i64 - origin as i64,
            count: m.count,
            unit: m.unit,
            detail: m.detail,
        })
        .collect()
}

/// Writes the report of `run` as one HTML file to `out` (write through
/// [`kiln_os::io::AtomicFile`] so a failure leaves no half file).
pub fn write_run_report(
    run: &RunData,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let profiles = timed_profiles(run);
    // A sweep's knee, and the windows before and after it compared.
    let knee = kiln_compare::sweep::sweep(run, &Default::default(), 15);
    let (page, viewers, origin) = run_page(run, &profiles, knee.as_ref(), opts)?;
    let title = match run.meta.id {
        Some(id) => format!("kiln run '{}' #{id}", run.meta.name),
        None => format!("kiln run '{}'", run.meta.name),
    };
    page::write(&title, "run", &page, &viewers, Some(origin), opts, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::{EventInfo, FrameKind, Profile, WeightUnit};
    use kiln_store::{Column, Headline, LoadInfo};

    fn sample_run(name: &str) -> RunData {
        let s = 1_000_000_000u64;
        let t0 = 50 * s;
        let mut p = Profile::new(EventInfo::new("cpu-clock", WeightUnit::Samples));
        let f = p.frame(b"</script><img src=x onerror=alert(1)>", FrameKind::User);
        let th = p.thread(Some(1), Some(1), b"1_scheduler");
        for i in 0..40 {
            p.add_sample_path(&[f], 1, t0 + i * s / 10, th);
        }
        let load = SeriesTable {
            name: "load".into(),
            time_ns: (1..=6).map(|i| t0 - s + i * s).collect(),
            columns: vec![
                Column {
                    name: "sent".into(),
                    unit: "msg/s".into(),
                    values: vec![Some(100.0); 6],
                },
                Column {
                    name: "received".into(),
                    unit: "msg/s".into(),
                    values: vec![
                        Some(90.0),
                        Some(90.0),
                        Some(90.0),
                        Some(90.0),
                        None,
                        Some(f64::NAN),
                    ],
                },
            ],
        };
        RunData {
            meta: RunMeta {
                name: name.into(),
                id: Some(7),
                note: Some("<b>note</b>".into()),
                target: kiln_store::TargetInfo {
                    peers: vec![kiln_store::Peer {
                        address: "127.0.0.1:5432".into(),
                        connections: 8,
                        process: Some("<img src=y onerror=alert(3)> (pid 9)".into()),
                    }],
                    ..Default::default()
                },
                measure: Window {
                    name: "measure".into(),
                    start_ns: t0,
                    end_ns: t0 + 4 * s,
                },
                load: LoadInfo {
                    protocol: "amqp".into(),
                    unit: "msg".into(),
                    ..Default::default()
                },
                headline: Headline {
                    throughput: Some(90.0),
                    send_rate: Some(100.0),
                    ..Default::default()
                },
                ..Default::default()
            },
            series: vec![load],
            profiles: vec![p],
            ..Default::default()
        }
    }

    /// A run whose every series is uneven: seconds of the load 3 ms after each whole
    /// second with one of 1.4 s, the sampler's rows 0.4 s after them, another host's
    /// target, latencies in every second.
    fn uneven_run() -> RunData {
        let s = 1_000_000_000u64;
        let t0 = 50 * s;
        let col = |name: &str, unit: &str, v: Vec<Option<f64>>| Column {
            name: name.into(),
            unit: unit.into(),
            values: v,
        };
        let mut at = t0 - s + 3_000_000;
        let load_time: Vec<u64> = (0..10)
            .map(|i| {
                at += if i == 4 { s * 14 / 10 } else { s };
                at
            })
            .collect();
        let n = load_time.len();
        let load = SeriesTable {
            name: columns::LOAD.into(),
            time_ns: load_time.clone(),
            columns: vec![
                col(
                    columns::SENT,
                    "msg/s",
                    (0..n).map(|i| Some(1000.0 + 37.0 * i as f64)).collect(),
                ),
                col(
                    "received",
                    "msg/s",
                    (0..n)
                        .map(|i| (i != 6).then_some(990.0 + 41.5 * i as f64))
                        .collect(),
                ),
                col(
                    columns::QUEUE_DEPTH,
                    "msg",
                    (0..n).map(|i| Some((i * 7 % 5) as f64)).collect(),
                ),
            ],
        };
        let sampled = |name: &str, offset: u64, cols: &[(&str, &str, f64)]| SeriesTable {
            name: name.into(),
            time_ns: (0..11).map(|i| t0 + offset + i * s).collect(),
            columns: cols
                .iter()
                .map(|&(c, unit, base)| {
                    col(
                        c,
                        unit,
                        (0..11)
                            .map(|i| Some(base * (1.0 + (i * 13 % 7) as f64 / 10.0)))
                            .collect(),
                    )
                })
                .collect(),
        };
        let target = sampled(
            columns::TARGET,
            400_000_000,
            &[
                (columns::CPU_USER, "%", 61.5),
                (columns::CPU_SYSTEM, "%", 9.25),
                (columns::RSS, "bytes", 1.5e8),
                (columns::VOLUNTARY, "1/s", 1234.5),
                (columns::INVOLUNTARY, "1/s", 17.25),
            ],
        );
        let other = sampled(
            &columns::on_host(columns::TARGET, "db1"),
            700_000_000,
            &[
                (columns::CPU_USER, "%", 20.0),
                (columns::CPU_SYSTEM, "%", 5.5),
                (columns::VOLUNTARY, "1/s", 300.0),
                (columns::INVOLUNTARY, "1/s", 3.0),
            ],
        );
        let machine = sampled(columns::MACHINE, 400_000_000, &[(columns::BUSY, "%", 35.0)]);
        let kiln = sampled(columns::KILN, 400_000_000, &[(columns::KILN_CPU, "%", 2.5)]);
        let seconds: Vec<hdrhistogram::Histogram<u64>> = (0..n as u64)
            .map(|i| {
                let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
                for v in 0..200 {
                    h.record(100 + (v * 7919 + i * 104_729) % (2000 + 300 * i))
                        .unwrap();
                }
                h
            })
            .collect();
        let log = kiln_hdr::write_interval_log(
            "per second",
            load_time.iter().zip(&seconds).map(|(&t, h)| (t, 1.0, h)),
        )
        .unwrap();
        let mut run = RunData {
            meta: RunMeta {
                name: "uneven".into(),
                measure: Window {
                    name: "measure".into(),
                    start_ns: t0,
                    end_ns: t0 + 8 * s,
                },
                cpus: 4,
                load: LoadInfo {
                    protocol: "amqp".into(),
                    unit: "msg".into(),
                    completed: "received".into(),
                    ..Default::default()
                },
                ..Default::default()
            },
            series: vec![load, target, other, machine, kiln],
            histograms: vec![kiln_store::StoredHistogram {
                name: "consumer_latency".into(),
                window: kiln_store::PER_SECOND.into(),
                unit: "us".into(),
                data: log,
            }],
            ..Default::default()
        };
        run.meta.headline = kiln_store::window::figures(&run, &run.meta.measure);
        run
    }

    /// The page's own rule for a window dragged in the browser (web/src/report/lib
    /// figures.ts `windowFigures`, verdict.ts `windowHeadline`) is the store's: this
    /// writes the page's data of an uneven run with what the Rust side computes for some
    /// windows (`web/tests/fixtures/window-figures.json`), and web/tests/report.test.ts
    /// asserts the page computes the same. A fixture that differs is written again and
    /// the test fails, to be run once more and the file committed.
    #[test]
    fn the_windows_figures_for_the_pages_own_test() {
        let run = uneven_run();
        let (page, _, origin) = run_page(&run, &[], None, &ReportOptions::default()).unwrap();
        let s = 1_000_000_000u64;
        let spans = [
            (0, 8 * s),
            (s, 3 * s),
            (s * 5 / 4, s * 37 / 10),
            (s * 5 / 2, s * 29 / 10),
            (0, s * 44 / 10),
            (s * 51 / 10, 8 * s),
            (s * 33 / 10, s * 61 / 10),
        ];
        let cases: Vec<serde_json::Value> = spans
            .iter()
            .map(|&(a, b)| {
                let w = Window {
                    name: "a span".into(),
                    start_ns: origin + a,
                    end_ns: origin + b,
                };
                let meta = kiln_store::window::window_view(&run, &w);
                let figures: serde_json::Map<String, serde_json::Value> = figures(&meta)
                    .into_iter()
                    .map(|f| (f.key.to_string(), serde_json::json!(f.value)))
                    .collect();
                serde_json::json!({
                    "window": [a, b],
                    "figures": figures,
                    "headline": meta.headline,
                })
            })
            .collect();
        let page = serde_json::to_value(&page).unwrap();
        let keep = [
            "columns",
            "unit",
            "latency",
            "cpus",
            "tables",
            "latency_seconds",
            "completed",
            "figures",
        ];
        let page: serde_json::Map<String, serde_json::Value> = keep
            .iter()
            .map(|&k| (k.to_string(), page[k].clone()))
            .collect();
        let fixture = serde_json::json!({
            "about": "written by crates/report (run.rs, the_windows_figures_for_the_pages_own_test): a run page's data and the figures the Rust side computes for windows of it (ns from the page's origin); web/tests/report.test.ts asserts the page computes the same",
            "page": page,
            "cases": cases,
        });
        let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../web/tests/fixtures/window-figures.json");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            kiln_os::io::write_atomically(&path, |w| -> std::io::Result<()> {
                w.write_all(text.as_bytes())
            })
            .unwrap();
            panic!(
                "{} was out of date and is written again: run the test once more and commit it",
                path.display()
            );
        }
        // The measurement's figures by the window rule are the run's headline's (the page's).
        let headline: serde_json::Map<String, serde_json::Value> = figures(&run.meta)
            .into_iter()
            .map(|f| (f.key.to_string(), serde_json::json!(f.value)))
            .collect();
        assert_eq!(cases[0]["figures"], serde_json::Value::Object(headline));
    }

    #[test]
    fn the_page_is_inert_whatever_the_names() {
        let run = sample_run("</title><script>alert(2)</script>");
        let mut out = Vec::new();
        write_run_report(&run, &ReportOptions::default(), &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        let outer = html
            .replace(crate::REPORT_JS, "")
            .replace(kiln_viewer::VIEWER_JS, "")
            .to_ascii_lowercase();
        // data, viewer meta, viewer data, report code, viewer code.
        assert_eq!(outer.matches("<script").count(), 5, "{outer}");
        assert_eq!(outer.matches("</script").count(), 5);
        assert_eq!(outer.matches("</title").count(), 1);
        assert!(!outer.contains("<img"));
        assert!(outer.contains("content-security-policy"));
        assert!(outer.contains("default-src 'none'"));
    }

    #[test]
    fn figures_and_the_completed_column() {
        let run = sample_run("r");
        assert_eq!(completed_column(&run).as_deref(), Some("received"));
        let f = figures(&run.meta);
        assert_eq!(f[0].key, "throughput");
        assert_eq!(f[0].text, "90.0 msg/s");
        assert_eq!(f[0].detail.as_deref(), Some("100 msg/s sent"));
        let profiles = timed_profiles(&run);
        let (page, viewers, origin) =
            run_page(&run, &profiles, None, &ReportOptions::default()).unwrap();
        // The services the target called, a fact of the page as the summary says them.
        let peers = page.facts.iter().find(|f| f.key == "peers").unwrap();
        assert_eq!(
            peers.value,
            "127.0.0.1:5432 (8 open, <img src=y onerror=alert(3)> (pid 9))"
        );
        assert_eq!(origin, run.meta.measure.start_ns);
        assert_eq!(viewers.len(), 1);
        assert_eq!(page.tables[0].time[0], 0);
        assert_eq!(page.tables[0].columns[1].values[5], None, "NaN is no value");
        assert_eq!(page.measure.end, 4_000_000_000);
        let c = &page.categories[0];
        assert_eq!(c.names, ["other"]);
        // 4 s of target-less edges from the load table: 10 samples per second, 1 ms each
        // (no period known: counted per second).
        assert_eq!(c.unit, "/s");
    }
}
