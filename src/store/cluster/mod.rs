//! The cluster on a shared disk, as files: who may still write (`fence`: a broker cut off from
//! the disk is fenced by whoever takes over from it, and checks that after every fsync before
//! it acknowledges), and which bytes of a partition a leader epoch trusts (`seal`: a leader
//! writes only files of its own epoch and records, when it takes a partition over, how far it
//! trusts each file of its predecessors).

pub mod fence;
pub mod seal;
