//! Any bytes as a Python process's memory: reading a code object (its names, its line
//! table) and the line of any instruction, and splitting any frames into the runs of
//! evaluation loops, for every layout kiln knows. No panic, no endless loop; runs cover
//! each frame at most once.
//!
//! The first 8 bytes steer: the layout, where the code object is, and an instruction.
#![no_main]
use kiln_record::python::{layout, line_of, loop_runs, read_code, Code, FrameRef, Memory};
use libfuzzer_sys::fuzz_target;

const BASE: u64 = 0x7f00_0000_0000;

struct Bytes<'a>(&'a [u8]);

impl Memory for Bytes<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        let Some(off) = addr.checked_sub(BASE).and_then(|o| usize::try_from(o).ok()) else {
            return false;
        };
        match off.checked_add(buf.len()).and_then(|end| self.0.get(off..end)) {
            Some(s) => {
                buf.copy_from_slice(s);
                true
            }
            None => false,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((ctl, mem)) = data.split_first_chunk::<8>() else {
        return;
    };
    let minor = [10, 11, 12, 13][usize::from(ctl[0] % 4)];
    let l = layout(3, minor).expect("a known layout");
    let at = BASE + u64::from(u16::from_le_bytes([ctl[1], ctl[2]]));
    let instr = u32::from_le_bytes([ctl[4], ctl[5], ctl[6], ctl[7]]);
    let code_type = (ctl[3] & 1 == 1).then_some(BASE);
    if let Some(code) = read_code(&Bytes(mem), l, at, code_type) {
        assert!(code.name.chars().count() <= 4096 && code.file.chars().count() <= 4096);
        let _ = line_of(l, &code, instr);
    }
    // The bytes as a line table.
    let code = Code {
        name: String::new(),
        file: String::new(),
        first_line: u32::from(ctl[1]),
        line_table: mem.to_vec(),
    };
    let _ = line_of(l, &code, instr);
    // The bytes as frames.
    let frames: Vec<FrameRef> = mem
        .chunks_exact(14)
        .map(|c| FrameRef {
            code: u64::from_le_bytes(c[..8].try_into().unwrap()),
            instr: u32::from_le_bytes(c[8..12].try_into().unwrap()),
            entry: c[12],
            owner: c[13],
        })
        .collect();
    let runs = loop_runs(l, &frames);
    assert!(runs.len() <= frames.len());
    let mut end = 0;
    for r in &runs {
        assert!(r.start >= end && r.start <= r.end && r.end <= frames.len());
        end = r.end;
    }
});
