//! The sampling program loads (the verifier accepts it) and takes tables.
use kiln_bpf::sampler::{CodeMapping, PythonLayout, Sampler, SamplerConfig, PYTHON_FRAME_BYTES};
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
    // CPython 3.11's layout is taken; one with a frame field past the bytes read at once
    // is refused.
    let py311 = PythonLayout {
        head_addr: 0x7f00_0028,
        interp_threads: 16,
        tstate_next: 8,
        tstate_thread: 152,
        tstate_frame: 56,
        cframe_frame: Some(8),
        frame_code: 32,
        frame_previous: 48,
        frame_instr: 56,
        instr_is_index: false,
        frame_entry: Some(68),
        frame_owner: Some(69),
    };
    s.set_python(4242, Some(&py311)).unwrap();
    let past = PythonLayout {
        frame_owner: Some(PYTHON_FRAME_BYTES),
        ..py311
    };
    assert!(s.set_python(4242, Some(&past)).is_err());
    s.set_python(4242, None).unwrap();
    let (n, bad) = s.drain(|_| {}).unwrap();
    assert_eq!((n, bad), (0, 0));
}
