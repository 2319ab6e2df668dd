//! FenceWriter: appends this broker's producer fences to its fence file on the shared disk
//! (`__cluster/producer_fences/from-<node>.json`), which the other brokers' fence watchers read.

use actix::{Actor, Context, Handler};

use super::messages::AppendFence;
use crate::store::clock::now_ms;
use crate::store::cluster::fence_log::FenceLog;

pub struct FenceWriter {
    log: FenceLog,
    /// Entries older than this are dropped when the file is rewritten (producer-id expiry).
    max_age_ms: i64,
}

impl FenceWriter {
    pub fn new(log: FenceLog, max_age_ms: i64) -> FenceWriter {
        FenceWriter { log, max_age_ms }
    }
}

impl Actor for FenceWriter {
    type Context = Context<Self>;
}

impl Handler<AppendFence> for FenceWriter {
    type Result = ();

    fn handle(&mut self, msg: AppendFence, _: &mut Self::Context) {
        if let Err(e) = self.log.append(msg.producer_id, msg.epoch, now_ms(), self.max_age_ms) {
            tracing::error!(producer_id = msg.producer_id, "fence file not written: {e}");
        }
    }
}
