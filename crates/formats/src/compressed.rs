//! Compressed inputs: gzip (pprof files, `perf script | gzip`) and zstd, recognised by
//! their first bytes and inflated through one bounded reader.
//!
//! A megabyte of gzip can inflate to a gigabyte of zeros. Every inflation goes through
//! [`kiln_model::input::Bounded`]: past the input limit (`--max-input`, 1 GiB by default)
//! it stops with an error naming the input, whatever reads it — `kiln collapse`,
//! `flamegraph` and `diff` on a file or standard input, or a pprof answer fetched by
//! `kiln run --pprof`. The format of what is inside is recognised from the first 64 KiB
//! of the inflated stream ([`crate::read`]); text formats are then streamed on, so
//! nothing is inflated twice and a stream that is no profile stops after its first
//! 64 KiB.
use crate::FormatError;
use kiln_model::input::{self, Bounded};
use std::borrow::Cow;
use std::io::{self, Read};

/// A compression kiln inflates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// gzip (RFC 1952), members concatenated as `gzip -c a b` writes them.
    Gzip,
    /// Zstandard frames.
    Zstd,
}

impl Codec {
    /// The compression `head` (an input's first bytes) starts with.
    pub fn sniff(head: &[u8]) -> Option<Codec> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Codec::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Codec::Zstd)
        } else {
            None
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// The inflated stream of `raw` (compressed with `codec`), failing past `limit` bytes
/// (the input limit) with an error that names `name`.
pub fn decoder<'a>(
    codec: Codec,
    raw: impl Read + 'a,
    name: &str,
    limit: u64,
) -> Result<Bounded<Box<dyn Read + 'a>>, FormatError> {
    let inner: Box<dyn Read + 'a> = match codec {
        Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        Codec::Zstd => {
            Box::new(zstd::stream::read::Decoder::new(raw).map_err(|e| error(name, codec, e, 0))?)
        }
    };
    Ok(Bounded::new(inner, limit, name, "the inflated data"))
}

/// What an error while inflating `name` means: past the limit, out of memory, cut short,
/// or damaged (`so_far`: bytes inflated before it).
pub fn error(name: &str, codec: Codec, e: io::Error, so_far: u64) -> FormatError {
    if let Some(t) = input::too_large(&e) {
        return FormatError::TooLarge(t.clone());
    }
    if e.kind() == io::ErrorKind::OutOfMemory {
        return FormatError::Io {
            name: name.to_string(),
            source: e,
        };
    }
    FormatError::Malformed {
        name: name.to_string(),
        format: codec.name(),
        why: if e.kind() == io::ErrorKind::UnexpectedEof {
            format!(
                "the {} data is truncated ({so_far} bytes inflated before the end)",
                codec.name()
            )
        } else {
            format!("damaged {} data: {e}", codec.name())
        },
    }
}

/// `bytes` inflated when they are gzip or zstd (to at most `limit` bytes, the input
/// limit), else as they are.
pub fn inflate<'a>(name: &str, bytes: &'a [u8], limit: u64) -> Result<Cow<'a, [u8]>, FormatError> {
    let Some(codec) = Codec::sniff(bytes) else {
        return Ok(Cow::Borrowed(bytes));
    };
    let mut r = decoder(codec, bytes, name, limit)?;
    let mut out = Vec::new();
    input::read_to_end(&mut r, &mut out, name)
        .map_err(|e| error(name, codec, e, out.len() as u64))?;
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_model::input::DEFAULT_LIMIT as LIMIT;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn inflates_gzip_and_zstd_and_leaves_the_rest() {
        let text = b"a;b 1\n".repeat(1000);
        assert_eq!(&*inflate("x.gz", &gzip(&text), LIMIT).unwrap(), &text[..]);
        let z = zstd::bulk::compress(&text, 3).unwrap();
        assert_eq!(&*inflate("x.zst", &z, LIMIT).unwrap(), &text[..]);
        assert!(matches!(
            inflate("x", b"plain", LIMIT).unwrap(),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn truncated_and_damaged_data_are_named() {
        let g = gzip(&b"a;b 1\n".repeat(1000));
        let e = inflate("cut.gz", &g[..g.len() / 2], LIMIT)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cut.gz") && e.contains("truncated"), "{e}");
        let mut bad = g.clone();
        bad[12] ^= 0xff;
        let e = inflate("bad.gz", &bad, LIMIT).unwrap_err().to_string();
        assert!(e.contains("bad.gz"), "{e}");
    }
}
