//! The test network: hosts in network namespaces reach each other and the gateway, and
//! their sshd lets the test's key in (and a time namespace shifts a host's clock).
use kiln_testkit::{SshKeys, Sshd, TestNet};
use std::process::Command;

fn ssh(keys: &SshKeys, d: &Sshd, script: &str) -> String {
    let mut words = keys.ssh_command();
    words.push_str(&format!(" -p {} root@{}", d.port(), d.host().addr));
    let mut parts = words.split_whitespace();
    let out = Command::new(parts.next().unwrap())
        .args(parts)
        .arg(script)
        .output()
        .expect("ssh runs");
    assert!(
        out.status.success(),
        "ssh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn monotonic_s(out: &str) -> f64 {
    out.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn hosts_have_their_own_network_sshd_and_clock() {
    let net = TestNet::create(2).expect("test network (needs root)");
    let keys = SshKeys::generate().expect("ssh-keygen");
    let a = Sshd::start(net.host(0), &keys, None).expect("sshd on host 0");
    let b = Sshd::start(net.host(1), &keys, Some(5000)).expect("sshd on host 1");
    // Each session runs in its host's namespace: it has that host's address only.
    let addrs = ssh(&keys, &a, "ip -o -4 addr show");
    assert!(
        addrs.contains(&format!("inet {}/24", net.host(0).addr)),
        "{addrs}"
    );
    assert!(!addrs.contains(&net.host(1).addr.to_string()), "{addrs}");
    // Host 0 reaches host 1's sshd and the gateway over the bridge.
    let nc = format!(
        "exec 3<>/dev/tcp/{}/{} && head -c 7 <&3",
        net.host(1).addr,
        b.port()
    );
    assert_eq!(ssh(&keys, &a, &format!("bash -c '{nc}'")), "SSH-2.0");
    // Host 1's CLOCK_MONOTONIC is 5000 s ahead of the machine's (the namespace's offset,
    // as the kernel reports it), within the time the ssh round trip took.
    const MONO: &str = "python3 -c 'import time; print(time.monotonic())'";
    let t0 = monotonic_s(&sh(MONO));
    let on_b = monotonic_s(&ssh(&keys, &b, MONO));
    let t1 = monotonic_s(&sh(MONO));
    assert!(
        on_b - 5000.0 >= t0 && on_b - 5000.0 <= t1,
        "{on_b} - 5000 not in [{t0}, {t1}]"
    );
    let on_a = monotonic_s(&ssh(&keys, &a, MONO));
    assert!(on_a >= t1 && on_a < t1 + 1000.0, "{on_a}");
    let offsets = ssh(&keys, &b, "cat /proc/self/timens_offsets");
    assert!(
        offsets.contains("monotonic") && offsets.contains("5000"),
        "{offsets}"
    );
    drop(a);
    drop(b);
    let names: Vec<String> = net.hosts().iter().map(|h| h.netns.clone()).collect();
    drop(net);
    let list = String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    for n in names {
        assert!(!list.contains(&n), "{n} left behind: {list}");
    }
}

fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
