//! What a run records about where it ran and what it profiled.
use kiln_store::TargetInfo;

fn uname() -> Option<libc::utsname> {
    // SAFETY: uname fills the struct we own; all-zero bytes are a valid utsname.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        (libc::uname(&mut u) == 0).then_some(u)
    }
}

fn field(f: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = f
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The machine's host name.
pub fn host_name() -> String {
    uname().map(|u| field(&u.nodename)).unwrap_or_default()
}

/// The kernel release (`uname -r`).
pub fn kernel_release() -> String {
    uname().map(|u| field(&u.release)).unwrap_or_default()
}

/// CPUs online.
pub fn cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

/// The GNU build id of an ELF file, hex; empty when it has none or cannot be read.
pub fn build_id(path: &std::path::Path) -> String {
    use object::Object;
    let Ok(file) = std::fs::File::open(path) else {
        return String::new();
    };
    // SAFETY: a read-only private mapping; a file changed underneath could only give
    // garbage bytes to a parser that checks every bound.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return String::new();
    };
    match object::File::parse(&*map)
        .ok()
        .and_then(|f| f.build_id().ok().flatten())
    {
        Some(id) => id.iter().map(|b| format!("{b:02x}")).collect(),
        None => String::new(),
    }
}

/// What the target processes are: name, executable, its build id, command line.
pub fn target_info(pids: &[u32]) -> TargetInfo {
    let Some(&first) = pids.first() else {
        return TargetInfo::default();
    };
    // Bytes: a name cut mid-character by the kernel (15 bytes) is not UTF-8; its stray
    // bytes are kept as `\xNN`, never dropped.
    let text = |b: &[u8]| kiln_model::text::from_bytes(b).into_owned();
    let comm = kiln_os::proc::comm(first)
        .map(|b| text(b.trim_ascii_end()))
        .unwrap_or_default();
    let exe_path = std::fs::read_link(format!("/proc/{first}/exe")).ok();
    let build_id = build_id(std::path::Path::new(&format!("/proc/{first}/exe")));
    let cmdline = kiln_os::proc::read(format!("/proc/{first}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(text)
                .collect()
        })
        .unwrap_or_default();
    TargetInfo {
        pids: pids.to_vec(),
        comm,
        exe: exe_path
            .map(|p| text(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str())))
            .unwrap_or_default(),
        build_id,
        cmdline,
        cpus_allowed: kiln_os::proc::read(format!("/proc/{first}/status"))
            .ok()
            .and_then(|b| kiln_os::proc::status_value(&b, "Cpus_allowed_list").map(cpu_list_len)),
        env: runtime_env(first),
        open_files_limit: open_files_limit(first),
        // Read as the measurement ends.
        peers: Vec::new(),
    }
}

/// The soft limit of `pid`'s open files (`Max open files` of `/proc/PID/limits`); `None`
/// when unlimited or unread.
fn open_files_limit(pid: u32) -> Option<u64> {
    let b = kiln_os::proc::read(format!("/proc/{pid}/limits")).ok()?;
    String::from_utf8_lossy(&b)
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many CPUs a list such as `0-3,6` names (a `Cpus_allowed_list`).
fn cpu_list_len(list: &[u8]) -> u32 {
    String::from_utf8_lossy(list)
        .split(',')
        .filter_map(|r| {
            let (a, b) = r.trim().split_once('-').unwrap_or((r.trim(), r.trim()));
            let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
            b.checked_sub(a).map(|n| n + 1)
        })
        .sum()
}

/// The runtimes' settings in `pid`'s environment ([`kiln_store::RUNTIME_ENV`]), as
/// `NAME=value`; none when it cannot be read.
fn runtime_env(pid: u32) -> Vec<String> {
    let Ok(b) = kiln_os::proc::read(format!("/proc/{pid}/environ")) else {
        return Vec::new();
    };
    b.split(|&c| c == 0)
        .filter(|v| {
            let name = v.split(|&c| c == b'=').next().unwrap_or(v);
            kiln_store::RUNTIME_ENV.iter().any(|k| k.as_bytes() == name)
        })
        .map(|v| kiln_model::text::from_bytes(v).into_owned())
        .collect()
}
