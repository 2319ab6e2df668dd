//! The functional core and the on-disk formats: no actors here.

pub mod batch;
pub mod control;
pub mod fence_log;
pub mod group_state;
pub mod log;
pub mod producer_ids;
pub mod producer_state;
pub mod topic_config;
pub mod topics;
pub mod txn_state;

/// fsyncs a directory, so that entries created or renamed in it survive a power loss.
pub fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
