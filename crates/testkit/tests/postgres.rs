//! The private PostgreSQL server: it starts as an unprivileged user on 127.0.0.1, answers,
//! stops by its PID and starts again with its data.
use kiln_testkit::{have_postgres, Postgres};
use std::process::Command;

fn psql(pg: &Postgres, db: &str, sql: &str) -> std::process::Output {
    Command::new(format!("{}/psql", kiln_testkit::POSTGRES_BIN))
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &pg.url(db),
            "-c",
            sql,
        ])
        .output()
        .unwrap()
}

#[test]
fn a_private_server_answers_restarts_and_stops() {
    if !have_postgres() {
        return;
    }
    let mut pg = Postgres::start().unwrap();
    let pid = pg.pid().unwrap();
    let url = pg.create_database("t").unwrap();
    assert!(url.starts_with("postgres://kiln@127.0.0.1:"), "{url}");
    let out = psql(
        &pg,
        "t",
        "CREATE TABLE x (v int); INSERT INTO x VALUES (42); SHOW listen_addresses;",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "127.0.0.1");
    // Not root: PostgreSQL refuses to be.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert!(!uid.split_whitespace().nth(1).unwrap().eq("0"), "{uid}");

    pg.stop();
    assert!(pg.pid().is_none());
    // Our child, waited for: gone, not a zombie.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(!psql(&pg, "t", "SELECT 1").status.success(), "stopped");
    pg.start_again().unwrap();
    assert_ne!(pg.pid(), Some(pid));
    let out = psql(&pg, "t", "SELECT v FROM x");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "42",
        "data kept"
    );
    let dir = pg.dir().to_path_buf();
    let pid = pg.pid().unwrap();
    drop(pg);
    assert!(!dir.exists(), "its directory goes with it");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}
