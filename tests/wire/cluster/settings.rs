//! Cluster metadata that must never be guessed: an unreadable cluster id stops
//! the broker instead of a new id being written over it, and a broker configured with another
//! `txn_shards` than the cluster was created with is refused (it would map transactional ids
//! to other shards than its peers).

use crate::common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

const KAAS: &str = env!("CARGO_BIN_EXE_kaas");

/// Runs `kaas serve` on `data` until it exits (at most 20 s; killed and reported otherwise).
fn serve_until_exit(data: &std::path::Path, env: &[(&str, &str)]) -> (bool, Output) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut cmd = Command::new(KAAS);
    cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"]).arg(data);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child =
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    let exited = loop {
        if child.try_wait().expect("wait").is_some() {
            break true;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (exited, child.wait_with_output().expect("output"))
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn an_unreadable_cluster_id_stops_the_broker_and_is_never_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("__cluster")).expect("mkdir");
    let meta = data.join("__cluster").join("meta.json");
    std::fs::write(&meta, b"{\"cluster_id\": \"torn").expect("write");
    let (exited, out) = serve_until_exit(&data, &[]);
    assert!(exited, "kaas served with an unreadable cluster id: {}", text(&out));
    assert!(!out.status.success());
    assert!(text(&out).contains("unreadable cluster id file"), "{}", text(&out));
    assert_eq!(std::fs::read(&meta).expect("read"), b"{\"cluster_id\": \"torn", "the file was rewritten");
}

#[test]
fn a_broker_joining_with_other_txn_shards_than_its_cluster_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = dir.path().join("shared");
    let first = common::Broker::start_member(&shared, 1, &[]);
    let stored = std::fs::read_to_string(shared.join("__cluster").join("settings.json")).expect("settings.json");
    assert_eq!(stored, "{\"txn_shards\":4}", "the first broker records the cluster's txn_shards");
    let (exited, out) = serve_until_exit(&shared, &[("KAAS_TXN_SHARDS", "8"), ("KAAS_NODE_ID", "2")]);
    assert!(exited, "kaas joined with txn_shards 8 a cluster of 4: {}", text(&out));
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("txn_shards = 8 here, but this cluster was created with txn_shards = 4"), "{t}");
    first.finish();
}
