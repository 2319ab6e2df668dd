//! From a frame to a response: decode the header and body (unknown keys and versions refused
//! first), then route to the API's handler.

use std::rc::Rc;

use bytes::Bytes;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use thiserror::Error;

use super::response_budget::Charge;
use super::session::Session;
use super::{handlers, txn_markers_codec, versions};
use crate::store::log::file_range::FileRange;

#[derive(Debug, Error)]
pub enum RequestError {
    #[error("request header: {0}")]
    Header(String),
    #[error("unknown api key {0}")]
    UnknownApiKey(i16),
    #[error("unsupported version {1} of {0:?}")]
    UnsupportedVersion(ApiKey, i16),
    #[error("request body of {0:?} v{1}: {2}")]
    Body(ApiKey, i16, String),
}

/// A response, and the bytes it holds against the broker's response budget until it is written.
pub struct Answer {
    pub response: ResponseKind,
    pub charge: Charge,
    /// A Fetch answer's records as file ranges, in encoding order (protocol::outgoing).
    pub files: Vec<FileRange>,
}

impl From<ResponseKind> for Answer {
    fn from(response: ResponseKind) -> Answer {
        Answer { response, charge: Charge::none(), files: Vec::new() }
    }
}

/// A response still being worked on; `None` means no response at all (Produce with acks=0).
pub type Pending = LocalBoxFuture<'static, Option<Answer>>;

pub struct Decoded {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub request: Request,
}

pub enum Request {
    Kafka(Box<RequestKind>),
    /// WriteTxnMarkers v1/v2, decoded by hand (kafka-protocol 0.18 lacks v2).
    WriteTxnMarkers(Vec<txn_markers_codec::TxnMarker>),
}

/// Decodes a frame's header and body with every version kaas implements accepted (fuzzing,
/// tests); a connection uses [`decode_for`] with its broker's settings.
pub fn decode(frame: Bytes) -> Result<Decoded, (Option<RequestHeader>, RequestError)> {
    decode_for(frame, versions::Offered::ALL)
}

/// Decodes a frame's header and body. Unknown keys and versions (and versions the settings
/// take away, `offered`) are refused before the body is looked at; ApiVersions with a too-new
/// version is answered by the caller (UNSUPPORTED_VERSION).
pub fn decode_for(frame: Bytes, offered: versions::Offered) -> Result<Decoded, (Option<RequestHeader>, RequestError)> {
    let mut buf = frame;
    // frame.rs guarantees >= 8 bytes, so the header decoder's fixed peeks are in bounds.
    let key = i16::from_be_bytes([buf[0], buf[1]]);
    let version = i16::from_be_bytes([buf[2], buf[3]]);
    let api_key = ApiKey::try_from(key).map_err(|_| (None, RequestError::UnknownApiKey(key)))?;
    if api_key == ApiKey::ApiVersions && !versions::is_supported(api_key, version) {
        // Its header may be in a format we cannot know; the correlation id is all the
        // UNSUPPORTED_VERSION answer needs.
        let mut header = RequestHeader::default().with_request_api_key(key).with_request_api_version(version);
        header.correlation_id = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        return Err((Some(header), RequestError::UnsupportedVersion(api_key, version)));
    }
    let header = kafka_protocol::protocol::decode_request_header_from_buffer(&mut buf)
        .map_err(|e| (None, RequestError::Header(e.to_string())))?;
    if !offered.accepts(api_key, version) {
        return Err((Some(header), RequestError::UnsupportedVersion(api_key, version)));
    }
    let request = if api_key == ApiKey::WriteTxnMarkers {
        let markers = txn_markers_codec::decode_request(buf, version)
            .map_err(|e| (Some(header.clone()), RequestError::Body(api_key, version, e.to_string())))?;
        Request::WriteTxnMarkers(markers)
    } else {
        Request::Kafka(Box::new(
            RequestKind::decode(api_key, &mut buf, version)
                .map_err(|e| (Some(header.clone()), RequestError::Body(api_key, version, e.to_string())))?,
        ))
    };
    Ok(Decoded { header, api_key, request })
}

/// Routes a decoded request. Produce enqueues its appends before returning (so pipelined
/// requests of one connection reach each partition in order); everything else runs in the
/// returned future. A Fetch answer carries the charge of the data it read.
pub async fn dispatch(session: Rc<Session>, d: Decoded) -> Pending {
    if let Some(c) = &d.header.client_id {
        if session.client_id.borrow().as_str() != c.as_str() {
            *session.client_id.borrow_mut() = c.to_string();
        }
    }
    let v = d.header.request_api_version;
    use handlers::{admin::*, cluster::*, groups::*, records::*, security::*, txn::*};
    let request = match d.request {
        Request::WriteTxnMarkers(markers) => {
            return async move {
                Some(ResponseKind::WriteTxnMarkers(write_txn_markers::handle(session, v, markers).await).into())
            }
            .boxed_local();
        }
        Request::Kafka(r) => *r,
    };
    let request = match request {
        RequestKind::Produce(r) => {
            return produce::dispatch(session, v, r)
                .await
                .map(|o| o.map(|r| ResponseKind::Produce(r).into()))
                .boxed_local();
        }
        RequestKind::Fetch(r) => {
            return async move {
                let (response, charge, files) = fetch::handle(session, v, r).await;
                Some(Answer { response: ResponseKind::Fetch(response), charge, files })
            }
            .boxed_local();
        }
        RequestKind::ApiVersions(r) => {
            let offered = versions::Offered::from_settings(&session.settings);
            let resp = api_versions::handle(v, session.settings.transactions.transaction_version, offered, r);
            return async move { Some(ResponseKind::ApiVersions(resp).into()) }.boxed_local();
        }
        RequestKind::FindCoordinator(r) => {
            let resp = find_coordinator::handle(&session, v, r);
            return async move { Some(ResponseKind::FindCoordinator(resp).into()) }.boxed_local();
        }
        // A connection answers these itself (protocol::connection); reached here (in-process
        // tests), they are answered as on a listener without SASL.
        RequestKind::SaslHandshake(r) => {
            let (resp, _) = handlers::security::sasl_handshake::handle(&mut None, &[], &r, 1);
            return async move { Some(ResponseKind::SaslHandshake(resp).into()) }.boxed_local();
        }
        RequestKind::SaslAuthenticate(r) => {
            let none = |_: &str| None;
            let no_credential = |_: &str, _| None;
            let secrets = crate::store::auth::sasl::Secrets {
                plain_password: &none,
                scram_credential: &no_credential,
                nonce: String::new(),
            };
            let (resp, _) =
                handlers::security::sasl_authenticate::handle(&mut None, &secrets, &r, v, std::time::Instant::now());
            return async move { Some(ResponseKind::SaslAuthenticate(resp).into()) }.boxed_local();
        }
        RequestKind::DescribeCluster(r) => {
            let resp = describe_cluster::handle(&session, v, r);
            return async move { Some(ResponseKind::DescribeCluster(resp).into()) }.boxed_local();
        }
        other => other,
    };
    // The rest share one shape: `<api>::handle(session, version, request).await`.
    macro_rules! handled {
        ($($kind:ident => $module:ident),* $(,)?) => {
            match request {
                $(RequestKind::$kind(r) => {
                    async move { Some(ResponseKind::$kind($module::handle(session, v, r).await).into()) }.boxed_local()
                })*
                other => {
                    // versions.rs only lets advertised APIs through, so this is a programming error.
                    tracing::error!("no handler for {:?}", std::mem::discriminant(&other));
                    async { None }.boxed_local()
                }
            }
        };
    }
    handled! {
        ListOffsets => list_offsets,
        Metadata => metadata,
        CreateTopics => create_topics,
        CreatePartitions => create_partitions,
        DeleteTopics => delete_topics,
        DeleteRecords => delete_records,
        InitProducerId => init_producer_id,
        OffsetForLeaderEpoch => offset_for_leader_epoch,
        DescribeConfigs => describe_configs,
        AlterConfigs => alter_configs,
        IncrementalAlterConfigs => incremental_alter_configs,
        AddPartitionsToTxn => add_partitions_to_txn,
        AddOffsetsToTxn => add_offsets_to_txn,
        EndTxn => end_txn,
        TxnOffsetCommit => txn_offset_commit,
        DescribeTransactions => describe_transactions,
        ListTransactions => list_transactions,
        DescribeProducers => describe_producers,
        JoinGroup => join_group,
        SyncGroup => sync_group,
        Heartbeat => heartbeat,
        LeaveGroup => leave_group,
        OffsetCommit => offset_commit,
        OffsetFetch => offset_fetch,
        OffsetDelete => offset_delete,
        ListGroups => list_groups,
        DescribeGroups => describe_groups,
        DeleteGroups => delete_groups,
        ElectLeaders => elect_leaders,
        ListPartitionReassignments => list_partition_reassignments,
        DescribeClientQuotas => describe_client_quotas,
        DescribeUserScramCredentials => describe_user_scram_credentials,
        AlterUserScramCredentials => alter_user_scram_credentials,
        DescribeLogDirs => describe_log_dirs,
        DescribeQuorum => describe_quorum,
        ListConfigResources => list_config_resources,
        DescribeTopicPartitions => describe_topic_partitions,
        ConsumerGroupHeartbeat => consumer_group_heartbeat,
        ConsumerGroupDescribe => consumer_group_describe,
        DescribeAcls => describe_acls,
        CreateAcls => create_acls,
        DeleteAcls => delete_acls,
    }
}
