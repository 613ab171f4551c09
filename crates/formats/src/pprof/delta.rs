//! The difference of two pprof profiles of one process, as `go tool pprof -base` computes
//! it: Go's mutex, block and allocation profiles count from the process's start, so what
//! happened between two fetches is the later one minus the earlier one, sample by sample.
//!
//! Samples are matched by what they mean, not by their ids (each fetch numbers its
//! locations afresh): the stack's addresses with their functions, files and lines, and
//! the sample's labels.
use super::proto;
use crate::FormatError;
use std::collections::HashMap;

/// What a subtraction met.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeltaStats {
    /// Samples of the later profile kept (some value not zero after the subtraction;
    /// samples of one meaning merged into one).
    pub kept: usize,
    /// Samples of the later profile whose values all became zero (nothing happened there
    /// between the two fetches), samples of one meaning merged into one.
    pub unchanged: usize,
    /// Samples of the earlier profile with a non-zero cumulative value that the later one
    /// does not have (a cumulative profile never loses one; a restarted process does).
    pub base_only: usize,
    /// Samples whose subtracted value is negative (the counter went back: a restart).
    pub negative: usize,
}

/// A sample's meaning: per location (leaf first) its address and lines as (function
/// name, file, line); then its labels as (key, text, number, unit).
type Key = (
    Vec<(u64, Vec<(Vec<u8>, Vec<u8>, i64)>)>,
    Vec<(Vec<u8>, Vec<u8>, i64, Vec<u8>)>,
);

struct Resolver<'a> {
    name: &'a str,
    msg: &'a proto::Profile,
    locations: HashMap<u64, &'a proto::Location>,
    functions: HashMap<u64, &'a proto::Function>,
}

impl<'a> Resolver<'a> {
    fn new(name: &'a str, msg: &'a proto::Profile) -> Self {
        Resolver {
            name,
            msg,
            locations: msg.location.iter().map(|l| (l.id, l)).collect(),
            functions: msg.function.iter().map(|f| (f.id, f)).collect(),
        }
    }

    fn bad(&self, why: String) -> FormatError {
        FormatError::Malformed {
            name: self.name.to_string(),
            format: "pprof",
            why,
        }
    }

    fn string(&self, i: i64, what: &str) -> Result<Vec<u8>, FormatError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.msg.string_table.get(i))
            .cloned()
            .ok_or_else(|| {
                self.bad(format!(
                    "{what} names string {i}, but the string table has {} strings",
                    self.msg.string_table.len()
                ))
            })
    }

    fn key(&self, si: usize, s: &proto::Sample) -> Result<Key, FormatError> {
        let mut stack = Vec::with_capacity(s.location_id.len());
        for &lid in &s.location_id {
            let loc = self.locations.get(&lid).ok_or_else(|| {
                self.bad(format!(
                    "sample {si} names location {lid}, which does not exist"
                ))
            })?;
            let mut lines = Vec::with_capacity(loc.line.len());
            for l in &loc.line {
                let f = self.functions.get(&l.function_id).ok_or_else(|| {
                    self.bad(format!(
                        "location {lid} names function {}, which does not exist",
                        l.function_id
                    ))
                })?;
                let what = format!("function {}", f.id);
                lines.push((
                    self.string(f.name, &what)?,
                    self.string(f.filename, &what)?,
                    l.line,
                ));
            }
            stack.push((loc.address, lines));
        }
        let mut labels = Vec::with_capacity(s.label.len());
        for l in &s.label {
            let what = format!("a label of sample {si}");
            labels.push((
                self.string(l.key, &what)?,
                self.string(l.str, &what)?,
                l.num,
                self.string(l.num_unit, &what)?,
            ));
        }
        labels.sort();
        Ok((stack, labels))
    }

    fn types(&self) -> Result<Vec<String>, FormatError> {
        self.msg
            .sample_type
            .iter()
            .enumerate()
            .map(|(i, t)| {
                self.string(t.r#type, &format!("sample_type {i}"))
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            })
            .collect()
    }
}

/// `later` minus `base` (`go tool pprof -base base later`) for the sample types that
/// `cumulative` names (`delay`, `alloc_space`); the others (`inuse_space`) keep the later
/// profile's values. Both must have the same sample types. The result is `later`'s message
/// with its samples replaced: those whose values all become zero are left out, and its
/// duration becomes the time between the two.
pub fn subtract(
    name: &str,
    later: &proto::Profile,
    base: &proto::Profile,
    cumulative: &dyn Fn(&str) -> bool,
) -> Result<(proto::Profile, DeltaStats), FormatError> {
    let rl = Resolver::new(name, later);
    let rb = Resolver::new(name, base);
    let types = rl.types()?;
    if types != rb.types()? {
        return Err(rl.bad(format!(
            "the two profiles have different sample types ({} and {})",
            types.join(", "),
            rb.types()?.join(", ")
        )));
    }
    let sub: Vec<bool> = types.iter().map(|t| cumulative(t)).collect();
    let n = types.len();
    let check = |r: &Resolver, si: usize, s: &proto::Sample| {
        if s.value.len() != n {
            Err(r.bad(format!(
                "sample {si} has {} values for {n} sample types",
                s.value.len()
            )))
        } else {
            Ok(())
        }
    };
    let mut before: HashMap<Key, Vec<i64>> = HashMap::with_capacity(base.sample.len());
    for (si, s) in base.sample.iter().enumerate() {
        check(&rb, si, s)?;
        let e = before.entry(rb.key(si, s)?).or_insert_with(|| vec![0; n]);
        for (a, b) in e.iter_mut().zip(&s.value) {
            *a = a.saturating_add(*b);
        }
    }
    // Samples of one meaning are merged first (as pprof merges before subtracting).
    let mut merged: Vec<proto::Sample> = Vec::with_capacity(later.sample.len());
    let mut keys: Vec<Key> = Vec::with_capacity(later.sample.len());
    let mut at: HashMap<Key, usize> = HashMap::with_capacity(later.sample.len());
    for (si, s) in later.sample.iter().enumerate() {
        check(&rl, si, s)?;
        let k = rl.key(si, s)?;
        match at.get(&k) {
            Some(&i) => {
                for (a, b) in merged[i].value.iter_mut().zip(&s.value) {
                    *a = a.saturating_add(*b);
                }
            }
            None => {
                at.insert(k.clone(), merged.len());
                merged.push(s.clone());
                keys.push(k);
            }
        }
    }
    let mut stats = DeltaStats::default();
    let mut out = later.clone();
    out.sample.clear();
    for (mut s, k) in merged.into_iter().zip(keys) {
        if let Some(b) = before.remove(&k) {
            for (i, v) in s.value.iter_mut().enumerate() {
                if sub[i] {
                    *v = v.saturating_sub(b[i]);
                }
            }
        }
        if s.value.iter().all(|&v| v == 0) {
            stats.unchanged += 1;
            continue;
        }
        if s.value.iter().any(|&v| v < 0) {
            stats.negative += 1;
        }
        stats.kept += 1;
        out.sample.push(s);
    }
    stats.base_only = before
        .values()
        .filter(|v| v.iter().zip(&sub).any(|(&x, &c)| c && x != 0))
        .count();
    if later.time_nanos > 0 && base.time_nanos > 0 {
        out.duration_nanos = later.time_nanos.saturating_sub(base.time_nanos).max(0);
    }
    Ok((out, stats))
}

/// A message's bytes, gzipped as Go serves them (`.pb.gz`).
pub fn encode_gz(msg: &proto::Profile) -> Vec<u8> {
    use prost::Message;
    use std::io::Write;
    let bytes = msg.encode_to_vec();
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = z.write_all(&bytes);
    z.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile with types `delay` (cumulative) and `inuse`, and the given samples as
    /// (function names leaf first, values).
    fn profile(samples: &[(&[&str], [i64; 2])], time: i64) -> proto::Profile {
        let mut p = proto::Profile {
            string_table: vec![
                b"".to_vec(),
                b"delay".to_vec(),
                b"inuse".to_vec(),
                b"ns".to_vec(),
            ],
            time_nanos: time,
            ..Default::default()
        };
        p.sample_type = vec![
            proto::ValueType { r#type: 1, unit: 3 },
            proto::ValueType { r#type: 2, unit: 3 },
        ];
        // Ids in reverse order of first use, so the two profiles number them differently.
        for (names, v) in samples {
            let mut ids = Vec::new();
            for n in names.iter() {
                let sid = p.string_table.len() as i64;
                p.string_table.push(n.as_bytes().to_vec());
                let id = 1000 - p.function.len() as u64;
                p.function.push(proto::Function {
                    id,
                    name: sid,
                    ..Default::default()
                });
                p.location.push(proto::Location {
                    id,
                    address: n.len() as u64,
                    line: vec![proto::Line {
                        function_id: id,
                        line: 1,
                        column: 0,
                    }],
                    ..Default::default()
                });
                ids.push(id);
            }
            p.sample.push(proto::Sample {
                location_id: ids,
                value: v.to_vec(),
                label: Vec::new(),
            });
        }
        p
    }

    #[test]
    fn cumulative_values_are_subtracted_by_meaning() {
        let base = profile(
            &[(&["lock", "a"], [10, 5]), (&["lock", "b"], [7, 2])],
            1_000,
        );
        let later = profile(
            &[
                (&["lock", "c"], [3, 0]),
                (&["lock", "b"], [7, 2]),
                (&["lock", "a"], [25, 5]),
            ],
            4_000,
        );
        let (d, st) = subtract("x", &later, &base, &|t| t == "delay").unwrap();
        let vals: Vec<Vec<i64>> = d.sample.iter().map(|s| s.value.clone()).collect();
        // c is new (3), b's delay did not grow but its inuse value is the later one, a grew by 15.
        assert_eq!(vals, vec![vec![3, 0], vec![0, 2], vec![15, 5]]);
        assert_eq!(d.duration_nanos, 3_000);
        assert_eq!(
            st,
            DeltaStats {
                kept: 3,
                unchanged: 0,
                base_only: 0,
                negative: 0
            }
        );
        // Everything cumulative: b drops out.
        let (d, st) = subtract("x", &later, &base, &|_| true).unwrap();
        assert_eq!(d.sample.len(), 2);
        assert_eq!(st.unchanged, 1);
        // A sample gone from the later profile is counted.
        let (_, st) = subtract("x", &base, &later, &|_| true).unwrap();
        assert_eq!(st.base_only, 1);
        assert_eq!(st.negative, 1);
    }

    #[test]
    fn samples_of_one_meaning_are_merged_before_the_subtraction() {
        let base = profile(&[(&["a"], [5, 0])], 0);
        let later = profile(&[(&["a"], [4, 0]), (&["a"], [3, 1])], 0);
        let (d, st) = subtract("x", &later, &base, &|t| t == "delay").unwrap();
        assert_eq!(d.sample.len(), 1);
        assert_eq!(d.sample[0].value, vec![2, 1]);
        assert_eq!(st.kept, 1);
        let (d, _) = subtract("x", &later, &later, &|_| true).unwrap();
        assert!(d.sample.is_empty());
    }

    #[test]
    fn bad_input_is_an_error() {
        let base = profile(&[(&["a"], [1, 1])], 0);
        let mut later = profile(&[(&["a"], [2, 1])], 0);
        later.sample[0].location_id.push(77);
        let e = subtract("x", &later, &base, &|_| true).unwrap_err();
        assert!(e.to_string().contains("location 77"), "{e}");
        let mut other = base.clone();
        other.sample_type.pop();
        assert!(subtract("x", &other, &base, &|_| true).is_err());
        let mut short = base.clone();
        short.sample[0].value.pop();
        assert!(subtract("x", &short, &base, &|_| true).is_err());
    }
}
