//! The fixture itself: a node starts, accepts AMQP connections on its port, and dies when killed.
use kiln_testkit::RabbitMq;
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn starts_serves_and_dies_when_killed() {
    let mut b = RabbitMq::start().expect("broker starts");
    let mut s = TcpStream::connect(("127.0.0.1", b.port())).expect("AMQP port open");
    use std::io::{Read, Write};
    s.write_all(b"AMQP\x00\x00\x09\x01").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut hdr = [0u8; 7];
    s.read_exact(&mut hdr).expect("connection.start frame");
    assert_eq!(hdr[0], 1, "a method frame");
    assert!(b.beam_pid().is_some());
    b.kill().unwrap();
    let closed = kiln_testkit::poll_until(Duration::from_secs(30), || {
        TcpStream::connect(("127.0.0.1", b.port())).is_err()
    });
    assert!(closed.is_some(), "port closed after kill");
}
