//! Transactions: markers, fencing and the LSO on the wire; the producer state of offsets
//! partitions; the divergences from Apache Kafka a differential run found.

mod kafka_divergences;
mod markers_and_fencing;
mod offsets_producers;
