//! What the BEAM's scheduler threads were doing, in the states of its own microstate
//! accounting (`msacc`), read from CPU samples — even on Debian's stripped `beam.smp`.
//!
//! The BEAM accounts its threads' time by state (`erlang:statistics(microstate_accounting)`,
//! `rabbitmq-diagnostics runtime_thread_stats`): `emulator` (running Erlang code, BIFs
//! and NIFs), `port` (port tasks and drivers: socket I/O), `gc`, `check_io` (polling for
//! I/O), `aux` (auxiliary work), `other` (scheduling, and the busy-wait a scheduler spins in
//! before it sleeps: `+sbwt`), `sleep`. A flame graph of a stripped VM hides the spin in an
//! unnamed function under `erts_schedule` and splits the rest over hundreds of frames; the
//! seeds' engineers needed the states first ("the schedulers spin", "it is all polling").
//!
//! ## Rules
//!
//! The VM sets a thread's state as it enters a piece of work, and the innermost setting
//! holds, so a stack is read from the root towards the leaf and the last frame that names
//! a state decides ([`state_of`]): `erts_schedule` → `other`; the emulator's loop and
//! Erlang functions → `emulator`; `erts_port_task_execute`, `erts_port_output`,
//! `erts_port_control`, drivers → `port`; the garbage collector → `gc`; `erts_check_io`
//! → `check_io`; aux work → `aux`; the wait primitives a scheduler sleeps in
//! (`ethr_event_twait`, and the poll's `erts_poll_wait`) → `sleep` (CPU spent going to
//! sleep and waking, which the VM counts as sleep). Time a scheduler is blocked while it
//! polls is `sleep` too ([`blocked_state`]). A scheduler's stack whose root frames are unknown (the JIT's) starts in
//! `emulator`: a scheduler not in its scheduling loop runs a process.
use crate::{FrameKind, Profile};

/// A scheduler thread's state, as the BEAM's microstate accounting names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BeamState {
    /// Running Erlang code, BIFs, NIFs (`emulator`).
    Emulator,
    /// Port tasks and drivers: socket reads and writes (`port`).
    Port,
    /// Garbage collection (`gc`).
    Gc,
    /// Polling for I/O (`check_io`).
    CheckIo,
    /// Auxiliary work (`aux`).
    Aux,
    /// Scheduling and the busy-wait before sleeping (`other`; `busy_wait` in VMs built with
    /// extra states).
    Other,
    /// Going to sleep and waking (`sleep`): CPU the VM counts as sleeping.
    Sleep,
}

impl BeamState {
    /// Every state, in the order they are reported.
    pub const ALL: [BeamState; 7] = [
        BeamState::Emulator,
        BeamState::Port,
        BeamState::Gc,
        BeamState::CheckIo,
        BeamState::Aux,
        BeamState::Other,
        BeamState::Sleep,
    ];

    /// msacc's name of the state.
    pub fn msacc(self) -> &'static str {
        match self {
            BeamState::Emulator => "emulator",
            BeamState::Port => "port",
            BeamState::Gc => "gc",
            BeamState::CheckIo => "check_io",
            BeamState::Aux => "aux",
            BeamState::Other => "other",
            BeamState::Sleep => "sleep",
        }
    }

    /// What it is, for a reader.
    pub fn describe(self) -> &'static str {
        match self {
            BeamState::Emulator => "Erlang code",
            BeamState::Port => "port and socket I/O",
            BeamState::Gc => "garbage collection",
            BeamState::CheckIo => "I/O polling",
            BeamState::Aux => "aux work",
            BeamState::Other => "busy-wait and scheduling",
            BeamState::Sleep => "going to sleep",
        }
    }
}

/// The state a frame sets, if it sets one.
fn sets(name: &str, kind: FrameKind) -> Option<BeamState> {
    let starts = |p: &[&str]| p.iter().any(|x| name.starts_with(x));
    // A stack cut short (the unwinder lost the way in a stripped VM) may hold only the
    // wait primitive a scheduler called: epoll_wait is only ever the poll's (asleep, as
    // erts_poll_wait), sched_yield only the busy-wait's (other). Without them such a
    // stack would count as Erlang code, and an idle broker's seconds blocked in the poll
    // as awake.
    if name == "erts_schedule" || name.contains("sched_yield") && kind != FrameKind::Kernel {
        Some(BeamState::Other)
    } else if starts(&[
        "ethr_event_twait",
        "ethr_event_wait",
        "erts_thr_progress_prepare_wait",
        // A scheduler waiting in the poll: msacc counts it asleep (scheduler_wait sets
        // `sleep` around the call), blocked or on its way in and out of the kernel.
        "erts_poll_wait",
    ]) || (kind != FrameKind::Kernel && name.ends_with("epoll_wait"))
    {
        Some(BeamState::Sleep)
    } else if starts(&["erts_check_io", "erts_poll_", "check_io_"]) {
        Some(BeamState::CheckIo)
    } else if starts(&[
        "erts_garbage_collect",
        "erts_gc_",
        "garbage_collect",
        "erts_major_gc",
        "erts_minor_gc",
    ]) {
        Some(BeamState::Gc)
    } else if starts(&[
        "erts_port_task_execute",
        "erts_port_output",
        "erts_port_control",
        "erts_port_call",
        "call_driver_",
    ]) {
        Some(BeamState::Port)
    } else if name.contains("aux_work")
        || starts(&[
            // What the scheduler's aux work (handle_aux_work, static in a stripped VM) calls:
            // delayed deallocation, thread progress, misc aux jobs.
            "erts_alloc_handle_delayed_dealloc",
            "erts_alcu_check_delayed_dealloc",
            "erts_thr_progress_update",
            "erts_thr_progress_leader_update",
            "erts_thr_progress_finalize_wait",
            // erts_handle_canceled_timers, _yielded_alcu_blockscan, _yielded_ets_all_request.
            "erts_handle_",
        ])
    {
        Some(BeamState::Aux)
    } else if name == "process_main"
        || name == "$global::process_main"
        || (kind == FrameKind::Jit && !name.starts_with("$global::"))
    {
        Some(BeamState::Emulator)
    } else {
        None
    }
}

/// The state of a scheduler's stack, root → leaf as (name, kind) (the thread's root frame
/// included or not).
pub fn state_of(path: &[(&str, FrameKind)]) -> BeamState {
    named_state(path).unwrap_or(BeamState::Emulator)
}

/// The state a frame of `path` names, nearest the leaf first; `None` when none does (a
/// stack the unwinder cut short, or Erlang code without a perf map).
fn named_state(path: &[(&str, FrameKind)]) -> Option<BeamState> {
    path.iter().rev().find_map(|&(n, k)| sets(n, k))
}

/// The state of a scheduler's time *blocked* with this stack: [`blocked_state`] of the
/// state it names; a stack that names none is asleep — a scheduler blocks to sleep, in
/// its event wait or the poll, and a stack cut short there has lost the frames that say
/// so (on an idle broker those seconds are most of its time, and counted as Erlang code
/// they swamp its awake shares).
pub fn blocked_state_of(path: &[(&str, FrameKind)]) -> BeamState {
    named_state(path).map_or(BeamState::Sleep, blocked_state)
}

/// The state of a scheduler's time *blocked* (off CPU, not runnable) in `state`: a
/// scheduler that blocks while it polls for I/O waits in the poll for work, which msacc
/// counts as `sleep`; blocked anywhere else it stays in its state (a NIF waiting on a
/// lock is `emulator` to msacc too).
pub fn blocked_state(state: BeamState) -> BeamState {
    match state {
        BeamState::CheckIo => BeamState::Sleep,
        s => s,
    }
}

/// Whether a thread (its root frame's name) is a normal BEAM scheduler (`1_scheduler`,
/// `scheduler`, merged or not): dirty schedulers, aux and poll threads have states of their
/// own that their thread type already names.
pub fn is_scheduler(thread: &str) -> bool {
    let t = thread.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
    t == "scheduler"
}

/// Whether a thread (its root frame's name) is one of the BEAM's dirty schedulers
/// (`1_dirty_cpu_sch`, `dirty_io_sche`, merged or not): where its file calls and dirty
/// NIFs run.
pub fn is_dirty_scheduler(thread: &str) -> bool {
    let t = thread.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
    t.starts_with("dirty_cpu_s") || t.starts_with("dirty_io_s")
}

/// The schedulers' time by state in one profile (a CPU profile of `beam.smp`), in the
/// order of [`BeamState::ALL`], in the profile's weight; `None` when no sample is a
/// scheduler's.
pub fn scheduler_states(p: &Profile) -> Option<[u128; 7]> {
    scheduler_states_by(p, state_of)
}

/// [`scheduler_states`] of an off-CPU profile: each stack's time in the state it is
/// blocked in ([`blocked_state_of`]).
pub fn blocked_scheduler_states(p: &Profile) -> Option<[u128; 7]> {
    scheduler_states_by(p, blocked_state_of)
}

fn scheduler_states_by(
    p: &Profile,
    state_of: fn(&[(&str, FrameKind)]) -> BeamState,
) -> Option<[u128; 7]> {
    let mut out = [0u128; 7];
    let mut any = false;
    for (s, &w) in states_by(p, state_of).into_iter().zip(&p.samples.weight) {
        if let Some(s) = s {
            any = true;
            let k = BeamState::ALL.iter().position(|&x| x == s).unwrap_or(0);
            out[k] += w as u128;
        }
    }
    any.then_some(out)
}

/// Each sample's state, `None` for a sample not on a scheduler thread: what
/// [`scheduler_states`] (`blocked` false) or [`blocked_scheduler_states`] (`blocked`
/// true: an off-CPU profile) sum, for a caller that sums samples by their time.
pub fn sample_states(p: &Profile, blocked: bool) -> Vec<Option<BeamState>> {
    states_by(p, if blocked { blocked_state_of } else { state_of })
}

fn states_by(
    p: &Profile,
    state_of: fn(&[(&str, FrameKind)]) -> BeamState,
) -> Vec<Option<BeamState>> {
    let mut memo: Vec<Option<Option<BeamState>>> = vec![None; p.stacks.len()];
    p.samples
        .stack
        .iter()
        .map(|&st| {
            let i = st.0 as usize;
            let of_stack = || {
                let frames = p.named_path(st);
                let root = frames.first()?;
                if root.1 != FrameKind::Root || !is_scheduler(&root.0) {
                    return None;
                }
                let refs: Vec<(&str, FrameKind)> =
                    frames[1..].iter().map(|(s, k)| (s.as_str(), *k)).collect();
                Some(state_of(&refs))
            };
            match memo.get_mut(i) {
                Some(m) => *m.get_or_insert_with(of_stack),
                None => of_stack(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use FrameKind::*;

    fn s(stack: &str) -> BeamState {
        let path: Vec<(&str, FrameKind)> = stack
            .split(';')
            .map(|f| {
                let kind = if f.starts_with("__x64") || f.starts_with("do_syscall") {
                    Kernel
                } else if f.starts_with('$') {
                    Jit
                } else {
                    User
                };
                (f, kind)
            })
            .collect();
        state_of(&path)
    }

    #[test]
    fn states_of_recorded_scheduler_stacks() {
        // What kiln recorded of RabbitMQ's schedulers under an AMQP load (stripped VM).
        assert_eq!(
            s("[unknown];erts_internal_port_command_3;erts_port_output;beam.smp+0x2857b0;__writev;do_syscall_64"),
            BeamState::Port
        );
        assert_eq!(
            s("[unknown];erts_schedule;erts_port_task_execute;beam.smp+0x17a370"),
            BeamState::Port
        );
        // The spin: an unnamed function (scheduler_wait) under erts_schedule.
        assert_eq!(
            s("[unknown];erts_schedule;beam.smp+0x73ee0"),
            BeamState::Other
        );
        assert_eq!(
            s("[unknown];erts_schedule;beam.smp+0x73ee0;sched_yield;__x64_sys_sched_yield"),
            BeamState::Other
        );
        // Stacks cut short at the wait primitive (recorded from an idle RabbitMQ): the
        // poll is asleep, the yield is the busy-wait; neither is Erlang code.
        assert_eq!(
            s("epoll_wait;__x64_sys_epoll_wait;do_epoll_wait"),
            BeamState::Sleep
        );
        assert_eq!(
            s("__GI___sched_yield;__x64_sys_sched_yield"),
            BeamState::Other
        );
        assert_eq!(s("[unknown];beam.smp+0x1234"), BeamState::Emulator);
        // Blocked: a stack that names no state is asleep (cut short in the event wait);
        // one that names a state stays in it, the poll excepted.
        let b = |stack: &str| {
            let path: Vec<(&str, FrameKind)> = stack.split(';').map(|f| (f, User)).collect();
            blocked_state_of(&path)
        };
        assert_eq!(b("syscall;do_syscall_64;futex_wait"), BeamState::Sleep);
        assert_eq!(b("[unknown];beam.smp+0x1234"), BeamState::Sleep);
        assert_eq!(
            b("erts_schedule;erts_port_task_execute;beam.smp+0x17a370;__writev"),
            BeamState::Port
        );
        assert_eq!(
            b("erts_schedule;erts_check_io;epoll_wait"),
            BeamState::Sleep
        );
        assert_eq!(
            s("[unknown];erts_schedule;beam.smp+0x73ee0;ethr_event_twait;syscall;do_syscall_64"),
            BeamState::Sleep
        );
        assert_eq!(s("[unknown];ets_lookup_2;db_get_hash"), BeamState::Emulator);
        assert_eq!(
            s("[unknown];erts_gc_after_bif_call_lhf;beam.smp+0x204e00"),
            BeamState::Gc
        );
        assert_eq!(
            s("$global::process_main;$rabbit_reader:handle_input/3;erts_garbage_collect_nobump"),
            BeamState::Gc
        );
        // Waiting in the poll is sleeping; handling what it found is check_io.
        assert_eq!(
            s("[unknown];erts_schedule;beam.smp+0x73ee0;erts_check_io;erts_poll_wait;epoll_wait"),
            BeamState::Sleep
        );
        assert_eq!(
            s("[unknown];erts_schedule;beam.smp+0x73ee0;erts_check_io;beam.smp+0x1f0e10"),
            BeamState::CheckIo
        );
        assert!(is_scheduler("1_scheduler") && is_scheduler("scheduler"));
        assert!(!is_scheduler("1_dirty_cpu_sch") && !is_scheduler("poller"));
        assert!(is_dirty_scheduler("1_dirty_cpu_sch") && is_dirty_scheduler("dirty_io_sche"));
        assert!(!is_dirty_scheduler("1_scheduler") && !is_dirty_scheduler("dirty_thing"));
    }
}
