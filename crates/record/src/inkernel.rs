//! Stacks unwound in the kernel at sample time (`--unwind kernel`), through the eBPF
//! sampler of `kiln-bpf`.
//!
//! The sampler needs, per process, its executable mappings and, for each ELF image, the
//! image's unwind table. They come from what the collector already follows for naming:
//! `/proc/PID/maps` when a process is first seen, then the perf ring's `MMAP2`, `FORK`,
//! `COMM` (exec) and `EXIT` records. Each image's table is built once (from the file the
//! collector has mapped anyway) and copied into the kernel once, however many processes
//! map it. Samples of a process whose mappings the kernel does not have yet are left to
//! perf, which copies the stack for the user-space unwinder ([`InKernelSummary::no_tables`]).
use crate::collect::{Collector, UserStack};
use crate::error::RecordError;
use crate::live::SlotUse;
use crate::python::FrameRef;
use crate::records::Weigher;
use crate::unwind::{Images, MapKind};
use kiln_bpf::sampler::{
    CodeMapping, PyEnd, PythonLayout, RowRange, Sampler, SamplerConfig, SlotKind, StackEnd,
};
use std::collections::HashMap;
use std::os::fd::AsFd;

/// How in-kernel unwinding went, for the recording's summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InKernelSummary {
    /// Samples taken.
    pub samples: u64,
    /// User stacks that ended where the code marks its root: the outermost CFI frame
    /// (`_start`, `clone3`), a null frame pointer (the bottom of an Erlang process's
    /// stack, the BEAM's scheduler loop) or a null return address.
    pub ended_at_root: u64,
    /// User stacks that ended at memory that could not be read.
    pub ended_unreadable: u64,
    /// User stacks that ended in code with no unwind rule and no frame pointer.
    pub ended_no_rule: u64,
    /// User stacks that ended at a frame-pointer value that was not a return address
    /// (the walk had left real frames) or did not move up the stack.
    pub ended_bad_frame: u64,
    /// User stacks cut at the frame limit (128).
    pub ended_depth: u64,
    /// Samples without a user stack (kernel threads, the idle task).
    pub no_user_stack: u64,
    /// Samples of processes whose mappings the kernel did not have yet (a command just
    /// started or exec'd): perf took them with a copy of the stack, unwound afterwards.
    pub no_tables: u64,
    /// Frames unwound with CFI rows, and with frame pointers.
    pub cfi_frames: u64,
    /// Frames unwound with frame pointers.
    pub fp_frames: u64,
    /// Samples taken in a JIT function's prologue or epilogue (return address read from
    /// the top of the stack).
    pub jit_edges: u64,
    /// Samples of a process that exec'd after its mappings were given to the kernel
    /// (also unwound from stack copies).
    pub stale_tables: u64,
    /// Samples whose walk reached a library mapped after the process's mappings were
    /// given to the kernel (also unwound from stack copies).
    pub incomplete_tables: u64,
    /// Processes the kernel could not take mappings for (its table of processes was
    /// full): their samples are unwound from stack copies.
    pub processes_not_stored: u64,
    /// Images whose code the kernel walks by frame pointers: no `.eh_frame`, or the table
    /// was full.
    pub images_without_table: u64,
    /// Processes with more executable mappings than the kernel table holds (the
    /// smallest mappings without unwind rows were left out).
    pub processes_over_mapping_limit: u64,
    /// Per event (by its index among the recording's events): stacks unwound in the
    /// kernel, and of them those that reached their root.
    pub per_event: Vec<EventWalks>,
}

/// How the in-kernel walks of one event ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventWalks {
    /// The event's index among the recording's events (and profiles).
    pub event: usize,
    /// Stacks unwound in the kernel.
    pub walks: u64,
    /// Of them, stacks that reached their root.
    pub at_root: u64,
}

pub(crate) struct InKernel {
    sampler: Sampler,
    /// Event index of each sampler slot, and whether it is a tracepoint's.
    slots: Vec<(usize, bool)>,
    /// Kernel rows per image id (`None`: none, walked by frame pointers).
    image_rows: HashMap<u32, Option<RowRange>>,
    /// What the kernel has for each process.
    pushed: HashMap<u32, Vec<CodeMapping>>,
    /// Processes whose walks left their known code, and when their mappings were last
    /// re-read from `/proc`.
    suspect: Vec<u32>,
    /// Processes whose mappings wait for an image's unwind table (being built on the
    /// tables thread); the kernel leaves their samples to perf meanwhile.
    waiting: Vec<u32>,
    refreshed: HashMap<u32, std::time::Instant>,
    pub summary: InKernelSummary,
}

fn sampler_error(e: kiln_bpf::BpfError) -> RecordError {
    RecordError::InKernelUnwind(e.to_string())
}

impl InKernel {
    /// Loads the sampler; `slots` gives the event index and kind of each of its slots.
    pub fn load(slots: Vec<(usize, SlotUse)>) -> Result<InKernel, RecordError> {
        let mut kinds: Vec<SlotKind> = slots
            .iter()
            .map(|(_, u)| match *u {
                SlotUse::Sampling => SlotKind::Sampling,
                SlotUse::Tracepoint(value_offset) => SlotKind::Tracepoint { value_offset },
            })
            .collect();
        if kinds.is_empty() {
            kinds.push(SlotKind::Sampling);
        }
        kinds.truncate(kiln_bpf::sampler::SLOTS as usize);
        let cfg = SamplerConfig {
            slots: kinds,
            ..SamplerConfig::default()
        };
        let slots = slots
            .into_iter()
            .map(|(ev, u)| (ev, matches!(u, SlotUse::Tracepoint(_))))
            .collect();
        let sampler = Sampler::load(&cfg).map_err(sampler_error)?;
        Ok(InKernel {
            sampler,
            slots,
            image_rows: HashMap::new(),
            pushed: HashMap::new(),
            suspect: Vec::new(),
            waiting: Vec::new(),
            refreshed: HashMap::new(),
            summary: InKernelSummary::default(),
        })
    }

    pub fn attach(&mut self, fd: &std::os::fd::OwnedFd, slot: u32) -> Result<(), RecordError> {
        self.sampler.attach(fd.as_fd(), slot).map_err(sampler_error)
    }

    /// The kernel rows of image `id`; `Err` while its table is being built on the tables
    /// thread.
    fn rows_for(&mut self, id: u32, images: &Images) -> Result<Option<RowRange>, ()> {
        if let Some(r) = self.image_rows.get(&id) {
            return Ok(*r);
        }
        let img = &images.list[id as usize];
        let table = if images.tables_thread() {
            img.unwind_table_if_built().ok_or(())?
        } else {
            img.unwind_table()
        };
        let rows = table.and_then(|t| self.sampler.add_rows(&t.rows));
        if rows.is_none() {
            self.summary.images_without_table += 1;
        }
        self.image_rows.insert(id, rows);
        Ok(rows)
    }

    /// Gives the kernel the current mappings of every process that changed.
    ///
    /// Mappings usually arrive as perf records, but code made executable by `mprotect`
    /// (the BEAM's and V8's JIT regions) has none: the kernel side still walks through it
    /// (it looks the address up in the process's memory map) and flags the sample, and the
    /// process's `/proc/PID/maps` is read again, at most every 100 ms.
    pub fn sync(&mut self, c: &mut Collector) {
        let now = std::time::Instant::now();
        for pid in std::mem::take(&mut self.suspect) {
            let due = self
                .refreshed
                .get(&pid)
                .is_none_or(|t| now.duration_since(*t) >= std::time::Duration::from_millis(100));
            if due {
                self.refreshed.insert(pid, now);
                c.refresh(pid);
            }
        }
        let (mut changed, exited) = c.take_changes();
        for pid in &exited {
            self.sampler.forget_process(*pid);
            self.pushed.remove(pid);
            self.refreshed.remove(pid);
        }
        self.waiting.retain(|p| !exited.contains(p));
        changed.append(&mut self.waiting);
        changed.sort_unstable();
        changed.dedup();
        'process: for pid in changed {
            let Some((p, images)) = c.process_view(pid) else {
                continue;
            };
            let mut maps = Vec::new();
            for (start, m) in p.mappings() {
                let (bias, rows) = match &m.kind {
                    MapKind::Elf(id) => match self.rows_for(*id, images) {
                        Ok(rows) => (images.list[*id as usize].base_avma(start, m.pgoff), rows),
                        Err(()) => {
                            self.waiting.push(pid);
                            continue 'process;
                        }
                    },
                    MapKind::Anon | MapKind::Named(_) => (0, None),
                };
                maps.push(CodeMapping {
                    start,
                    end: m.end,
                    bias,
                    rows,
                });
            }
            if self.pushed.get(&pid) == Some(&maps) {
                continue;
            }
            match self.sampler.set_process(pid, &maps) {
                Ok(0) => {}
                Ok(_) => self.summary.processes_over_mapping_limit += 1,
                Err(e) => {
                    if self.summary.processes_not_stored == 0 {
                        c.summary.warnings.push(format!(
                            "in-kernel unwinding: the mappings of process {pid} (and of any \
                             other counted in the summary) could not be stored: {e}; their \
                             samples are unwound from stack copies"
                        ));
                    }
                    self.summary.processes_not_stored += 1;
                    continue;
                }
            }
            self.pushed.insert(pid, maps);
            self.sync_python(pid, c);
        }
    }

    /// Gives the kernel where process `pid`'s Python frames are, or takes it back.
    fn sync_python(&mut self, pid: u32, c: &mut Collector) {
        let layout = c.python_layout(pid).map(|(l, head_addr)| PythonLayout {
            head_addr,
            interp_threads: l.interp_threads,
            tstate_next: l.tstate_next,
            tstate_thread: l.tstate_thread_id,
            tstate_frame: l.tstate_frame,
            cframe_frame: l.cframe_frame,
            frame_code: l.frame_code,
            frame_previous: l.frame_previous,
            frame_instr: l.frame_instr,
            instr_is_index: l.instr_is_index,
            frame_entry: l.frame_entry,
            frame_owner: l.frame_owner,
        });
        if let Err(e) = self.sampler.set_python(pid, layout.as_ref()) {
            c.summary.warnings.push(format!(
                "process {pid}'s Python frames cannot be read: {e}; its stacks show the \
                 interpreter's C functions"
            ));
        }
    }

    /// Moves the samples the kernel wrote into the collector.
    pub fn drain(&mut self, c: &mut Collector, weigher: &mut Weigher) {
        let slots = &self.slots;
        let s = &mut self.summary;
        let suspect = &mut self.suspect;
        let mut frames: Vec<FrameRef> = Vec::new();
        let result = self.sampler.drain(|k| {
            let Some(&(ev, tracepoint)) = slots.get(k.slot as usize) else {
                c.summary.unattributed += 1;
                return;
            };
            if k.unlisted_code && suspect.last() != Some(&k.pid) {
                suspect.push(k.pid);
            }
            let walks = match s.per_event.iter_mut().position(|w| w.event == ev) {
                Some(i) => &mut s.per_event[i],
                None => {
                    s.per_event.push(EventWalks {
                        event: ev,
                        ..EventWalks::default()
                    });
                    s.per_event.last_mut().expect("just pushed")
                }
            };
            walks.walks += 1;
            walks.at_root += u64::from(k.end.is_root());
            match k.end {
                e if e.is_root() => s.ended_at_root += 1,
                StackEnd::Unreadable => s.ended_unreadable += 1,
                StackEnd::NoRule => s.ended_no_rule += 1,
                StackEnd::BadReturnAddress => s.ended_bad_frame += 1,
                StackEnd::Loop => s.ended_bad_frame += 1,
                StackEnd::Depth => s.ended_depth += 1,
                StackEnd::NoUser => s.no_user_stack += 1,
                _ => {}
            }
            let py = &mut c.summary.python;
            match k.python_end {
                PyEnd::NotPython | PyEnd::Root => {}
                PyEnd::Depth => py.truncated += 1,
                PyEnd::Unreadable => py.unreadable += 1,
                _ => py.without_frames += 1,
            }
            frames.clear();
            frames.extend(k.python.iter().map(|f| FrameRef {
                code: f.code,
                instr: f.instr,
                entry: f.entry,
                owner: f.owner,
            }));
            let user = if k.user.is_empty() {
                UserStack::None
            } else if frames.is_empty() {
                UserStack::Ips(k.user)
            } else {
                UserStack::Python {
                    ips: k.user,
                    frames: &frames,
                }
            };
            // A tracepoint program's kernel stack starts in the code that ran it.
            let kernel = if tracepoint {
                c.trim_tracing_frames(k.kernel)
            } else {
                k.kernel
            };
            let mut kernel = kernel.iter().copied();
            let weight = weigher.weight_of_value(ev, k.pid, k.value);
            c.add_sample(ev, k.pid, k.tid, k.time, weight, &mut kernel, user);
        });
        match result {
            Ok((_, bad)) => c.summary.bad_records += bad,
            Err(e) => c.summary.warnings.push(e.to_string()),
        }
    }

    /// Final counters from the kernel side.
    pub fn finish(&mut self, c: &mut Collector) {
        let st = self.sampler.stats();
        self.summary.samples = st.samples;
        self.summary.no_tables = st.no_tables;
        self.summary.cfi_frames = st.cfi_frames;
        self.summary.fp_frames = st.fp_frames;
        self.summary.jit_edges = st.jit_edges;
        self.summary.stale_tables = st.stale_tables;
        self.summary.incomplete_tables = st.incomplete_tables;
        let cost = self.sampler.cost();
        c.summary.own_bpf.push(crate::collect::BpfCost {
            program: "sampler",
            cpu_ns: cost.run_time_ns,
            runs: cost.runs,
            missed: cost.missed,
        });
        // A sample whose program the kernel skipped (another eBPF program was running on
        // that CPU: a tracepoint hit inside one, or a timer's sample during one) is
        // written nowhere: lost, never silently.
        c.summary.lost += st.lost + cost.missed;
    }
}
