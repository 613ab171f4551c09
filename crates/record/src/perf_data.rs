//! Reading `perf.data` files without `perf script`.
use crate::collect::{Collector, NamingOptions};
use crate::error::RecordError;
use crate::records::{self, Scratch};
use kiln_model::{EventInfo, Profile, WeightUnit};
use linux_perf_data::linux_perf_event_reader::PerfEventType;
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use std::path::Path;

/// Options for [`read`].
#[derive(Clone, Debug, Default)]
pub struct PerfDataOptions {
    /// How frames are named. Default: no annotations.
    pub naming: NamingOptions,
    /// Count each sample once. By default a sample weighs its period, as `perf script`
    /// text does in `kiln collapse` and inferno (nanoseconds of CPU time for cpu-clock
    /// and task-clock, occurrences for tracepoints and software events, the counter's
    /// unit otherwise): the same recording read either way weighs the same. Default:
    /// false.
    pub count_samples: bool,
}

/// What the period of a sample of `event` counts: the rule `kiln_collapse` applies to
/// `perf script` text (kept the same; a test reads one recording both ways).
fn period_unit(event: &str) -> WeightUnit {
    let base = match event.rsplit_once(':') {
        Some((b, m))
            if !m.is_empty() && m.len() <= 6 && m.bytes().all(|c| b"ukhpPGHISDWe".contains(&c)) =>
        {
            b
        }
        _ => event,
    };
    match base {
        "cpu-clock" | "task-clock" => WeightUnit::Nanoseconds,
        "page-faults" | "faults" | "minor-faults" | "major-faults" | "context-switches" | "cs"
        | "cpu-migrations" | "migrations" | "alignment-faults" | "emulation-faults" => {
            WeightUnit::Events
        }
        b if b.contains(':') => WeightUnit::Events,
        _ => WeightUnit::Period,
    }
}

/// Reads a perf.data file into one profile per event it recorded (see
/// [`read_with_summary`] for what was skipped).
pub fn read(path: &Path, opts: &PerfDataOptions) -> Result<Vec<Profile>, RecordError> {
    read_with_summary(path, opts).map(|(p, _)| p)
}

/// Reads a perf.data file into one profile per event, with the counts of what could not
/// be used (lost records, unparsable records, shallow stacks).
///
/// Records are streamed (never collected into a list). Samples with a user register and
/// stack dump (`perf record --call-graph dwarf`) are unwound with kiln's unwinder; samples
/// with frame-pointer call chains (`perf record -g`) use the chain as recorded. Binaries
/// and JIT perf maps are looked up on this machine, at the paths the recording names, so
/// read the file where it was recorded.
pub fn read_with_summary(
    path: &Path,
    opts: &PerfDataOptions,
) -> Result<(Vec<Profile>, crate::Summary), RecordError> {
    let bad = |why: String| RecordError::PerfData {
        path: path.to_path_buf(),
        why,
    };
    let file = std::fs::File::open(path).map_err(|source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let reader = std::io::BufReader::with_capacity(128 * 1024, file);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(reader)
        .map_err(|e| bad(format!("not a readable perf.data file: {e}")))?;
    let events: Vec<EventInfo> = perf_file
        .event_attributes()
        .iter()
        .map(|a| {
            let name = a
                .name()
                .map(str::to_string)
                .unwrap_or_else(|| match a.attr.type_ {
                    PerfEventType::Software(_) => "cpu-clock".into(),
                    _ => "event".into(),
                });
            let unit = match a.attr.type_ {
                _ if opts.count_samples => WeightUnit::Samples,
                PerfEventType::Tracepoint(_) => WeightUnit::Events,
                _ => period_unit(&name),
            };
            EventInfo { name, unit }
        })
        .collect();
    let units: Vec<WeightUnit> = events.iter().map(|e| e.unit).collect();
    let mut collector = Collector::new(events, opts.naming, false);
    let mut scratch = Scratch::default();
    loop {
        let rec = record_iter
            .next_record(&mut perf_file)
            .map_err(|e| bad(format!("corrupt record: {e}")))?;
        let Some(rec) = rec else { break };
        let PerfFileRecord::EventRecord { attr_index, record } = rec else {
            continue;
        };
        match record.parse() {
            Ok(r) => {
                let ev = attr_index;
                let units = &units;
                records::handle(&mut collector, &mut scratch, r, &|_| Some(ev), &|ev, s| {
                    Some(match units.get(ev) {
                        Some(WeightUnit::Samples) | None => 1,
                        Some(WeightUnit::Events) => s.period.unwrap_or(1).max(1),
                        Some(_) => s.period.unwrap_or(1),
                    })
                });
            }
            Err(_) => collector.summary.bad_records += 1,
        }
    }
    let (profiles, summary) = collector.finish();
    Ok((profiles, summary))
}
