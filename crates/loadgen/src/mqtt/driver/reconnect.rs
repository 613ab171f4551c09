//! Failed attempts and lost connections: counted by reason, and with `--reconnect`
//! tried again a second later.
use super::schema::M;
use super::{count_reason, ConnState, Loop, Scenario};
use crate::Error;

/// How long a connection waits before it is opened again (`--reconnect`).
const RECONNECT_NS: u64 = 1_000_000_000;

impl Loop<'_> {
    /// A connection attempt failed before its CONNACK (or SUBACK), for `why`.
    pub(super) fn failed(&mut self, i: usize, why: String) {
        let e = Error::Handshake {
            uri: self.uri(),
            reason: why,
        };
        self.failed_with(i, e);
    }

    /// A connection attempt failed: counted; before the load started it ends the run.
    pub(super) fn failed_with(&mut self, i: usize, e: Error) {
        let why = e.to_string();
        self.failed_because(i, e, why);
    }

    /// [`Self::failed_with`], counted under the reason `why`.
    pub(super) fn failed_because(&mut self, i: usize, e: Error, why: String) {
        let was_up = self.conns[i].state == ConnState::Ready;
        self.close(i);
        if was_up {
            return;
        }
        self.ctx.add(0, M.failed, 1);
        // Printed in the summary: the broker's words shown safely, cut.
        count_reason(&mut self.failures, &why, 300);
        if !self.load_started && self.first_error.is_none() {
            self.first_error = Some(e);
            return;
        }
        self.ctx.event("connect-failed", format!("client {i}: {e}"));
        if self.opts.reconnect && !self.ctx.stopping() {
            self.reconnect_later(i);
        }
    }

    /// An established connection was lost.
    pub(super) fn dropped(&mut self, i: usize, why: String) {
        if self.conns[i].state != ConnState::Ready && self.conns[i].state != ConnState::Subscribing
        {
            self.failed(i, why);
            return;
        }
        self.close(i);
        if self.ctx.stopping() {
            return;
        }
        self.ctx.add(0, M.dropped, 1);
        // The reason, counted (the broker's words shown safely).
        count_reason(&mut self.drops, &why, 160);
        self.ctx.flag_pulse(M.disconnected);
        self.ctx
            .event("connection-lost", format!("client {i}: {why}"));
        if self.opts.reconnect {
            self.ctx.flag_on(M.disconnected);
            self.reconnect_later(i);
        } else if !matches!(self.opts.scenario, Scenario::Conn) {
            self.ctx.fail(format!("client {i}: {why}"));
        }
    }

    /// Connection `i` waits [`RECONNECT_NS`], then opens again (its timer: `attempt_ns`).
    fn reconnect_later(&mut self, i: usize) {
        let at = self.now() + RECONNECT_NS;
        self.conns[i].state = ConnState::Waiting;
        self.conns[i].attempt_ns = at;
        self.timer(at, i as u32);
    }
}
