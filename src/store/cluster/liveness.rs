//! Liveness by a heartbeat lease. Each broker renews `__cluster/brokers/<id>.alive`
//! (its incarnation and a counter) every `broker_heartbeat_interval_ms`, fsynced. An observer
//! judges a peer on its own monotonic clock, from the counter it sees change: a peer whose
//! counter has not moved for `broker_session_timeout_ms` is not live, and what it served moves
//! (its takers fence it first: store::cluster::claim). No wall clocks are compared across
//! machines. The broker lock stays the fast path: a released lock (the process died) is not
//! live at once. A peer that stalled comes back only after renewing for a whole timeout, so a
//! flapping broker does not pull its share back and forth each tick.
//!
//! A broker that cannot prove its own lease fresh (no renewal completed within two thirds of
//! the timeout: a stall, a hung disk) serves nothing it leads until it renews (`Freshness`):
//! by then its peers may be taking over, and it is fenced if they did.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a heartbeat file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    pub incarnation: u64,
    pub counter: u64,
}

/// The heartbeat file of `node_id`.
pub fn heartbeat_path(data_dir: &Path, node_id: i32) -> PathBuf {
    data_dir.join("__cluster").join("brokers").join(format!("{node_id}.alive"))
}

/// Fixed width, so an in-place rewrite never leaves a longer old tail.
const WIDTH: usize = 42;

fn encode(beat: Heartbeat) -> Vec<u8> {
    let mut text = format!("{:016x} {:020}", beat.incarnation, beat.counter);
    text.truncate(WIDTH - 1);
    while text.len() < WIDTH - 1 {
        text.push(' ');
    }
    text.push('\n');
    text.into_bytes()
}

fn decode(bytes: &[u8]) -> Option<Heartbeat> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut parts = text.split_whitespace();
    let incarnation = u64::from_str_radix(parts.next()?, 16).ok()?;
    let counter = parts.next()?.parse().ok()?;
    Some(Heartbeat { incarnation, counter })
}

/// A peer's heartbeat (None: none yet, or unreadable at this instant).
pub fn read_heartbeat(path: &Path) -> Option<Heartbeat> {
    decode(&std::fs::read(path).ok()?)
}

/// This broker's heartbeat file, renewed in place.
#[derive(Debug)]
pub struct HeartbeatWriter {
    file: File,
    beat: Heartbeat,
}

impl HeartbeatWriter {
    /// Opens the file and writes the first beat of `incarnation` durably.
    pub fn create(data_dir: &Path, node_id: i32, incarnation: u64) -> std::io::Result<HeartbeatWriter> {
        let path = heartbeat_path(data_dir, node_id);
        // Readable too: a file system that writes whole pages (NFS, FUSE ones) may read the
        // page an in-place write of a few bytes lands in.
        let file = OpenOptions::new().create(true).truncate(false).read(true).write(true).open(&path)?;
        let mut writer = HeartbeatWriter { file, beat: Heartbeat { incarnation, counter: 0 } };
        writer.renew()?;
        crate::store::durable::sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        Ok(writer)
    }

    /// One beat: the counter grows, written and synced (a peer's client sees it only once it
    /// is committed: JuiceFS and NFS publish a write at fsync or close).
    pub fn renew(&mut self) -> std::io::Result<()> {
        self.beat.counter += 1;
        self.file.write_all_at(&encode(self.beat), 0)?;
        self.file.sync_data()
    }
}

/// What this broker can prove about its own lease (shared by whatever answers clients).
#[derive(Debug, Clone)]
pub struct Freshness {
    inner: Arc<FreshInner>,
}

#[derive(Debug)]
struct FreshInner {
    base: Instant,
    /// Milliseconds after `base` at which the last renewal that completed began.
    renewed_ms: AtomicU64,
    limit_ms: u64,
    /// No peer in this broker's last view of the cluster: nobody can take anything over, so a
    /// stall costs nothing to answer through.
    alone: AtomicBool,
}

impl Freshness {
    /// Fresh from now, for two thirds of `session_timeout`: a peer judges this broker dead
    /// only a whole timeout after the last beat it saw, which began after the one counted here.
    pub fn new(session_timeout: Duration) -> Freshness {
        let limit_ms = u64::try_from(session_timeout.as_millis()).unwrap_or(u64::MAX) / 3 * 2;
        Freshness {
            inner: Arc::new(FreshInner {
                base: Instant::now(),
                renewed_ms: AtomicU64::new(0),
                limit_ms,
                alone: AtomicBool::new(true),
            }),
        }
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.inner.base).as_millis()).unwrap_or(u64::MAX)
    }

    /// A renewal that began at `started` completed.
    pub fn renewed(&self, started: Instant) {
        self.inner.renewed_ms.fetch_max(self.ms(started), Ordering::AcqRel);
    }

    pub fn set_alone(&self, alone: bool) {
        self.inner.alone.store(alone, Ordering::Release);
    }

    /// Whether the last completed renewal is recent enough (whatever the peers).
    pub fn lease_fresh(&self) -> bool {
        self.ms(Instant::now()).saturating_sub(self.inner.renewed_ms.load(Ordering::Acquire)) <= self.inner.limit_ms
    }

    /// Whether this broker may answer for what it leads: its lease is fresh, or it has no peer.
    pub fn may_serve(&self) -> bool {
        self.inner.alone.load(Ordering::Acquire) || self.lease_fresh()
    }
}

/// The liveness of the peers as one observer sees them.
#[derive(Debug)]
pub struct Liveness {
    timeout: Duration,
    seen: HashMap<i32, Seen>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    beat: Heartbeat,
    changed_at: Instant,
    /// Its counter stood still for a whole timeout: not live until it renews for one again.
    expired: bool,
    renewing_since: Option<Instant>,
}

impl Liveness {
    pub fn new(timeout: Duration) -> Liveness {
        Liveness { timeout, seen: HashMap::new() }
    }

    /// Whether `node_id` is live, from what was just read of it: whether its broker lock is
    /// held, and its heartbeat. Call it after reading, with the instant of the reading.
    pub fn observe(&mut self, node_id: i32, lock_held: bool, beat: Option<Heartbeat>, now: Instant) -> bool {
        if !lock_held {
            // The process is gone (the kernel or the file server released its lock).
            self.seen.remove(&node_id);
            return false;
        }
        let timeout = self.timeout;
        let seen = match (self.seen.get_mut(&node_id), beat) {
            (None, None) => return false,
            (Some(s), Some(b)) if s.beat.incarnation == b.incarnation => {
                if s.beat.counter != b.counter {
                    s.beat = b;
                    s.changed_at = now;
                    if s.expired {
                        let since = *s.renewing_since.get_or_insert(now);
                        s.expired = now.saturating_duration_since(since) < timeout;
                    }
                }
                s
            }
            (Some(s), None) => s,
            // First seen, or a new process of the node: live from now.
            (_, Some(b)) => {
                let fresh = Seen { beat: b, changed_at: now, expired: false, renewing_since: None };
                self.seen.entry(node_id).insert_entry(fresh).into_mut()
            }
        };
        if now.saturating_duration_since(seen.changed_at) >= timeout {
            seen.expired = true;
            seen.renewing_since = None;
        }
        !seen.expired
    }

    /// The peers whose lock is held but whose heartbeat expired, with the incarnation seen:
    /// what a taker may fence (store::leases).
    pub fn expired(&self) -> Vec<(i32, u64)> {
        let mut out: Vec<(i32, u64)> =
            self.seen.iter().filter(|(_, s)| s.expired).map(|(n, s)| (*n, s.beat.incarnation)).collect();
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(6);

    fn beat(incarnation: u64, counter: u64) -> Option<Heartbeat> {
        Some(Heartbeat { incarnation, counter })
    }

    #[test]
    fn a_renewing_peer_is_live() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        for i in 0..20 {
            assert!(l.observe(2, true, beat(7, i), t0 + Duration::from_secs(i)));
        }
    }

    #[test]
    fn a_peer_whose_counter_stands_still_for_the_timeout_is_not_live() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        assert!(l.observe(2, true, beat(7, 1), t0));
        assert!(l.observe(2, true, beat(7, 1), t0 + T - Duration::from_millis(1)));
        assert!(!l.observe(2, true, beat(7, 1), t0 + T));
    }

    #[test]
    fn a_released_broker_lock_is_not_live_at_once() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        assert!(l.observe(2, true, beat(7, 1), t0));
        assert!(!l.observe(2, false, beat(7, 2), t0 + Duration::from_millis(10)));
    }

    #[test]
    fn a_stalled_peer_is_live_again_only_after_renewing_for_a_whole_timeout() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        assert!(l.observe(2, true, beat(7, 1), t0));
        assert!(!l.observe(2, true, beat(7, 1), t0 + T));
        assert_eq!(l.expired(), vec![(2, 7)]);
        let back = t0 + T + Duration::from_secs(1);
        for i in 0..6 {
            assert!(!l.observe(2, true, beat(7, 2 + i), back + Duration::from_secs(i)), "flapping back too soon");
        }
        assert!(l.observe(2, true, beat(7, 8), back + T));
    }

    #[test]
    fn a_new_incarnation_is_live_at_once() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        assert!(l.observe(2, true, beat(7, 1), t0));
        assert!(!l.observe(2, true, beat(7, 1), t0 + T));
        assert!(l.observe(2, true, beat(8, 1), t0 + T + Duration::from_millis(1)));
    }

    #[test]
    fn an_unreadable_beat_counts_as_no_change() {
        let (mut l, t0) = (Liveness::new(T), Instant::now());
        assert!(!l.observe(2, true, None, t0), "never seen beating");
        assert!(l.observe(2, true, beat(7, 1), t0));
        assert!(l.observe(2, true, None, t0 + Duration::from_secs(3)));
        assert!(!l.observe(2, true, None, t0 + T));
    }

    #[test]
    fn a_broker_is_fresh_only_within_two_thirds_of_the_timeout_of_its_last_renewal() {
        let f = Freshness::new(Duration::from_millis(300));
        f.set_alone(false);
        f.renewed(Instant::now());
        assert!(f.lease_fresh() && f.may_serve());
        std::thread::sleep(Duration::from_millis(260));
        assert!(!f.lease_fresh() && !f.may_serve());
        f.set_alone(true);
        assert!(f.may_serve(), "a broker without peers answers through a stall");
    }

    #[test]
    fn a_heartbeat_file_is_renewed_in_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("__cluster/brokers")).unwrap();
        let mut w = HeartbeatWriter::create(dir.path(), 3, 0xabc).unwrap();
        let path = heartbeat_path(dir.path(), 3);
        assert_eq!(read_heartbeat(&path), beat(0xabc, 1));
        w.renew().unwrap();
        assert_eq!(read_heartbeat(&path), beat(0xabc, 2));
        assert_eq!(std::fs::read(&path).unwrap().len(), WIDTH);
    }
}
