//! Apache Kafka 4.4 from Maven Central as a single-node KRaft broker (combined broker and
//! controller), formatted with `--feature transaction.version=<tv>`: the reference.
//! The jars are fetched once into tests/conformance/target/lib (`mvn package` of
//! tests/conformance/pom.xml); the broker runs in a temp dir and is stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::apis;
use crate::common::free_port;
use crate::wire::{await_coordinator, Conn};
use kaas::store::coordinator_key::offsets_partition;

pub struct Apache {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// The broker's classpath; runs Maven the first time.
pub fn ensure_jars() -> PathBuf {
    let lib = here().join("target/lib");
    let done = lib.join(".complete");
    if !done.exists() {
        eprintln!("[conformance] fetching Apache Kafka jars: mvn -q -B -f tests/conformance/pom.xml package");
        let status = Command::new("mvn")
            .args(["-q", "-B", "-f"])
            .arg(here().join("pom.xml"))
            .arg("package")
            .status()
            .expect("run mvn (Maven is needed to fetch Apache Kafka)");
        assert!(status.success(), "mvn package of tests/conformance/pom.xml failed: {status}");
        std::fs::write(&done, b"").expect("mark jars complete");
    }
    lib
}

/// A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
fn cluster_id() -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = String::new();
    for b in bytes {
        bits = (bits << 8) | b as u32;
        n += 8;
        while n >= 6 {
            n -= 6;
            out.push(A[((bits >> n) & 63) as usize] as char);
        }
    }
    if n > 0 {
        out.push(A[((bits << (6 - n)) & 63) as usize] as char);
    }
    out
}

/// The authz mode's security: a SASL_PLAINTEXT listener with PLAIN for these users (the first
/// is the super user the harness administers with), the StandardAuthorizer, no access where no
/// ACL names a resource.
pub struct Security {
    pub users: Vec<(String, String)>,
}

impl Security {
    pub fn admin(&self) -> (&str, &str) {
        let (u, p) = &self.users[0];
        (u, p)
    }
}

/// The listener lines of server.properties: PLAINTEXT, or (authz mode) SASL_PLAINTEXT with PLAIN,
/// also the inter-broker listener (the broker sends itself markers and, on TV2, verifications
/// there, logged in as the super user); the controller listener stays PLAINTEXT, so its
/// principal, ANONYMOUS, is a super user too (the broker registers and heartbeats there).
fn listener_props(port: u16, controller: u16, security: Option<&Security>) -> String {
    let Some(sec) = security else {
        return format!(
            "listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
             advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
             controller.listener.names=CONTROLLER\ninter.broker.listener.name=PLAINTEXT\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        );
    };
    let (admin, admin_pw) = sec.admin();
    let users: Vec<String> = sec.users.iter().map(|(u, p)| format!("user_{u}=\"{p}\"")).collect();
    format!(
        "listeners=SASL_PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
         advertised.listeners=SASL_PLAINTEXT://127.0.0.1:{port}\n\
         controller.listener.names=CONTROLLER\ninter.broker.listener.name=SASL_PLAINTEXT\n\
         listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         sasl.enabled.mechanisms=PLAIN\nsasl.mechanism.inter.broker.protocol=PLAIN\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config=\
         org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"{admin}\" password=\"{admin_pw}\" {};\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:{admin};User:ANONYMOUS\nallow.everyone.if.no.acl.found=false\n",
        users.join(" ")
    )
}

impl Apache {
    pub fn start(tv: i16, security: Option<&Security>) -> Apache {
        let lib = ensure_jars();
        let cp = format!("{}/*", lib.display());
        let log4j = format!("-Dlog4j2.configurationFile=file:{}", here().join("log4j2.properties").display());
        let dir = tempfile::tempdir().expect("tempdir");
        let (port, controller) = (free_port(), free_port());
        let props = dir.path().join("server.properties");
        let logs = dir.path().join("logs");
        std::fs::write(
            &props,
            format!(
                "process.roles=broker,controller\nnode.id=1\n\
                 controller.quorum.bootstrap.servers=127.0.0.1:{controller}\n{}\
                 log.dirs={}\nnum.partitions=2\nauto.create.topics.enable=false\n\
                 offsets.topic.replication.factor=1\noffsets.topic.num.partitions=50\n\
                 transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n\
                 transaction.state.log.num.partitions=50\n\
                 share.coordinator.state.topic.replication.factor=1\nshare.coordinator.state.topic.min.isr=1\n\
                 group.initial.rebalance.delay.ms=0\nfile.delete.delay.ms=1000\nlog.retention.ms=-1\n",
                listener_props(port, controller, security),
                logs.display()
            ),
        )
        .expect("server.properties");
        let format_log = std::fs::File::create(dir.path().join("format.log")).expect("format.log");
        let status = Command::new("java")
            .args(["-Xmx256m", "-cp", &cp, &log4j, "kafka.tools.StorageTool", "format", "--config"])
            .arg(&props)
            // `=`: a random id may start with '-', which argparse would take for an option.
            .arg(format!("--cluster-id={}", cluster_id()))
            .args(["--standalone", "--feature", &format!("transaction.version={tv}")])
            .stdout(format_log.try_clone().expect("log"))
            .stderr(format_log)
            .status()
            .expect("run java (StorageTool format)");
        let format_out = std::fs::read_to_string(dir.path().join("format.log")).unwrap_or_default();
        assert!(status.success(), "StorageTool format failed:\n{format_out}");
        let log = std::fs::File::create(dir.path().join("broker.log")).expect("broker.log");
        let mut cmd = Command::new("java");
        // SAFETY: prctl is async-signal-safe; the broker gets SIGKILL if this thread dies
        // without dropping it (a killed or aborted test run leaves no JVM behind).
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .args(["-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true", &log4j, "-cp", &cp])
            .arg("kafka.Kafka")
            .arg(&props)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start Apache Kafka");
        let mut ak = Apache { port, dir, child: Some(child) };
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(ak.running(), "Apache Kafka exited at start:\n{}", ak.log_tail());
            assert!(Instant::now() < deadline, "Apache Kafka did not listen within 120 s:\n{}", ak.log_tail());
            std::thread::sleep(Duration::from_millis(200));
        }
        // The internal topics are created on the first coordinator lookup.
        let mut c = match security {
            Some(sec) => Conn::with_login(port, sec.admin().0, sec.admin().1),
            None => Conn::new(port),
        };
        for (key, kind) in [("warm-up", 0), ("warm-up", 1)] {
            if let Err(e) = await_coordinator(&mut c, key, kind, Duration::from_secs(120)) {
                panic!("Apache Kafka: {e}\n{}", ak.log_tail());
            }
        }
        // Every transaction-state partition loaded: an InitProducerId on each answers NONE.
        let mut ids: Vec<Option<String>> = vec![None; 50];
        for i in 0.. {
            let id = format!("warm-up-{i}");
            let slot = &mut ids[offsets_partition(&id) as usize];
            if slot.is_none() {
                *slot = Some(id);
            }
            if ids.iter().all(Option::is_some) {
                break;
            }
        }
        for id in ids.into_iter().flatten() {
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                match apis::init_producer_id(&mut c, Some(&id), 60_000, -1, -1, 2) {
                    Ok((0, _, _)) => break,
                    other if Instant::now() > deadline => panic!("Apache Kafka: InitProducerId {id}: {other:?}"),
                    _ => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        }
        ak
    }

    fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
