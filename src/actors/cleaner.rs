//! The log cleaner's threads (`log_cleaner_threads`, Kafka's `log.cleaner.threads`). A
//! compacted partition's leader offers itself here when its log needs cleaning (every
//! `log_cleaner_backoff_ms`); a free thread takes the dirtiest log offered (eos-rules 62), asks
//! its leader for a pass (`BeginCleaning`: the leader plans it on its own thread, with its
//! producer state and aborted transactions), runs the pass's file work here (store::log::clean:
//! reading, rewriting and fsyncing segments never blocks a partition's thread), and sends the
//! result back (`FinishCleaning`), which the leader installs. The bytes all threads read and
//! write are limited together (`log_cleaner_io_max_bytes_per_second`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use actix::Recipient;

use super::messages::{BeginCleaning, FinishCleaning};
use crate::metrics::Metrics;
use crate::store::cleaner::select::Dirtiness;

/// The largest decompressed records section a pass decodes; a larger batch stays as it is.
const MAX_DECODED_BYTES: usize = 64 << 20;
/// How long a thread waits for a leader to plan its pass.
const PLAN_TIMEOUT: Duration = Duration::from_secs(30);

/// The cleaner's settings (`log_cleaner_*`).
#[derive(Debug, Clone, Copy)]
pub struct CleanerSettings {
    pub enable: bool,
    pub threads: usize,
    pub dedupe_buffer_bytes: usize,
    /// 0: no limit.
    pub io_max_bytes_per_second: u64,
    pub backoff: Duration,
}

/// A leader whose log needs cleaning.
struct Offer {
    name: String,
    ratio: f64,
    compaction_delay_ms: i64,
    leader: Recipient<BeginCleaning>,
    finish: Recipient<FinishCleaning>,
    /// A thread is cleaning it.
    busy: bool,
}

struct Shared {
    settings: CleanerSettings,
    offers: Mutex<HashMap<u64, Offer>>,
    next_id: AtomicU64,
    stopped: AtomicBool,
    io: Mutex<Throttle>,
    metrics: Metrics,
}

/// Handle to the cleaner threads; clones share them.
#[derive(Clone)]
pub struct LogCleaner(Arc<Shared>);

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogCleaner")
    }
}

impl LogCleaner {
    /// Starts the threads (none when the cleaner is disabled: offers are then ignored).
    pub fn start(settings: CleanerSettings, metrics: Metrics) -> LogCleaner {
        let shared = Arc::new(Shared {
            settings,
            offers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            stopped: AtomicBool::new(false),
            io: Mutex::new(Throttle::new(settings.io_max_bytes_per_second)),
            metrics,
        });
        if settings.enable {
            for i in 0..settings.threads.max(1) {
                let s = shared.clone();
                if let Err(e) = thread::Builder::new().name(format!("kaas-cleaner-{i}")).spawn(move || run(&s)) {
                    tracing::error!("log cleaner thread not started: {e}");
                }
            }
        }
        LogCleaner(shared)
    }

    /// A cleaner with no thread (tools and tests that run no broker).
    pub fn disabled() -> LogCleaner {
        let settings = CleanerSettings {
            enable: false,
            threads: 0,
            dedupe_buffer_bytes: 1 << 20,
            io_max_bytes_per_second: 0,
            backoff: Duration::from_secs(15),
        };
        LogCleaner::start(settings, Metrics::new())
    }

    pub fn enabled(&self) -> bool {
        self.0.settings.enable
    }

    pub fn backoff(&self) -> Duration {
        self.0.settings.backoff
    }

    /// A key for one leader's offers.
    pub fn register(&self) -> u64 {
        self.0.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Leader `id`'s log needs cleaning (kept while a thread cleans it).
    pub fn offer(
        &self,
        id: u64,
        name: &str,
        d: &Dirtiness,
        leader: Recipient<BeginCleaning>,
        finish: Recipient<FinishCleaning>,
    ) {
        if !self.enabled() {
            return;
        }
        let mut offers = self.0.offers.lock().unwrap_or_else(PoisonError::into_inner);
        let busy = offers.get(&id).is_some_and(|o| o.busy);
        let offer = Offer {
            name: name.to_string(),
            ratio: d.ratio,
            compaction_delay_ms: d.compaction_delay_ms,
            leader,
            finish,
            busy,
        };
        offers.insert(id, offer);
    }

    /// Leader `id` needs no cleaning (or stopped).
    pub fn withdraw(&self, id: u64) {
        self.0.offers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }

    /// Stops the threads after their current pass (at the broker's stop).
    pub fn stop(&self) {
        self.0.stopped.store(true, Ordering::Release);
    }
}

/// One cleaner thread: the dirtiest offer not being cleaned, one pass, again.
fn run(s: &Shared) {
    // Cleaning yields to the threads that answer clients (the produce p99 of other partitions).
    if let Err(e) = crate::sys::lower_thread_priority() {
        tracing::debug!("log cleaner thread keeps its priority: {e}");
    }
    let per_thread_map = s.settings.dedupe_buffer_bytes / s.settings.threads.max(1);
    let mut last_run = Instant::now();
    while !s.stopped.load(Ordering::Acquire) {
        let since = i64::try_from(last_run.elapsed().as_millis()).unwrap_or(i64::MAX);
        s.metrics.cleaner().time_since_last_run_ms.set(since);
        last_run = Instant::now();
        let Some((id, name, leader, finish)) = pick(s) else {
            thread::sleep(s.settings.backoff.min(Duration::from_secs(1)));
            continue;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam_channel::bounded(1);
        leader.do_send(BeginCleaning {
            dedupe_buffer_bytes: per_thread_map,
            max_decoded_bytes: MAX_DECODED_BYTES,
            stop: stop.clone(),
            reply: tx,
        });
        let work = rx.recv_timeout(PLAN_TIMEOUT).ok().flatten();
        let Some(work) = work else {
            done(s, id);
            continue;
        };
        tracing::info!(
            partition = %name,
            first_dirty = work.job.first_dirty(),
            cleanable_end = work.job.cleanable_end(),
            "cleaning the log"
        );
        let started = Instant::now();
        let result = work.job.run(&work.inputs, &mut |n| throttle(s, n), || work.snapshot.run(), &stop);
        let m = s.metrics.cleaner();
        match &result {
            Ok(c) => {
                m.bytes_read.inc_by(c.stats.bytes_read);
                m.bytes_written.inc_by(c.stats.bytes_written);
                m.max_buffer_utilization_percent.set((c.stats.map_utilization_permille / 10) as i64);
                m.max_clean_time_secs.set(started.elapsed().as_secs() as i64);
                tracing::info!(
                    partition = %name,
                    read = c.stats.bytes_read,
                    written = c.stats.bytes_written,
                    batches_dropped = c.stats.batches_dropped,
                    keys = c.stats.keys_mapped,
                    ms = started.elapsed().as_millis() as u64,
                    "log cleaned"
                );
            }
            Err(e) => {
                m.errors.inc();
                tracing::warn!(partition = %name, "log cleaning failed, log left as it was: {e}");
            }
        }
        finish.do_send(FinishCleaning { result });
        done(s, id);
    }
}

/// Picks the dirtiest log offered that no thread cleans, and marks it busy; updates the
/// selection gauges.
fn pick(s: &Shared) -> Option<(u64, String, Recipient<BeginCleaning>, Recipient<FinishCleaning>)> {
    let mut offers = s.offers.lock().unwrap_or_else(PoisonError::into_inner);
    let m = s.metrics.cleaner();
    let max_ratio = offers.values().map(|o| o.ratio).fold(0.0, f64::max);
    m.max_dirty_percent.set((max_ratio * 100.0) as i64);
    let max_delay = offers.values().map(|o| o.compaction_delay_ms).max().unwrap_or(0);
    m.max_compaction_delay_secs.set(max_delay / 1000);
    let (&id, offer) = offers.iter_mut().filter(|(_, o)| !o.busy).max_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio))?;
    offer.busy = true;
    Some((id, offer.name.clone(), offer.leader.clone(), offer.finish.clone()))
}

/// The pass of `id` ended: its leader offers itself again when it needs another.
fn done(s: &Shared, id: u64) {
    s.offers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
}

fn throttle(s: &Shared, bytes: u64) {
    let wait = s.io.lock().unwrap_or_else(PoisonError::into_inner).charge(bytes, Instant::now());
    if !wait.is_zero() {
        thread::sleep(wait);
    }
}

/// The I/O rate limit: the bytes charged since the window began may not run ahead of the rate
/// (a sleep makes up the difference); the window starts again once it caught up after a second.
#[derive(Debug)]
struct Throttle {
    rate: u64,
    window_start: Option<Instant>,
    bytes: u64,
}

const THROTTLE_WINDOW: Duration = Duration::from_secs(1);

impl Throttle {
    fn new(rate: u64) -> Throttle {
        Throttle { rate, window_start: None, bytes: 0 }
    }

    /// How long to sleep after `bytes` more to stay within the rate.
    fn charge(&mut self, bytes: u64, now: Instant) -> Duration {
        if self.rate == 0 {
            return Duration::ZERO;
        }
        let start = *self.window_start.get_or_insert(now);
        self.bytes = self.bytes.saturating_add(bytes);
        let elapsed = now.duration_since(start);
        let due = Duration::from_secs_f64(self.bytes as f64 / self.rate as f64);
        if elapsed >= THROTTLE_WINDOW && due <= elapsed {
            self.window_start = Some(now);
            self.bytes = 0;
            return Duration::ZERO;
        }
        due.saturating_sub(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_sleeps_what_keeps_the_rate() {
        let mut t = Throttle::new(1000);
        let t0 = Instant::now();
        assert_eq!(t.charge(500, t0), Duration::from_millis(500), "500 bytes at 1,000/s take 0.5 s");
        // 1,500 bytes take 1.5 s; 0.3 s went by.
        assert_eq!(t.charge(1000, t0 + Duration::from_millis(300)), Duration::from_millis(1200));
        // Caught up after more than a second: a new window.
        assert_eq!(t.charge(0, t0 + Duration::from_secs(2)), Duration::ZERO);
        assert_eq!(t.charge(100, t0 + Duration::from_secs(2)), Duration::from_millis(100));
        assert_eq!(Throttle::new(0).charge(u64::MAX, t0), Duration::ZERO, "no limit");
    }
}
