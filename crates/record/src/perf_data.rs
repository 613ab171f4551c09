//! Reading `perf.data` files without `perf script`.
use crate::collect::{Collector, NamingOptions};
use crate::error::RecordError;
use crate::records::{self, Scratch, Weigh, Weigher};
use kiln_model::{EventInfo, Profile, WeightUnit};
use linux_perf_data::linux_perf_event_reader::PerfEventType;
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use std::io::{Read, Seek, SeekFrom};
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
///
/// A file cut short (a recording that was killed, a copy that did not finish) is read
/// up to the damage, as `perf script` reads it: the records before the first cut one
/// are kept, and a warning in the summary gives the offset.
pub fn read_with_summary(
    path: &Path,
    opts: &PerfDataOptions,
) -> Result<(Vec<Profile>, crate::RecordingSummary), RecordError> {
    let open = || {
        std::fs::File::open(path).map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    read_stream(open, path, opts)
}

/// Reads a perf.data file held in memory (`name` names it in messages); see
/// [`read_with_summary`].
pub fn read_bytes(
    bytes: &[u8],
    name: &Path,
    opts: &PerfDataOptions,
) -> Result<(Vec<Profile>, crate::RecordingSummary), RecordError> {
    read_stream(|| Ok(std::io::Cursor::new(bytes)), name, opts)
}

fn read_stream<R: Read + Seek>(
    open: impl Fn() -> Result<R, RecordError>,
    path: &Path,
    opts: &PerfDataOptions,
) -> Result<(Vec<Profile>, crate::RecordingSummary), RecordError> {
    let bad = |why: String| RecordError::PerfData {
        path: path.to_path_buf(),
        why,
    };
    let io_err = |source: std::io::Error| RecordError::PerfData {
        path: path.to_path_buf(),
        why: source.to_string(),
    };
    // The header's own checks say what is wrong with it: as a file that is not readable.
    let unreadable = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::InvalidData => bad(format!("not a readable perf.data file: {e}")),
        _ => io_err(e),
    };
    let (reader, damage) = Mended::open(open()?).map_err(unreadable)?;
    let reader = std::io::BufReader::with_capacity(128 * 1024, reader);
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = match PerfFileReader::parse_file(reader) {
        Ok(r) => r,
        // Features cut by the end of the file may not parse even as zeros: read the
        // file as if it had none (event names then come from the attributes).
        Err(e) if damage.is_some() => {
            let (mut reader, _) = Mended::open(open()?).map_err(io_err)?;
            reader.drop_features();
            PerfFileReader::parse_file(std::io::BufReader::with_capacity(128 * 1024, reader))
                .map_err(|_| bad(format!("not a readable perf.data file: {e}")))?
        }
        Err(e) => return Err(bad(format!("not a readable perf.data file: {e}"))),
    };
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
                _ => WeightUnit::of_period(&name),
            };
            EventInfo {
                name,
                unit,
                ..Default::default()
            }
        })
        .collect();
    let mut weigher = Weigher::new(
        events
            .iter()
            .map(|e| match e.unit {
                WeightUnit::Samples => Weigh::One,
                _ => Weigh::Period,
            })
            .collect(),
    );
    let mut collector = Collector::new(events, opts.naming, false);
    collector.use_debuginfod(crate::debuginfo::Debuginfod::from_env());
    if let Some(d) = damage {
        collector.summary.warnings.push(d.to_string());
    }
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
                let time = record.timestamp();
                records::handle(
                    &mut collector,
                    &mut scratch,
                    r,
                    time,
                    &|_| Some(ev),
                    &mut weigher,
                );
            }
            Err(_) => collector.summary.bad_records += 1,
        }
    }
    let (profiles, summary) = collector.finish();
    Ok((profiles, summary))
}

/// Where a perf.data file is cut short, and what was done about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Damage {
    /// The data section ends early: the records up to the last whole one are read.
    Data {
        /// Length of the file.
        len: u64,
        /// Where the data section should end.
        expected: u64,
        /// Offset of the first cut record.
        cut_at: u64,
    },
    /// The data section is whole; what follows it (the feature sections: event names,
    /// build ids) is cut.
    Features {
        /// Length of the file.
        len: u64,
    },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Damage::Data {
                len,
                expected,
                cut_at,
            } => write!(
                f,
                "the file ends at byte {len}, inside its data section (which should end at \
                 byte {expected}): the records before byte {cut_at} were read, the record \
                 cut there and what would follow are missing; event names and build ids \
                 (stored after the data) are lost"
            ),
            Damage::Features { len } => write!(
                f,
                "the file ends at byte {len}, after its data but inside its feature \
                 sections (event names, build ids): every record was read, the missing \
                 feature bytes were taken as zeros"
            ),
        }
    }
}

/// A perf.data file read as if it were whole: bytes past its end read as zeros, and,
/// when its data section is cut, a header that says the data ends at the last whole
/// record and that there are no feature sections. `perf script` reads such files too.
struct Mended<R> {
    file: R,
    len: u64,
    pos: u64,
    /// The file's header as it is served (patched when the file is cut).
    head: Vec<u8>,
}

/// `struct perf_file_header`: magic, size, attr_size, attrs, data, event_types,
/// features bitmap (256 bits).
const HEADER_BYTES: usize = 104;
const DATA_SECTION_AT: usize = 40;
const FEATURES_AT: usize = 72;

impl<R: Read + Seek> Mended<R> {
    fn open(mut file: R) -> std::io::Result<(Mended<R>, Option<Damage>)> {
        let len = file.seek(SeekFrom::End(0))?;
        file.seek(SeekFrom::Start(0))?;
        let mut head = vec![0u8; HEADER_BYTES];
        let n = read_up_to(&mut file, &mut head)?;
        let mut m = Mended {
            file,
            len,
            pos: 0,
            head,
        };
        let big = match &m.head[..8] {
            _ if n < 8 => None,
            b"PERFILE2" => Some(false),
            b"2ELIFREP" => Some(true),
            _ => None,
        };
        let Some(big) = big else {
            m.head.truncate(0);
            return Ok((m, None));
        };
        if n < HEADER_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the file is {n} bytes long, shorter than perf.data's header ({HEADER_BYTES} bytes)"),
            ));
        }
        let u64_at = |h: &[u8], o: usize| {
            let b = h[o..o + 8].try_into().unwrap_or([0; 8]);
            if big {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        check_header(&m.head, len, &u64_at)?;
        let data_off = u64_at(&m.head, DATA_SECTION_AT);
        let data_size = u64_at(&m.head, DATA_SECTION_AT + 8);
        let data_end = data_off.saturating_add(data_size);
        let features: u32 = (0..4)
            .map(|i| u64_at(&m.head, FEATURES_AT + 8 * i).count_ones())
            .sum();
        if data_end <= len || big {
            let end = m.sections_end(data_end, features, &u64_at)?;
            if big {
                // Big-endian files (from other machines) are checked, never mended.
                m.head.truncate(0);
                return Ok((m, None));
            }
            let damage = (end > len).then_some(Damage::Features { len });
            return Ok((m, damage));
        }
        // The data section is cut: find the last whole record.
        let pos = m.last_whole_record(data_off)?;
        m.head[DATA_SECTION_AT + 8..DATA_SECTION_AT + 16]
            .copy_from_slice(&(pos - data_off).to_le_bytes());
        m.drop_features();
        Ok((
            m,
            Some(Damage::Data {
                len,
                expected: data_end,
                cut_at: pos,
            }),
        ))
    }

    /// Where the feature sections that follow the data end (the data ends at
    /// `data_end`, `features` sections are listed); a section larger than the file is an
    /// error.
    fn sections_end(
        &mut self,
        data_end: u64,
        features: u32,
        u64_at: &dyn Fn(&[u8], usize) -> u64,
    ) -> std::io::Result<u64> {
        let len = self.len;
        let table_end = data_end.saturating_add(16 * features as u64);
        let mut end = table_end;
        if table_end <= len {
            self.file.seek(SeekFrom::Start(data_end))?;
            let mut table = vec![0u8; 16 * features as usize];
            self.file.read_exact(&mut table)?;
            for s in table.chunks_exact(16) {
                let (at, size) = (u64_at(s, 0), u64_at(s, 8));
                if size > len {
                    // Not a cut file: a corrupt table (and reading it would ask
                    // for that much memory).
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "the feature section table at byte {data_end} lists a \
                             section of {size} bytes at byte {at}, in a file of {len}"
                        ),
                    ));
                }
                end = end.max(at.saturating_add(size));
            }
        }
        Ok(end)
    }

    /// The end of the last whole record of a data section cut short.
    fn last_whole_record(&mut self, data_off: u64) -> std::io::Result<u64> {
        let len = self.len;
        let mut pos = data_off;
        let mut hdr = [0u8; 8];
        loop {
            if pos.saturating_add(8) > len {
                break;
            }
            self.file.seek(SeekFrom::Start(pos))?;
            self.file.read_exact(&mut hdr)?;
            let size = u16::from_le_bytes([hdr[6], hdr[7]]) as u64;
            if size < 8 || pos + size > len {
                break;
            }
            pos += size;
        }
        Ok(pos)
    }

    /// Serves a header that lists no feature sections.
    fn drop_features(&mut self) {
        if self.head.len() == HEADER_BYTES {
            self.head[FEATURES_AT..FEATURES_AT + 32].fill(0);
        }
    }
}

/// Refuses a header whose numbers cannot be right before the parser trusts them: an
/// attribute size of 0 would divide by zero, and an attribute section larger than the
/// file would size a buffer from garbage.
fn check_header(
    head: &[u8],
    len: u64,
    u64_at: &dyn Fn(&[u8], usize) -> u64,
) -> std::io::Result<()> {
    let bad = |why: String| Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    let attr_size = u64_at(head, 16);
    let (attrs_at, attrs_size) = (u64_at(head, 24), u64_at(head, 32));
    // perf_event_attr is 64 bytes in its first version and a few hundred today.
    if !(64..=4096).contains(&attr_size) {
        return bad(format!(
            "the header gives each event's attributes {attr_size} bytes (perf writes \
             64 to a few hundred)"
        ));
    }
    if attrs_at.checked_add(attrs_size).is_none_or(|end| end > len) {
        return bad(format!(
            "the header lists the event attributes at byte {attrs_at}, {attrs_size} bytes \
             long, in a file of {len} bytes"
        ));
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

impl<R: Read + Seek> Read for Mended<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let n = if (self.pos as usize) < self.head.len() {
            let from = &self.head[self.pos as usize..];
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            n
        } else if self.pos >= self.len {
            // Past the end: zeros (only ever asked for by the mended header's layout).
            buf.fill(0);
            buf.len()
        } else {
            self.file.seek(SeekFrom::Start(self.pos))?;
            let want = buf.len().min((self.len - self.pos) as usize);
            self.file.read(&mut buf[..want])?
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Mended<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.pos)
    }
}
