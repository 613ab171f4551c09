//! The change points of a series read from standard input (one number a line), as
//! `kiln runs trend` finds them, with the time taken: `bench/store/trend.sh` runs it on a
//! series of 100,000 values.
//!
//!   changepoints [ALPHA] < series.txt
use kiln_compare::trend::edivisive::{change_points, Options};
use std::io::Read;

fn main() {
    let alpha: f64 = std::env::args()
        .nth(1)
        .map_or(0.05, |a| a.parse().expect("ALPHA is a number"));
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .expect("standard input reads");
    let mut x = Vec::new();
    for (n, line) in input.lines().enumerate() {
        match line.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => x.push(v),
            _ if line.trim().is_empty() => {}
            _ => {
                eprintln!("line {}: '{}' is not a number", n + 1, line.trim());
                std::process::exit(1);
            }
        }
    }
    let opts = Options::for_alpha(alpha);
    let start = std::time::Instant::now();
    let found = change_points(&x, &opts);
    let took = start.elapsed();
    for c in &found {
        println!("{}\tp={:.4}", c.index, c.p);
    }
    eprintln!(
        "{} values, {} change point(s), {} shuffles per test: {:.3} s",
        x.len(),
        found.len(),
        opts.permutations,
        took.as_secs_f64()
    );
}
