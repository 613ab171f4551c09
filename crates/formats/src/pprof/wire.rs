//! A pprof message read in place: `profile.proto`'s wire format walked over the inflated
//! bytes, without decoding it into owned messages first.
//!
//! Why: decoded by prost, a profile's samples are one heap allocation each (their
//! location ids, their values, their labels), several hundred bytes a sample, all held
//! while the kiln profile is built from them: reading a 49.6 MB pprof of 900,000 samples
//! took 1.6–1.7 times `go tool pprof`'s memory. Here a sample is read from its bytes when
//! its turn comes, a string is a span of the message, and a location's frames sit in one
//! flat array; what stays beside the bytes is a few machine words per table row.
//!
//! Field numbers and wire types are `profile.proto`'s ([`super::proto`]); repeated scalars
//! are read packed or not, unknown fields are skipped, and every length is checked against
//! what is left of its message before it is used.
use prost::encoding::{decode_varint, WireType};

/// A malformed message: what was being read when it broke.
pub(crate) type WireError = String;

/// One field of a message: its number and value.
pub(crate) enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// Fixed-width values (none in profile.proto) are skipped.
    Other,
}

/// The fields of one message, in order.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Fields { buf }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let r = self.read();
        if r.is_err() {
            // Nothing after a broken field can be trusted: the iteration ends.
            self.buf = &[];
        }
        Some(r)
    }
}

impl<'a> Fields<'a> {
    fn read(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let key = decode_varint(&mut self.buf).map_err(|e| format!("a field key: {e}"))?;
        if key > u64::from(u32::MAX) {
            return Err(format!("field key {key} out of range"));
        }
        let tag = (key >> 3) as u32;
        if tag == 0 {
            return Err("field number 0".into());
        }
        let wire = WireType::try_from(key & 7)
            .map_err(|_| format!("field {tag}: invalid wire type {}", key & 7))?;
        let value = match wire {
            WireType::Varint => Value::Varint(
                decode_varint(&mut self.buf).map_err(|e| format!("field {tag}: {e}"))?,
            ),
            WireType::LengthDelimited => {
                let len = decode_varint(&mut self.buf).map_err(|e| format!("field {tag}: {e}"))?;
                if len > self.buf.len() as u64 {
                    let left = self.buf.len();
                    return Err(format!("field {tag} says {len} bytes, but {left} are left"));
                }
                let (v, rest) = self.buf.split_at(len as usize);
                self.buf = rest;
                Value::Bytes(v)
            }
            WireType::SixtyFourBit | WireType::ThirtyTwoBit => {
                let n = if wire == WireType::SixtyFourBit { 8 } else { 4 };
                if self.buf.len() < n {
                    return Err(format!("field {tag}: truncated"));
                }
                self.buf = &self.buf[n..];
                Value::Other
            }
            WireType::StartGroup | WireType::EndGroup => {
                return Err(format!("field {tag}: groups are not part of profile.proto"));
            }
        };
        Ok((tag, value))
    }
}

/// Appends the values of a repeated integer field, packed (`Bytes`) or not (`Varint`).
pub(crate) fn push_ints(v: &Value<'_>, out: &mut Vec<u64>, tag: u32) -> Result<(), WireError> {
    match v {
        Value::Varint(x) => out.push(*x),
        Value::Bytes(mut b) => {
            while !b.is_empty() {
                out.push(decode_varint(&mut b).map_err(|e| format!("field {tag}: {e}"))?);
            }
        }
        Value::Other => return Err(format!("field {tag}: not an integer")),
    }
    Ok(())
}

/// The integer a field holds (an `int64` is its two's complement, as protobuf writes it).
pub(crate) fn int(v: &Value<'_>, tag: u32) -> Result<u64, WireError> {
    match v {
        Value::Varint(x) => Ok(*x),
        _ => Err(format!("field {tag}: not an integer")),
    }
}

/// The bytes a length-delimited field holds.
pub(crate) fn bytes<'a>(v: &Value<'a>, tag: u32) -> Result<&'a [u8], WireError> {
    match v {
        Value::Bytes(b) => Ok(b),
        _ => Err(format!("field {tag}: not a length-delimited field")),
    }
}

/// `perftools.profiles.ValueType` (`sample_type`, `period_type`): (type, unit).
pub(crate) fn value_type(b: &[u8]) -> Result<(i64, i64), WireError> {
    let mut out = (0, 0);
    for f in Fields::new(b) {
        match f? {
            (1, v) => out.0 = int(&v, 1)? as i64,
            (2, v) => out.1 = int(&v, 2)? as i64,
            _ => {}
        }
    }
    Ok(out)
}

/// `perftools.profiles.Label`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Label {
    pub key: i64,
    pub str: i64,
    pub num: i64,
    pub num_unit: i64,
}

pub(crate) fn label(b: &[u8]) -> Result<Label, WireError> {
    let mut l = Label::default();
    for f in Fields::new(b) {
        match f? {
            (1, v) => l.key = int(&v, 1)? as i64,
            (2, v) => l.str = int(&v, 2)? as i64,
            (3, v) => l.num = int(&v, 3)? as i64,
            (4, v) => l.num_unit = int(&v, 4)? as i64,
            _ => {}
        }
    }
    Ok(l)
}

/// `perftools.profiles.Sample`, into reused buffers: location ids (leaf first), values,
/// and the bytes of its labels.
pub(crate) fn sample<'a>(
    b: &'a [u8],
    locations: &mut Vec<u64>,
    values: &mut Vec<u64>,
    labels: &mut Vec<&'a [u8]>,
) -> Result<(), WireError> {
    locations.clear();
    values.clear();
    labels.clear();
    for f in Fields::new(b) {
        match f? {
            (1, v) => push_ints(&v, locations, 1)?,
            (2, v) => push_ints(&v, values, 2)?,
            (3, v) => labels.push(bytes(&v, 3)?),
            _ => {}
        }
    }
    Ok(())
}

/// `perftools.profiles.Mapping`, as far as kiln uses it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Mapping {
    pub id: u64,
    pub memory_start: u64,
    pub file_offset: u64,
    pub filename: i64,
}

pub(crate) fn mapping(b: &[u8]) -> Result<Mapping, WireError> {
    let mut m = Mapping::default();
    for f in Fields::new(b) {
        match f? {
            (1, v) => m.id = int(&v, 1)?,
            (2, v) => m.memory_start = int(&v, 2)?,
            (4, v) => m.file_offset = int(&v, 4)?,
            (5, v) => m.filename = int(&v, 5)? as i64,
            _ => {}
        }
    }
    Ok(m)
}

/// `perftools.profiles.Function`.
#[derive(Clone, Copy, Default)]
pub(crate) struct Function {
    pub id: u64,
    pub name: i64,
    pub system_name: i64,
    pub filename: i64,
    pub start_line: i64,
}

pub(crate) fn function(b: &[u8]) -> Result<Function, WireError> {
    let mut x = Function::default();
    for f in Fields::new(b) {
        match f? {
            (1, v) => x.id = int(&v, 1)?,
            (2, v) => x.name = int(&v, 2)? as i64,
            (3, v) => x.system_name = int(&v, 3)? as i64,
            (4, v) => x.filename = int(&v, 4)? as i64,
            (5, v) => x.start_line = int(&v, 5)? as i64,
            _ => {}
        }
    }
    Ok(x)
}

/// `perftools.profiles.Location`: its id, mapping and address; its lines (function id,
/// line) go to `lines`, innermost first.
pub(crate) fn location(
    b: &[u8],
    lines: &mut Vec<(u64, i64)>,
) -> Result<(u64, u64, u64), WireError> {
    lines.clear();
    let (mut id, mut mapping, mut address) = (0, 0, 0);
    for f in Fields::new(b) {
        match f? {
            (1, v) => id = int(&v, 1)?,
            (2, v) => mapping = int(&v, 2)?,
            (3, v) => address = int(&v, 3)?,
            (4, v) => {
                let (mut func, mut line) = (0, 0);
                for g in Fields::new(bytes(&v, 4)?) {
                    match g? {
                        (1, v) => func = int(&v, 1)?,
                        (2, v) => line = int(&v, 2)? as i64,
                        _ => {}
                    }
                }
                lines.push((func, line));
            }
            _ => {}
        }
    }
    Ok((id, mapping, address))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_and_unpacked_integers_read_alike() {
        let mut out = Vec::new();
        push_ints(&Value::Varint(5), &mut out, 1).unwrap();
        push_ints(&Value::Bytes(&[1, 0x96, 0x01]), &mut out, 1).unwrap();
        assert_eq!(out, [5, 1, 150]);
        assert!(push_ints(&Value::Bytes(&[0x96]), &mut out, 1).is_err());
    }

    #[test]
    fn lengths_past_the_message_are_errors() {
        // Field 2, length-delimited, 100 bytes, 2 there.
        let mut f = Fields::new(&[0x12, 100, 1, 2]);
        assert!(f.next().unwrap().is_err());
        assert!(f.next().is_none(), "stops after an error");
        let mut f = Fields::new(&[0x08]);
        assert!(f.next().unwrap().is_err(), "a varint cut short");
        let mut f = Fields::new(&[0x03]);
        assert!(f.next().unwrap().is_err(), "a group");
    }
}
