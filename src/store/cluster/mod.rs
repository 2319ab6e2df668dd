//! The cluster on a shared disk, as files: who may still write (`fence`: a broker cut off from
//! the disk is fenced by whoever takes over from it, and checks that after every fsync before
//! it acknowledges), and which bytes of a partition a leader epoch trusts (`seal`: a leader
//! writes only files of its own epoch and records, when it takes a partition over, how far it
//! trusts each file of its predecessors), who holds what (`claim`: epochs claimed with an
//! exclusive create), who is live (`liveness`: heartbeats judged on each observer's clock), and
//! the coordinators' databases per epoch (`state_dir`).

pub mod claim;
pub mod fence;
pub mod liveness;
pub mod seal;
pub mod state_dir;
