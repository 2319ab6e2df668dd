//! The cluster on a shared disk, as files: who may still write (`fence`: a broker cut off from
//! the disk is fenced by whoever takes over from it, and checks that after every fsync before
//! it acknowledges), and which bytes of a partition a leader epoch trusts (`seal`: a leader
//! writes only files of its own epoch and records, when it takes a partition over, how far it
//! trusts each file of its predecessors), who holds what (`claim`: epochs claimed with an
//! exclusive create), who is live (`liveness`: heartbeats judged on each observer's clock), and
//! the coordinators' databases per epoch (`state_dir`); producer fences between brokers
//! (`fence_log`: each broker's fence file; `fence_watch`: which peer fences apply here;
//! `known_fences`: the fences a partition this broker starts leading gets); `file_lock`: the
//! OFD locks a broker registration holds.

pub mod claim;
pub mod fence;
pub mod fence_log;
pub mod fence_watch;
pub mod file_lock;
pub mod known_fences;
pub mod liveness;
pub mod seal;
pub mod state_dir;
