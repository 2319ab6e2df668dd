//! kaas for the authz mode: `kaas serve --config FILE` with one SASL_PLAINTEXT listener (PLAIN,
//! the users of `authz::users`; also the inter-broker listener, where a broker logs in as the
//! admin), the StandardAuthorizer, the admin as the only super user and nothing allowed where
//! no ACL names a resource, as the Apache Kafka broker beside it
//! (`apache::Security`). The tests' `common::Broker` starts kaas from `KAAS_*` variables only,
//! which cannot carry the table of PLAIN users.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::apache::Security;
use crate::common::free_port;

pub struct SecureKaas {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl SecureKaas {
    pub fn start(tv: i16, security: &Security) -> SecureKaas {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let (admin, admin_pw) = security.admin();
        let users: Vec<String> = security.users.iter().map(|(u, p)| format!("{u} = \"{p}\"")).collect();
        // Time retention off, as in the plain mode: the test batches are stamped in 2023.
        let config = format!(
            "listen = \"\"\nlisteners = \"SASL_PLAINTEXT://127.0.0.1:{port}\"\n\
             sasl_enabled_mechanisms = [\"PLAIN\"]\nauthorizer = \"standard\"\n\
             super_users = [\"User:{admin}\"]\nallow_everyone_if_no_acl_found = false\n\
             inter_broker_sasl_mechanism = \"PLAIN\"\ninter_broker_sasl_username = \"{admin}\"\n\
             inter_broker_sasl_password = \"{admin_pw}\"\n\
             transaction_version = {tv}\nretention_ms = -1\n\n[sasl_plain_users]\n{}\n",
            users.join("\n")
        );
        let file = dir.path().join("kaas.toml");
        std::fs::write(&file, config).expect("kaas.toml");
        let log = std::fs::File::create(dir.path().join("kaas.log")).expect("kaas.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kaas"));
        // SAFETY: prctl is async-signal-safe; the broker gets SIGKILL if this thread dies
        // without dropping it.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .args(["serve", "--config"])
            .arg(&file)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--node-id", "0"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn kaas");
        let mut k = SecureKaas { port, dir, child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(k.running(), "kaas exited at start:\n{}", k.log());
            assert!(Instant::now() < deadline, "kaas did not listen within 30 s:\n{}", k.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        k
    }

    fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("kaas.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Stops it with SIGTERM; what was wrong: not running at the end, not exiting 0 within 15 s,
    /// a panic in its log. (ERROR lines are allowed, as in the plain mode: the sequences send
    /// requests no client would.)
    pub fn finish(mut self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(mut child) = self.child.take() {
            match child.try_wait() {
                Ok(None) => {
                    crate::common::stop_with_sigterm(&mut child, &mut problems);
                }
                other => problems.push(format!("kaas is not running at the end: {other:?}")),
            }
        }
        let panics: Vec<String> = self.log().lines().filter(|l| l.contains("panicked")).map(str::to_string).collect();
        if !panics.is_empty() {
            problems.push(format!("kaas logged panics:\n{}", panics.join("\n")));
        }
        problems
    }
}

impl Drop for SecureKaas {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
