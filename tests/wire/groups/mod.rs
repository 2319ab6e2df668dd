//! Consumer groups: the classic and KIP-848 protocols and their mix, migration between them,
//! group configs, groups that go on through a restart, and commits that survive one.

mod acknowledged_commits;
mod configs;
mod consumer_protocol;
mod invalid_group_id;
mod migration;
mod mixed_protocols;
mod restart;
