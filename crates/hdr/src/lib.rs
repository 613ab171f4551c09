//! # kiln-hdr: latency histograms as kiln keeps them
//!
//! One codec for every latency histogram kiln writes or reads, whichever stage it is in:
//! the load generator's whole-run histograms, the per-second ones a run sends and keeps,
//! the run store's blobs and the report's percentile plots.
//!
//! * [`encode_histogram`]: HdrHistogram's V2 serialisation, deflated — what any
//!   HdrHistogram library reads, and histograms of runs merge exactly.
//! * [`try_decode_histogram`]: the same, read back as untrusted input (a stored run may
//!   come from anywhere): bounded inflation, and no allocation the bytes do not back.
//! * [`HistogramSum`]: the one exact merge of stored histograms, counting what it skips.
//! * [`write_interval_log`] / [`read_interval_log`]: a latency's per-second histograms as
//!   an HdrHistogram interval log, the text every HdrHistogram tool reads.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Why a histogram or an interval log could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not start with a V2 cookie.
    #[error("not an HdrHistogram V2 histogram (unknown cookie)")]
    UnknownCookie,
    /// The bytes end inside the V2 header.
    #[error("cut in its header")]
    CutHeader,
    /// The deflated payload does not inflate.
    #[error("damaged deflate data: {0}")]
    Deflate(std::io::Error),
    /// The deflated payload inflates to more than any histogram holds.
    #[error("inflates past {} MiB, more than any histogram", MAX_V2_BYTES >> 20)]
    TooLarge,
    /// The inflated payload is not a plain V2 histogram.
    #[error("not a V2 histogram once inflated")]
    NotV2Inflated,
    /// The header claims more counts than the bytes hold.
    #[error("its header gives {claimed} bytes of counts; it holds {held}")]
    CountsMissing {
        /// Bytes of counts the header gives.
        claimed: usize,
        /// Bytes of counts there are.
        held: usize,
    },
    /// HdrHistogram refused the counts.
    #[error("{0}")]
    Counts(String),
    /// HdrHistogram could not serialise a histogram.
    #[error("cannot encode the histogram: {0}")]
    Encode(String),
    /// One interval of a log is not a histogram.
    #[error("interval {index}: {source}")]
    Interval {
        /// 1-based position of the interval in the log.
        index: usize,
        /// What is wrong with it.
        source: Box<Error>,
    },
    /// One interval's histogram is not base64.
    #[error("interval {index}: not base64 ({source})")]
    Base64 {
        /// 1-based position of the interval in the log.
        index: usize,
        /// The decoder's complaint.
        source: base64::DecodeError,
    },
    /// A line of a log that is neither a comment, a header nor an interval.
    #[error("after interval {after}: {reason}")]
    LogLine {
        /// Intervals read before it.
        after: usize,
        /// What the log reader said.
        reason: String,
    },
    /// The interval log could not be written.
    #[error("cannot write the interval log: {0}")]
    WriteLog(String),
}

/// Serialises `h` in HdrHistogram's V2 deflate format.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .map_err(|e| Error::Encode(format!("{e:?}")))?;
    Ok(out)
}

/// Writes histograms of consecutive intervals as an HdrHistogram interval log (the text
/// Java's `HistogramLogWriter` writes and every HdrHistogram tool reads), one line per
/// `(end_ns, seconds, histogram)` in order; timestamps are seconds of the caller's clock,
/// to the millisecond. The run store keeps a latency's per-second histograms this way.
pub fn write_interval_log<'a>(
    comment: &str,
    intervals: impl IntoIterator<Item = (u64, f64, &'a Histogram<u64>)>,
) -> Result<Vec<u8>, Error> {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    let mut data = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(comment)
        .begin_log_with(&mut data, &mut ser)
        .map_err(|e| Error::WriteLog(e.to_string()))?;
    for (end_ns, secs, h) in intervals {
        let end = std::time::Duration::from_nanos(end_ns);
        let len = std::time::Duration::from_secs_f64(secs.max(0.0));
        log.write_histogram(h, end.saturating_sub(len), len, None)
            .map_err(|e| Error::WriteLog(e.to_string()))?;
    }
    drop(log);
    Ok(data)
}

/// HdrHistogram's V2 cookies for 64-bit counts, plain and deflated.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// V2's header: cookie, payload length, normalising offset, digits, lowest, highest and
/// the integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The most a serialised histogram may inflate to. Every value from 1 to u64::MAX at 5
/// significant digits is 6.3 M counts, at most 9 bytes each: 57 MB.
const MAX_V2_BYTES: u64 = 64 << 20;

fn be_u32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a histogram in HdrHistogram's V2 serialisation (deflated or not), as
/// untrusted input: the deflated form inflates to at most 64 MiB, and the length of
/// counts the header gives must be there before anything is allocated for them (the
/// HdrHistogram crate allocates what the header says first).
pub fn try_decode_histogram(data: &[u8]) -> Result<Histogram<u64>, Error> {
    let plain: std::borrow::Cow<'_, [u8]> = match be_u32(data, 0) {
        Some(V2_DEFLATE_COOKIE) => inflate(data)?.into(),
        Some(V2_COOKIE) => data.into(),
        _ => return Err(Error::UnknownCookie),
    };
    let claimed = be_u32(&plain, 4).ok_or(Error::CutHeader)? as usize;
    let held = plain.len().saturating_sub(V2_HEADER);
    if claimed > held {
        return Err(Error::CountsMissing { claimed, held });
    }
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| Error::Counts(format!("{e:?}")))
}

/// The plain V2 histogram inside a deflated one, inflated to at most [`MAX_V2_BYTES`].
fn inflate(data: &[u8]) -> Result<Vec<u8>, Error> {
    use std::io::Read as _;
    let len = be_u32(data, 4).ok_or(Error::CutHeader)? as usize;
    let body = &data[8..];
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(&body[..len.min(body.len())])
        .take(MAX_V2_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(Error::Deflate)?;
    if out.len() as u64 > MAX_V2_BYTES {
        return Err(Error::TooLarge);
    }
    if be_u32(&out, 0) != Some(V2_COOKIE) {
        return Err(Error::NotV2Inflated);
    }
    Ok(out)
}

/// [`try_decode_histogram`], `None` for data that is not a histogram.
pub fn decode_histogram(data: &[u8]) -> Option<Histogram<u64>> {
    try_decode_histogram(data).ok()
}

/// The one merge of stored latency histograms: histograms added exactly (the sum's range
/// grows to hold every value), and every one that could not be read or added counted in
/// `skipped`, never dropped silently.
#[derive(Debug, Default)]
pub struct HistogramSum {
    sum: Option<Histogram<u64>>,
    /// Histograms that could not be decoded or added.
    pub skipped: usize,
}

impl HistogramSum {
    /// Adds a decoded histogram.
    pub fn add(&mut self, h: &Histogram<u64>) {
        let sum = self.sum.get_or_insert_with(|| {
            let mut s = Histogram::new_from(h);
            s.auto(true);
            s
        });
        if sum.add(h).is_err() {
            self.skipped += 1;
        }
    }

    /// Adds a stored (serialised) histogram; one that cannot be decoded is counted.
    pub fn add_encoded(&mut self, data: &[u8]) {
        match decode_histogram(data) {
            Some(h) => self.add(&h),
            None => self.skipped += 1,
        }
    }

    /// The sum, if it holds any value.
    pub fn finish(self) -> Option<Histogram<u64>> {
        self.sum.filter(|h| !h.is_empty())
    }
}

/// Reads an interval log ([`write_interval_log`]): each interval's end (ns, to the
/// millisecond the log keeps) and its histogram, in order; the first line that is not a
/// comment, a header or a readable interval is an error naming it.
pub fn read_interval_log(data: &[u8]) -> Result<Vec<(u64, Histogram<u64>)>, Error> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut out = Vec::new();
    for e in IntervalLogIterator::new(data) {
        match e {
            Ok(LogEntry::Interval(ih)) => {
                let index = out.len() + 1;
                let end = (ih.start_timestamp() + ih.duration()).as_nanos();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(ih.encoded_histogram())
                    .map_err(|source| Error::Base64 { index, source })?;
                let h = try_decode_histogram(&bytes).map_err(|e| Error::Interval {
                    index,
                    source: Box::new(e),
                })?;
                out.push((u64::try_from(end).unwrap_or(u64::MAX), h));
            }
            Ok(_) => {}
            Err(e) => {
                return Err(Error::LogLine {
                    after: out.len(),
                    reason: format!("{e:?}"),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval log the fuzzer made (one byte changed inside a deflated histogram):
    /// its header claims 2 GiB of counts, which the HdrHistogram crate would allocate
    /// before reading them. It is an error naming the interval, with no allocation.
    #[test]
    fn a_histogram_that_claims_more_counts_than_it_holds_is_an_error() {
        let log = include_bytes!("../../../fuzz/seeds/interval-log-claims-2gib.txt");
        let err = read_interval_log(log).unwrap_err().to_string();
        assert!(err.starts_with("interval "), "{err}");
        // The same, made by hand: a plain V2 histogram whose payload length is raised.
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(120).unwrap();
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        assert_eq!(try_decode_histogram(&plain).unwrap().len(), 1);
        plain[4..8].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
        let err = try_decode_histogram(&plain).unwrap_err().to_string();
        assert!(err.contains("bytes of counts"), "{err}");
        // A deflated one that inflates to more than any histogram.
        let big = vec![0u8; (MAX_V2_BYTES + 10) as usize];
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, &V2_COOKIE.to_be_bytes()).unwrap();
        std::io::Write::write_all(&mut z, &big).unwrap();
        let z = z.finish().unwrap();
        let mut bomb = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        bomb.extend_from_slice(&(z.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&z);
        let err = try_decode_histogram(&bomb).unwrap_err().to_string();
        assert!(err.contains("inflates past"), "{err}");
        assert!(try_decode_histogram(b"").is_err());
        assert!(try_decode_histogram(&encode_histogram(&h).unwrap()).is_ok());
    }

    #[test]
    fn an_encoded_histogram_decodes_to_the_same_counts() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for v in [1, 120, 950, 40_000, 2_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let data = encode_histogram(&h).unwrap();
        assert_eq!(be_u32(&data, 0), Some(V2_DEFLATE_COOKIE));
        let back = try_decode_histogram(&data).unwrap();
        assert_eq!(back, h);
        // A cut anywhere is an error, never a panic.
        for cut in 0..data.len() {
            assert!(try_decode_histogram(&data[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn an_interval_log_reads_back_what_was_written() {
        let mut a = Histogram::<u64>::new(3).unwrap();
        a.record(100).unwrap();
        let mut b = Histogram::<u64>::new(3).unwrap();
        b.record_n(7_000, 3).unwrap();
        let log = write_interval_log("test", [(2_000_000_000, 1.0, &a), (3_000_000_000, 1.0, &b)])
            .unwrap();
        let back = read_interval_log(&log).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back[0].0, back[0].1.len()), (2_000_000_000, 1));
        assert_eq!((back[1].0, back[1].1.len()), (3_000_000_000, 3));
        // A line that is not an interval is named.
        let mut bad = log.clone();
        bad.extend_from_slice(b"0.000,1.000,7.0,@@@\n");
        let err = read_interval_log(&bad).unwrap_err().to_string();
        assert!(err.starts_with("interval 3: not base64"), "{err}");
    }

    #[test]
    fn a_sum_holds_every_value_and_counts_what_it_cannot_read() {
        // Two ranges: a sum made from the narrow one must grow to hold the wide one's values.
        let mut narrow = Histogram::<u64>::new_with_bounds(1, 1_000, 3).unwrap();
        narrow.record(120).unwrap();
        narrow.record(950).unwrap();
        let mut wide = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        wide.record(2_000_000).unwrap();
        let mut sum = HistogramSum::default();
        sum.add_encoded(&encode_histogram(&narrow).unwrap());
        sum.add_encoded(&encode_histogram(&wide).unwrap());
        sum.add_encoded(b"not a histogram");
        assert_eq!(sum.skipped, 1);
        let h = sum.finish().unwrap();
        assert_eq!(h.len(), 3);
        assert!(h.max() >= 2_000_000 && h.equivalent(h.max(), 2_000_000));
        assert!(h.equivalent(h.min(), 120));
        // Nothing readable: no histogram, and the skip is counted.
        let mut none = HistogramSum::default();
        none.add_encoded(&[]);
        assert_eq!(none.skipped, 1);
        assert!(none.finish().is_none());
    }
}
