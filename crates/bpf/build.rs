//! Compiles the eBPF programs (`src/bpf/*.bpf.c`) with clang and generates
//! their Rust skeletons into `OUT_DIR`.
//!
//! The kernel types the program needs are declared by hand in
//! `src/bpf/kiln_kernel.h` (CO-RE relocated at load time), so building needs
//! clang and the Linux UAPI headers (Debian: `clang`, `linux-libc-dev`) but
//! neither bpftool nor BTF on the build machine.

#[cfg(feature = "programs")]
use std::env;
#[cfg(feature = "programs")]
use std::path::PathBuf;

#[cfg(feature = "programs")]
use libbpf_cargo::SkeletonBuilder;

#[cfg(feature = "programs")]
const SOURCES: [(&str, &str); 3] = [
    ("src/bpf/goparks.bpf.c", "goparks.skel.rs"),
    ("src/bpf/offcpu.bpf.c", "offcpu.skel.rs"),
    ("src/bpf/sampler.bpf.c", "sampler.skel.rs"),
];

#[cfg(not(feature = "programs"))]
fn main() {}

#[cfg(feature = "programs")]
fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    // <linux/types.h> pulls <asm/types.h>, which Debian keeps under the multiarch directory.
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        other => other,
    };
    let clang = env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    for (src, skel) in SOURCES {
        SkeletonBuilder::new()
            .source(src)
            .clang(&clang)
            .clang_args([
                "-Wall".to_string(),
                "-Wno-unused-function".to_string(),
                format!("-I/usr/include/{multiarch}"),
            ])
            .build_and_generate(out.join(skel))
            .unwrap_or_else(|e| {
                panic!(
                    "building {src} failed: {e:#}\n\
                     kiln-bpf needs clang (>= 14) and the Linux UAPI headers \
                     (Debian: apt-get install clang linux-libc-dev); set CLANG to pick a compiler"
                )
            });
        println!("cargo:rerun-if-changed={src}");
    }
    println!("cargo:rerun-if-changed=src/bpf/kiln_kernel.h");
    println!("cargo:rerun-if-env-changed=CLANG");
}
