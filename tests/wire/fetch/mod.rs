//! Fetch: KIP-227 sessions, and the broker-wide bound on the memory of answers.

mod memory;
mod sessions;
