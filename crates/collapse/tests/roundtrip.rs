//! Property tests: folded → model → folded is the identity on canonical folded text
//! (sorted, merged lines), and the model agrees with a slow, obviously-correct one.
mod common;
use common::folded;
use kiln_collapse::{folded, Input, Options};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn frame() -> impl Strategy<Value = String> {
    // Anything but the separators of the format; may contain spaces, digits, parentheses,
    // non-ASCII and control characters, but does not end in whitespace.
    "[a-zA-Z0-9_:()<>\\[\\]$'. \u{e9}\u{4e2d}\u{1}-]{0,12}[a-zA-Z_\u{e9})]"
}

fn stacks() -> impl Strategy<Value = BTreeMap<String, u64>> {
    prop::collection::btree_map(
        prop::collection::vec(frame(), 1..8).prop_map(|v| v.join(";")),
        1u64..1_000_000,
        1..60,
    )
}

proptest! {
    #[test]
    fn folded_model_folded_is_identity(m in stacks()) {
        let text: String = m.iter().map(|(s, c)| format!("{s} {c}\n")).collect();
        let c = folded::collapse(Input { name: "p", data: text.as_bytes() }, &Options::default()).unwrap();
        prop_assert_eq!(c.stats.kept as usize, m.len());
        prop_assert_eq!(c.stats.skipped_total(), 0);
        prop_assert_eq!(folded(&c.profile), text);
    }

    #[test]
    fn weights_match_a_naive_model(m in stacks(), dup in 1usize..3) {
        // Each line repeated `dup` times in shuffled order must sum per stack.
        let mut lines: Vec<String> = Vec::new();
        for _ in 0..dup {
            for (s, c) in m.iter().rev() {
                lines.push(format!("{s} {c}"));
            }
        }
        let text = lines.join("\n");
        let c = folded::collapse(Input { name: "p", data: text.as_bytes() }, &Options::default()).unwrap();
        let p = &c.profile;
        let selfw = p.self_weights();
        let total = p.total_weights(&selfw);
        // Naive totals: for every prefix of every stack, the sum of the counts below it.
        let mut naive: BTreeMap<Vec<String>, u64> = BTreeMap::new();
        for (s, cnt) in &m {
            let frames: Vec<String> = s.split(';').map(str::to_string).collect();
            for k in 1..=frames.len() {
                *naive.entry(frames[..k].to_vec()).or_default() += cnt * dup as u64;
            }
        }
        prop_assert_eq!(naive.len(), p.stacks.len());
        for id in p.stacks.ids() {
            let path: Vec<String> = p.stacks.path(id).iter().map(|f| String::from_utf8_lossy(p.frame_name(*f)).into_owned()).collect();
            prop_assert_eq!(naive[&path], total[id.0 as usize]);
        }
    }
}
