//! Topics: creation bounds, names as Kafka takes them, partitions added, records and topics deleted, retention, topic
//! configs, and Kafka's internal topics as clients see them.

mod configs;
mod create_partitions;
mod create_topics_bounds;
mod delete_records;
pub(crate) mod delete_topics;
mod internal_topics;
mod names;
mod retention;
