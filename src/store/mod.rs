//! The functional core and the on-disk formats: no actors here, no sockets.
//!
//! The rules are plain functions and structs without I/O (`txn`, `group`, `producer_state`,
//! `validate`, `ownership`, `placement`, `cluster::claim`, `cluster::fence_watch`, `auth::sasl`,
//! ...). The files are read and written by a few modules, each the one owner of its format:
//! `log` (segment files), `partition` (a log with its producer state and snapshots), `topics`
//! (topic files), `leases` and `cluster` (registrations, leases, fences, seals), `producer_ids`,
//! `configs::group_store`, `auth::credentials` (SCRAM credentials), and `durable` (the atomic,
//! durable write of a small file, which they share, and the fsync helpers).

pub mod admin;
pub mod auth;
pub mod batch;
pub mod cleaner;
pub mod clock;
pub mod cluster;
pub mod configs;
pub mod control;
pub mod coordinator_key;
pub mod create_partitions;
pub mod durable;
pub mod group;
pub mod leases;
pub mod log;
pub mod ownership;
pub mod partition;
pub mod placement;
pub mod producer_ids;
pub mod producer_state;
pub mod quorum;
pub mod recompress;
pub mod records;
pub mod topics;
pub mod txn;
pub mod validate;
