//! Event names (perf's, plus a few short ones) and how each is opened.
use crate::error::RecordError;
use crate::sys;
use kiln_model::WeightUnit;
use std::path::{Path, PathBuf};

/// An event to record; each becomes its own profile.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventSpec {
    /// On-CPU sampling with the `cpu-clock` software event at the recording's frequency.
    Cpu,
    /// Every page fault (`page-faults` software event).
    PageFaults,
    /// A kernel tracepoint, every hit (`syscalls:sys_enter_mmap`, `sched:sched_switch`).
    Tracepoint {
        /// Subsystem (`syscalls`).
        category: String,
        /// Event (`sys_enter_mmap`).
        name: String,
    },
    /// Off-CPU time: blocked stacks weighted by time off CPU (eBPF, see `kiln-bpf`).
    OffCpu,
    /// Time runnable, waiting for a CPU: where threads were preempted or yielded, weighted
    /// by how long they waited until they ran again (eBPF, with [`EventSpec::OffCpu`]'s
    /// collector). With `cpu` and `offcpu`, a thread's whole wall time is accounted:
    /// running, runnable, blocked.
    Runnable,
    /// A system call weighed by the bytes it asks for: `mmap` and `munmap`, each call
    /// counting its `len` argument (read from the `syscalls:sys_enter_*` tracepoint's
    /// raw data). `syscalls:sys_enter_mmap` itself counts calls, as perf does.
    SyscallBytes {
        /// The system call (`mmap`, `munmap`).
        syscall: String,
    },
    /// `brk` weighed by the bytes each call grows the heap by: the break it returns
    /// (`syscalls:sys_exit_brk`'s `ret`) minus the process's previous break. Calls that
    /// shrink or query the break weigh 0; so does a process's first call seen when its
    /// previous break is unknown (counted in [`crate::RecordingSummary::brk_unknown_base`]).
    Brk,
}

impl EventSpec {
    /// Parses one event name: `cpu` (or `cpu-clock`), `page-faults` (or `faults`), `offcpu`,
    /// `runnable` (or `runq`),
    /// `mmap`, `munmap` (bytes mapped and unmapped), `brk` (bytes the heap grew by), or
    /// any tracepoint as `category:name`.
    pub fn parse(name: &str) -> Result<EventSpec, RecordError> {
        let tp = |c: &str, n: &str| EventSpec::Tracepoint {
            category: c.into(),
            name: n.into(),
        };
        Ok(match name {
            "cpu" | "cpu-clock" => EventSpec::Cpu,
            "page-faults" | "faults" => EventSpec::PageFaults,
            "offcpu" | "off-cpu" => EventSpec::OffCpu,
            "runnable" | "runq" => EventSpec::Runnable,
            "mmap" | "munmap" => EventSpec::SyscallBytes {
                syscall: name.into(),
            },
            "brk" => EventSpec::Brk,
            _ => {
                match name.split_once(':') {
                    Some((c, n))
                        if !c.is_empty()
                            && !n.is_empty()
                            && [c, n].iter().all(|s| {
                                s.bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                            }) =>
                    {
                        tp(c, n)
                    }
                    _ => return Err(RecordError::UnknownEvent {
                        name: name.into(),
                        why: "expected cpu, offcpu, runnable, page-faults, mmap, munmap, brk or a \
                              tracepoint as CATEGORY:NAME (e.g. sched:sched_switch)"
                            .into(),
                    }),
                }
            }
        })
    }

    /// Parses a comma-separated list (`cpu,page-faults,syscalls:sys_enter_mmap`).
    pub fn parse_list(list: &str) -> Result<Vec<EventSpec>, RecordError> {
        list.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| EventSpec::parse(s.trim()))
            .collect()
    }

    /// Whether the off-CPU collector (eBPF) records the event: `offcpu`, `runnable`.
    pub fn is_scheduler_time(&self) -> bool {
        matches!(self, EventSpec::OffCpu | EventSpec::Runnable)
    }

    /// The event's name in profiles (perf's spelling).
    pub fn name(&self) -> String {
        match self {
            EventSpec::Cpu => "cpu-clock".into(),
            EventSpec::PageFaults => "page-faults".into(),
            EventSpec::Tracepoint { category, name } => format!("{category}:{name}"),
            EventSpec::OffCpu => "offcpu".into(),
            EventSpec::Runnable => "runnable".into(),
            EventSpec::SyscallBytes { syscall } => syscall.clone(),
            EventSpec::Brk => "brk".into(),
        }
    }

    /// What the weights of this event count (off-CPU: the default unit, see
    /// [`crate::RecordOptions::offcpu_unit`]).
    pub fn unit(&self) -> WeightUnit {
        match self {
            EventSpec::Cpu => WeightUnit::Samples,
            EventSpec::PageFaults | EventSpec::Tracepoint { .. } => WeightUnit::Events,
            EventSpec::OffCpu | EventSpec::Runnable => WeightUnit::Microseconds,
            EventSpec::SyscallBytes { .. } | EventSpec::Brk => WeightUnit::Bytes,
        }
    }

    /// `(type, config, sample every n, frequency mode)` for `perf_event_open`.
    pub(crate) fn perf_config(&self, freq: u32) -> Result<(u32, u64, u64, bool), RecordError> {
        Ok(match self {
            EventSpec::Cpu => (
                sys::PERF_TYPE_SOFTWARE,
                sys::PERF_COUNT_SW_CPU_CLOCK,
                freq as u64,
                true,
            ),
            EventSpec::PageFaults => (
                sys::PERF_TYPE_SOFTWARE,
                sys::PERF_COUNT_SW_PAGE_FAULTS,
                1,
                false,
            ),
            EventSpec::Tracepoint { category, name } => (
                sys::PERF_TYPE_TRACEPOINT,
                tracepoint_id(category, name)?,
                1,
                false,
            ),
            EventSpec::SyscallBytes { syscall } => (
                sys::PERF_TYPE_TRACEPOINT,
                tracepoint_id("syscalls", &format!("sys_enter_{syscall}"))?,
                1,
                false,
            ),
            EventSpec::Brk => (
                sys::PERF_TYPE_TRACEPOINT,
                tracepoint_id("syscalls", "sys_exit_brk")?,
                1,
                false,
            ),
            EventSpec::OffCpu | EventSpec::Runnable => {
                return Err(RecordError::InvalidOption(format!(
                    "{} is collected with eBPF, not perf_event_open",
                    self.name()
                )))
            }
        })
    }

    /// For events weighed by a tracepoint field: the byte offset and size of that field
    /// in the tracepoint's raw sample data (from its tracefs `format` file).
    pub(crate) fn weight_field(&self) -> Result<Option<(usize, usize)>, RecordError> {
        let (tp, field) = match self {
            EventSpec::SyscallBytes { syscall } => (format!("sys_enter_{syscall}"), "len"),
            EventSpec::Brk => ("sys_exit_brk".to_string(), "ret"),
            _ => return Ok(None),
        };
        let full = format!("syscalls:{tp}");
        let path = tracefs_events(&full)?
            .join("syscalls")
            .join(&tp)
            .join("format");
        let text = std::fs::read_to_string(&path).map_err(|e| RecordError::UnknownEvent {
            name: full.clone(),
            why: format!("cannot read {}: {e}", path.display()),
        })?;
        field_of(&text, field)
            .map(Some)
            .ok_or_else(|| RecordError::UnknownEvent {
                name: full,
                why: format!("{} has no 8-byte field '{field}'", path.display()),
            })
    }
}

/// `(offset, size)` of field `name` in a tracefs `format` file
/// (`field:size_t len; offset:24; size:8; signed:0;`, tab-separated), for 8-byte
/// fields.
fn field_of(format: &str, name: &str) -> Option<(usize, usize)> {
    for line in format.lines() {
        let mut decl = None;
        let mut offset = None;
        let mut size = None;
        for part in line.split(';') {
            let part = part.trim();
            if let Some(d) = part.strip_prefix("field:") {
                decl = d.rsplit([' ', '*']).next();
            } else if let Some(o) = part.strip_prefix("offset:") {
                offset = o.parse().ok();
            } else if let Some(s) = part.strip_prefix("size:") {
                size = s.parse().ok();
            }
        }
        if decl == Some(name) && size == Some(8) {
            return Some((offset?, 8));
        }
    }
    None
}

/// Finds the tracefs `events` directory, mounting tracefs if it is not mounted (as perf
/// does), since a tracepoint is opened by the numeric id found there.
fn tracefs_events(event: &str) -> Result<PathBuf, RecordError> {
    for dir in [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ] {
        match std::fs::metadata(Path::new(dir).join("header_page")) {
            Ok(_) => return Ok(PathBuf::from(dir)),
            // Mounted, but for root only: say so rather than try to mount it again.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(RecordError::UnknownEvent {
                    name: event.into(),
                    why: format!(
                        "{dir} is not readable by this user (tracefs is root's by default): \
                         record tracepoints as root"
                    ),
                })
            }
            Err(_) => {}
        }
    }
    let target = c"/sys/kernel/tracing";
    let fstype = c"tracefs";
    // SAFETY: all pointers are valid NUL-terminated strings; data is null.
    let r = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        return Ok(PathBuf::from("/sys/kernel/tracing/events"));
    }
    Err(RecordError::NoTracefs {
        event: event.into(),
        why: std::io::Error::last_os_error().to_string(),
    })
}

fn tracepoint_id(category: &str, name: &str) -> Result<u64, RecordError> {
    let full = format!("{category}:{name}");
    let events = tracefs_events(&full)?;
    let cat_dir = events.join(category);
    if !cat_dir.is_dir() {
        return Err(RecordError::UnknownEvent {
            name: full,
            why: format!(
                "this kernel has no tracepoint category '{category}' (no {}); list the \
                 categories with `ls {}` or `perf list tracepoint`",
                cat_dir.display(),
                events.display()
            ),
        });
    }
    let id_path = cat_dir.join(name).join("id");
    let text = std::fs::read_to_string(&id_path).map_err(|e| RecordError::UnknownEvent {
        name: full.clone(),
        // Only a missing file means a missing tracepoint: a permission error (tracefs
        // mounted for root only) or another failure says what it is.
        why: match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "this kernel has no tracepoint '{name}' in '{category}' (no {}); list them with \
                 `ls {}`",
                id_path.display(),
                cat_dir.display()
            ),
            std::io::ErrorKind::PermissionDenied => format!(
                "cannot read {}: permission denied (tracepoints need root, or tracefs \
                 readable by this user)",
                id_path.display()
            ),
            _ => format!("cannot read {}: {e}", id_path.display()),
        },
    })?;
    text.trim().parse().map_err(|_| RecordError::UnknownEvent {
        name: full,
        why: format!("{} does not hold a number", id_path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_in_tracepoint_formats() {
        let f = "name: sys_enter_mmap\nID: 101\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
            \tfield:unsigned long addr;\toffset:16;\tsize:8;\tsigned:0;\n\
            \tfield:size_t len;\toffset:24;\tsize:8;\tsigned:0;\n";
        assert_eq!(field_of(f, "len"), Some((24, 8)));
        assert_eq!(field_of(f, "addr"), Some((16, 8)));
        assert_eq!(field_of(f, "__syscall_nr"), None);
        assert_eq!(field_of(f, "prot"), None);
    }

    #[test]
    fn parses_names() {
        assert_eq!(
            EventSpec::parse_list("cpu, page-faults,mmap,sched:sched_switch").unwrap(),
            vec![
                EventSpec::Cpu,
                EventSpec::PageFaults,
                EventSpec::SyscallBytes {
                    syscall: "mmap".into()
                },
                EventSpec::Tracepoint {
                    category: "sched".into(),
                    name: "sched_switch".into()
                },
            ]
        );
        assert_eq!(
            EventSpec::parse("munmap").unwrap(),
            EventSpec::SyscallBytes {
                syscall: "munmap".into()
            }
        );
        let e = EventSpec::parse("cycles").unwrap_err().to_string();
        assert!(e.contains("unknown event 'cycles'"), "{e}");
        assert!(EventSpec::parse("a:b/../c").is_err());
    }
}
