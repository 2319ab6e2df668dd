//! The heartbeat thread: renews this broker's heartbeat file every
//! `broker_heartbeat_interval_ms` (store::cluster::liveness) and records each renewal that
//! completed in the broker's `Freshness`. A thread of its own: a slow takeover on the cluster
//! arbiter, or a partition thread's work, never delays a beat, and a beat blocked on a hung
//! disk blocks nothing else (the broker then stops answering for what it leads).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::store::cluster::fence::SelfFence;
use crate::store::cluster::liveness::{Freshness, HeartbeatWriter};

/// The running heartbeat; dropping it stops the beats (a stopping broker).
#[derive(Debug)]
pub struct Heartbeats {
    stop: Arc<AtomicBool>,
}

impl Heartbeats {
    /// Beats until dropped, or until this broker is seen fenced (`fence`, no I/O): a fenced
    /// incarnation's beats would only keep it looking live while it stops, and would overwrite
    /// the next incarnation's file.
    pub fn start(
        mut writer: HeartbeatWriter,
        every: Duration,
        freshness: Freshness,
        fence: SelfFence,
    ) -> std::io::Result<Heartbeats> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        // The registration wrote the first beat just now.
        freshness.renewed(Instant::now());
        std::thread::Builder::new().name("kaas-heartbeat".into()).spawn(move || {
            let mut failing = false;
            while !stopped.load(Ordering::Acquire) {
                std::thread::sleep(every);
                if fence.is_fenced() {
                    break;
                }
                let started = Instant::now();
                match writer.renew() {
                    Ok(()) => {
                        freshness.renewed(started);
                        if std::mem::take(&mut failing) {
                            tracing::info!("heartbeat renewed again");
                        }
                    }
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!("heartbeat not renewed (peers take over after broker_session_timeout_ms): {e}");
                    }
                    Err(_) => {}
                }
            }
        })?;
        Ok(Heartbeats { stop })
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}
