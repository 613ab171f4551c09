//! Socket I/O: opening a connection, writing what is queued as the socket takes it,
//! reading and cutting packets, closing.
use super::schema::M;
use super::{codec, kind, ConnState, Loop, Outgoing};
use crate::Error;
use mio::{Interest, Token};
use std::io::{Read, Write};

impl Loop<'_> {
    /// Opens connection `i` (non-blocking connect, registered with epoll, its connect
    /// timeout armed).
    pub(super) fn open(&mut self, i: u32) {
        let now = self.now();
        let r = self.driver.spread.connect(i as usize, self.driver.addr);
        let c = &mut self.conns[i as usize];
        c.attempt_ns = now;
        match r {
            Ok((mut s, _)) => {
                if let Err(e) = self.poll.registry().register(
                    &mut s,
                    Token(i as usize),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.failed(i as usize, format!("epoll: {e}"));
                    return;
                }
                c.socket = Some(s);
                c.state = ConnState::Connecting;
                c.write_blocked = true;
                let at = now + self.opts.connect_timeout.as_nanos() as u64;
                self.timer(at, i);
            }
            Err(e) if e.out_of_ports => {
                let err = Error::Start(format!(
                    "connection {} of {} to {}: {e}",
                    i + 1,
                    self.conns.len(),
                    self.uri()
                ));
                let why = format!("cannot connect: {e}");
                self.failed_because(i as usize, err, why);
            }
            Err(e) => {
                let err = Error::Connect {
                    uri: self.uri(),
                    source: std::io::Error::new(e.error.kind(), e.to_string()),
                };
                self.failed_with(i as usize, err);
            }
        }
    }

    /// Connection `i` is writable: a finished TCP connect sends CONNECT; else what is
    /// queued is written and a publisher goes on.
    pub(super) fn on_writable(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.write_blocked = false;
        if c.state == ConnState::Connecting {
            let Some(sock) = c.socket.as_ref() else {
                return;
            };
            let err = match (sock.take_error(), sock.peer_addr()) {
                (Ok(Some(e)), _) | (Err(e), _) => Some(e),
                (Ok(None), Ok(_)) => None,
                (Ok(None), Err(e)) if e.kind() == std::io::ErrorKind::NotConnected => {
                    // Still connecting: a spurious wakeup.
                    c.write_blocked = true;
                    return;
                }
                (Ok(None), Err(e)) => Some(e),
            };
            if let Some(e) = err {
                let err = Error::Connect {
                    uri: self.uri(),
                    source: e,
                };
                self.failed_with(i, err);
                return;
            }
            let c = &mut self.conns[i];
            c.state = ConnState::Handshake;
            let id = self.opts.client_id(i as u32);
            let mut out = std::mem::take(&mut self.packet_buf);
            out.clear();
            codec::connect(
                &mut out,
                &codec::Connect {
                    version: self.opts.version,
                    client_id: &id,
                    keepalive: self.opts.keepalive,
                    clean: self.opts.clean,
                    username: self.opts.username.as_deref(),
                    password: self.opts.password.as_deref(),
                    session_expiry: self.opts.session_expiry,
                    topic_alias_max: 0,
                },
            );
            self.send(i, &out, Outgoing::Control);
            self.packet_buf = out;
            return;
        }
        self.flush(i);
        if self.conns[i].publisher.is_some() && self.conns[i].state == ConnState::Ready {
            self.pump(i);
        }
    }

    /// Appends `bytes` to the connection's output and writes what the socket takes.
    pub(super) fn send(&mut self, i: usize, bytes: &[u8], what: Outgoing) {
        let now = self.now();
        let c = &mut self.conns[i];
        if c.socket.is_none() {
            return;
        }
        c.last_sent_ns = now;
        c.out_buf.extend_from_slice(bytes);
        if what == Outgoing::NewPublish {
            c.publish_ends.push_back(c.out_buf.len());
        }
        if !c.write_blocked {
            self.flush(i);
        }
    }

    /// Writes what the socket of connection `i` takes; new PUBLISHes wholly written are
    /// counted as sent.
    pub(super) fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(s) = c.socket.as_mut() else {
            return;
        };
        let mut err = None;
        while c.written < c.out_buf.len() {
            match s.write(&c.out_buf[c.written..]) {
                Ok(0) => {
                    err = Some("the broker closed the connection".to_string());
                    break;
                }
                Ok(n) => c.written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    c.write_blocked = true;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    err = Some(e.to_string());
                    break;
                }
            }
        }
        let mut whole = 0;
        while c.publish_ends.front().is_some_and(|&e| e <= c.written) {
            c.publish_ends.pop_front();
            whole += 1;
        }
        if c.written == c.out_buf.len() {
            c.out_buf.clear();
            c.written = 0;
            if c.out_buf.capacity() > 256 * 1024 {
                c.out_buf = Vec::new();
            }
        } else if c.written > 64 * 1024 {
            c.out_buf.drain(..c.written);
            for e in c.publish_ends.iter_mut() {
                *e -= c.written;
            }
            c.written = 0;
        }
        if whole > 0 {
            self.ctx.add(0, M.sent, whole);
        }
        if let Some(e) = err {
            self.dropped(i, e);
        }
    }

    /// Reads what connection `i` has and handles each whole packet; a partial one waits
    /// in `partial`.
    pub(super) fn on_readable(&mut self, i: usize) {
        loop {
            let Some(s) = self.conns[i].socket.as_mut() else {
                return;
            };
            let n = match s.read(&mut self.read_buf) {
                Ok(0) => {
                    let why = self.closed_reason(i);
                    self.dropped(i, why);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let why = if self.conns[i].state == ConnState::Connecting {
                        let err = Error::Connect {
                            uri: self.uri(),
                            source: e,
                        };
                        self.failed_with(i, err);
                        return;
                    } else {
                        e.to_string()
                    };
                    self.dropped(i, why);
                    return;
                }
            };
            // Parse from the connection's partial packet plus the new bytes (or straight
            // from the scratch buffer when nothing is pending: the common case).
            let mut data = std::mem::take(&mut self.conns[i].partial);
            let from_scratch = data.is_empty();
            if !from_scratch {
                data.extend_from_slice(&self.read_buf[..n]);
            }
            let scratch = std::mem::take(&mut self.read_buf);
            let buf: &[u8] = if from_scratch { &scratch[..n] } else { &data };
            let mut at = 0;
            let mut fatal = None;
            while at < buf.len() {
                if self.conns[i].state == ConnState::Handshake && buf[at] >> 4 != kind::CONNACK {
                    fatal = Some(not_mqtt(&buf[at..]));
                    break;
                }
                match codec::decode(&buf[at..], self.opts.version, 256 * 1024 * 1024) {
                    Ok(Some((p, len))) => {
                        at += len;
                        self.on_packet(i, p);
                        if self.conns[i].socket.is_none() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        fatal = Some(format!("malformed packet from the broker: {e}"));
                        break;
                    }
                }
            }
            let rest = buf.get(at..).unwrap_or(&[]).to_vec();
            self.read_buf = scratch;
            if let Some(why) = fatal {
                if self.conns[i].state == ConnState::Handshake {
                    self.failed(i, why);
                } else {
                    self.dropped(i, why);
                }
                return;
            }
            if self.conns[i].socket.is_some() {
                self.conns[i].partial = rest;
            }
        }
    }

    /// Why the broker's closing connection `i` matters, by where it was.
    pub(super) fn closed_reason(&self, i: usize) -> String {
        match self.conns[i].state {
            // It accepted others in this protocol: a limit of its, not the protocol.
            ConnState::Handshake if self.load_started => {
                "the broker closed the connection without a CONNACK, having accepted others (a limit of the broker's: its connection limit, its open files?)".into()
            }
            ConnState::Handshake => format!(
                "the broker closed the connection without a CONNACK (not an MQTT broker, or one refusing this protocol version? {})",
                self.opts.version.hint()
            ),
            _ => "the broker closed the connection".into(),
        }
    }

    /// Closes connection `i`: its buffers freed, its unwritten PUBLISHes never sent (or,
    /// with a persistent session, to be sent again after a reconnect).
    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.socket.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.state = ConnState::Closed;
        c.partial = Vec::new();
        c.out_buf = Vec::new();
        c.written = 0;
        // PUBLISH packets not (wholly) written: never sent.
        let unwritten = c.publish_ends.len();
        c.publish_ends.clear();
        c.awaiting_release = Vec::new();
        if let Some(p) = c.publisher.as_mut() {
            if self.persistent_session && self.opts.qos > 0 {
                // Unacknowledged messages are sent again after the reconnect (those never
                // written count as sent then).
                let n = p.unacked.len();
                for f in p.unacked.iter_mut().skip(n.saturating_sub(unwritten)) {
                    f.written = false;
                }
            } else {
                // Never acknowledged now; those never written were never sent.
                p.unacked.clear();
                p.never_written += unwritten as u64;
            }
        }
    }

    /// Closes every connection, with a DISCONNECT for those established.
    pub(super) fn close_all(&mut self) {
        let mut bye = Vec::new();
        codec::disconnect(&mut bye);
        for i in 0..self.conns.len() {
            if self.conns[i].state == ConnState::Ready {
                if let Some(s) = self.conns[i].socket.as_mut() {
                    let _ = s.write(&bye);
                }
            }
            self.close(i);
        }
    }
}

fn not_mqtt(b: &[u8]) -> String {
    let shown = crate::answer_shown(b);
    format!("this is not an MQTT broker: it answered '{shown}' instead of a CONNACK")
}
