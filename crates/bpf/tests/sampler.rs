//! The sampling program loads (the verifier accepts it) and takes tables.
use kiln_bpf::sampler::{CodeMapping, Sampler, SamplerConfig};
use kiln_bpf::unwind_table;

#[test]
fn loads_and_takes_tables() {
    let mut s = Sampler::load(&SamplerConfig {
        row_capacity: 1 << 16,
        ring_bytes: 1 << 16,
        slots: vec![kiln_bpf::sampler::SlotKind::Sampling],
    })
    .expect("the kernel accepts the sampling program (needs root and BTF)");
    let libc = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
    let t = unwind_table::build(&libc).unwrap();
    let r = s.add_rows(&t.rows).expect("libc's rows fit");
    assert_eq!(r.count as usize, t.rows.len());
    assert_eq!(s.rows_free(), (1 << 16) - r.count);
    assert!(
        s.add_rows(&vec![t.rows[0]; 1 << 16]).is_none(),
        "too many rows are refused"
    );
    let maps: Vec<CodeMapping> = (0..300u64)
        .map(|i| CodeMapping {
            start: 0x10000 * (i + 1),
            end: 0x10000 * (i + 1) + 0x1000,
            bias: 0,
            rows: (i == 7).then_some(r),
        })
        .collect();
    assert_eq!(s.set_process(4242, &maps).unwrap(), 300 - 256);
    let (n, bad) = s.drain(|_| {}).unwrap();
    assert_eq!((n, bad), (0, 0));
}
