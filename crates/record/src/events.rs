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
}

impl EventSpec {
    /// Parses one event name: `cpu` (or `cpu-clock`), `page-faults` (or `faults`), `offcpu`,
    /// `mmap`, `munmap`, `brk` (their `syscalls:sys_enter_*` tracepoints), or any
    /// tracepoint as `category:name`.
    pub fn parse(name: &str) -> Result<EventSpec, RecordError> {
        let tp = |c: &str, n: &str| EventSpec::Tracepoint {
            category: c.into(),
            name: n.into(),
        };
        Ok(match name {
            "cpu" | "cpu-clock" => EventSpec::Cpu,
            "page-faults" | "faults" => EventSpec::PageFaults,
            "offcpu" | "off-cpu" => EventSpec::OffCpu,
            "mmap" | "munmap" | "brk" => tp("syscalls", &format!("sys_enter_{name}")),
            _ => match name.split_once(':') {
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
                _ => {
                    return Err(RecordError::UnknownEvent {
                        name: name.into(),
                        why: "expected cpu, offcpu, page-faults, mmap, munmap, brk or a \
                              tracepoint as CATEGORY:NAME (e.g. sched:sched_switch)"
                            .into(),
                    })
                }
            },
        })
    }

    /// Parses a comma-separated list (`cpu,page-faults,syscalls:sys_enter_mmap`).
    pub fn parse_list(list: &str) -> Result<Vec<EventSpec>, RecordError> {
        list.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| EventSpec::parse(s.trim()))
            .collect()
    }

    /// The event's name in profiles (perf's spelling).
    pub fn name(&self) -> String {
        match self {
            EventSpec::Cpu => "cpu-clock".into(),
            EventSpec::PageFaults => "page-faults".into(),
            EventSpec::Tracepoint { category, name } => format!("{category}:{name}"),
            EventSpec::OffCpu => "offcpu".into(),
        }
    }

    /// What the weights of this event count.
    pub fn unit(&self) -> WeightUnit {
        match self {
            EventSpec::Cpu => WeightUnit::Samples,
            EventSpec::PageFaults | EventSpec::Tracepoint { .. } => WeightUnit::Events,
            EventSpec::OffCpu => WeightUnit::Nanoseconds,
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
            EventSpec::OffCpu => {
                return Err(RecordError::InvalidOption(
                    "offcpu is collected with eBPF, not perf_event_open".into(),
                ))
            }
        })
    }
}

/// Finds the tracefs `events` directory, mounting tracefs if it is not mounted (as perf
/// does), since a tracepoint is opened by the numeric id found there.
fn tracefs_events(event: &str) -> Result<PathBuf, RecordError> {
    for dir in [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ] {
        if Path::new(dir).join("header_page").exists() {
            return Ok(PathBuf::from(dir));
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
    let text = std::fs::read_to_string(&id_path).map_err(|_| RecordError::UnknownEvent {
        name: full.clone(),
        why: format!(
            "this kernel has no tracepoint '{name}' in '{category}' (no {}); list them with \
             `ls {}`",
            id_path.display(),
            cat_dir.display()
        ),
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
    fn parses_names() {
        assert_eq!(
            EventSpec::parse_list("cpu, page-faults,mmap,sched:sched_switch").unwrap(),
            vec![
                EventSpec::Cpu,
                EventSpec::PageFaults,
                EventSpec::Tracepoint {
                    category: "syscalls".into(),
                    name: "sys_enter_mmap".into()
                },
                EventSpec::Tracepoint {
                    category: "sched".into(),
                    name: "sched_switch".into()
                },
            ]
        );
        let e = EventSpec::parse("cycles").unwrap_err().to_string();
        assert!(e.contains("unknown event 'cycles'"), "{e}");
        assert!(EventSpec::parse("a:b/../c").is_err());
    }
}
