//! The `kaas` command line as a newcomer meets it: a taken port is reported with its address
//! before anything is written, and every `serve` flag says what it does.

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

const KAAS: &str = env!("CARGO_BIN_EXE_kaas");

#[test]
fn a_taken_port_stops_serve_with_its_address_before_the_data_dir_is_touched() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut child = Command::new(KAAS)
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(&data)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn kaas");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "kaas kept running on a taken port");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success(), "exit status {status}");
    assert!(stderr.contains(&format!("cannot listen on {addr}")), "stderr: {stderr}");
    assert!(stderr.contains("Address already in use"), "stderr: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "colour codes in a pipe: {stderr}");
    assert!(!data.exists(), "the data directory was created although the broker could not serve");
}

#[test]
fn every_serve_flag_has_help() {
    let out = Command::new(KAAS).args(["serve", "--help"]).output().expect("kaas serve --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--config <FILE>", "--data-dir <DIR>", "--listen <HOST:PORT>", "--node-id <N>"] {
        let line = help.lines().position(|l| l.trim_start().starts_with(flag));
        let line = line.unwrap_or_else(|| panic!("{flag} missing from:\n{help}"));
        // clap's long help puts the description on the next line.
        let described = help.lines().nth(line + 1).is_some_and(|l| !l.trim().is_empty());
        assert!(described, "{flag} has no help text:\n{help}");
    }
    assert!(help.contains("[default: 127.0.0.1:9092]"), "{help}");
}
