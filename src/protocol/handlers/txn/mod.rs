//! Transactions and producers: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//! WriteTxnMarkers (the inter-broker marker API), and the admin views DescribeTransactions,
//! ListTransactions, DescribeProducers.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod describe_producers;
pub mod describe_transactions;
pub mod end_txn;
pub mod init_producer_id;
pub mod list_transactions;
pub mod write_txn_markers;
