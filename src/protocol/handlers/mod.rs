//! One file per Kafka API (request in, response out, the work done by messages to actors),
//! grouped as Kafka groups its APIs.

pub mod admin;
pub mod cluster;
pub mod groups;
pub mod records;
pub mod security;
pub mod txn;
