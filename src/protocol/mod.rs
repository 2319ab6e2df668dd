//! Wire side: frames, advertised versions, the per-connection session and one handler per API.

pub mod frame;
pub mod handlers;
pub mod txn_markers_codec;
pub mod versions;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use actix::Addr;
use bytes::Bytes;
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use thiserror::Error;

use crate::actors::cluster::ClusterView;
use crate::actors::group_coordinator::GroupCoordinator;
use crate::actors::messages::{
    GetTopic, GroupCall, GroupOp, GroupResponse, TopicHandle, TxnAnswer, TxnCall, TxnError, TxnOp,
};
use crate::actors::txn_coordinator::TxnCoordinator;
use crate::config::Settings;
use crate::error_code::ResponseError;
use crate::store::coordinator_key::txn_shard;

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

/// State shared by the requests of one connection (lives on that connection's thread).
pub struct Session {
    pub cluster: Addr<ClusterView>,
    /// Transaction-coordinator shards, indexed by `coordinator_key::txn_shard(transactional_id)`.
    pub txn: Arc<Vec<Addr<TxnCoordinator>>>,
    pub groups: Addr<GroupCoordinator>,
    pub settings: Arc<Settings>,
    pub cluster_id: Arc<str>,
    /// The client's address (DescribeGroups' client host).
    pub peer: String,
    /// The client id of the latest request (JoinGroup records it per member).
    pub client_id: RefCell<String>,
    topics: RefCell<HashMap<String, TopicHandle>>,
}

impl Session {
    pub fn new(
        cluster: Addr<ClusterView>,
        txn: Arc<Vec<Addr<TxnCoordinator>>>,
        groups: Addr<GroupCoordinator>,
        settings: Arc<Settings>,
        cluster_id: Arc<str>,
        peer: String,
    ) -> Rc<Session> {
        Rc::new(Session {
            cluster,
            txn,
            groups,
            settings,
            cluster_id,
            peer,
            client_id: RefCell::new(String::new()),
            topics: RefCell::new(HashMap::new()),
        })
    }

    /// Sends a membership request to the group coordinator and waits (rebalances park it).
    pub async fn group_call(&self, group_id: &str, op: GroupOp) -> Option<GroupResponse> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let msg = GroupCall { group_id: group_id.to_string(), op, reply: tx };
        self.groups.send(msg).await.ok()?;
        rx.await.ok()
    }

    /// The coordinator shard owning `transactional_id`.
    pub fn txn_shard(&self, transactional_id: &str) -> &Addr<TxnCoordinator> {
        &self.txn[txn_shard(transactional_id, self.txn.len())]
    }

    /// Sends a transactional call to its shard and waits for the answer.
    pub async fn txn_call(&self, transactional_id: &str, op: TxnOp) -> TxnAnswer {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let msg = TxnCall { transactional_id: transactional_id.to_string(), op, reply: tx };
        if self.txn_shard(transactional_id).send(msg).await.is_err() {
            return Err(TxnError::NotCoordinator);
        }
        rx.await.unwrap_or(Err(TxnError::NotCoordinator))
    }

    /// The topic's partition leaders, cached per connection.
    pub async fn topic(&self, name: &str, auto_create: bool) -> Result<TopicHandle, i16> {
        if let Some(h) = self.topics.borrow().get(name) {
            return Ok(h.clone());
        }
        self.lookup(name, auto_create).await
    }

    /// Asks the cluster view (never the cache) and refreshes the cache.
    pub async fn lookup(&self, name: &str, auto_create: bool) -> Result<TopicHandle, i16> {
        self.evict(name);
        let found = self
            .cluster
            .send(GetTopic { name: name.to_string(), auto_create })
            .await
            .map_err(|_| ResponseError::UnknownTopicOrPartition.code())??;
        self.topics.borrow_mut().insert(name.to_string(), found.clone());
        Ok(found)
    }

    /// Forgets a cached topic whose partition actors went away (deleted topic).
    pub fn evict(&self, name: &str) {
        self.topics.borrow_mut().remove(name);
    }

    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }
}

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A response still being worked on; `None` means no response at all (Produce with acks=0).
pub type Pending = LocalBoxFuture<'static, Option<ResponseKind>>;

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

/// Decodes a frame's header and body. Unknown keys and versions are refused before the body is
/// looked at; ApiVersions with a too-new version is answered by the caller (UNSUPPORTED_VERSION).
pub fn decode(frame: Bytes) -> Result<Decoded, (Option<RequestHeader>, RequestError)> {
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
    if !versions::is_supported(api_key, version) {
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
/// returned future.
pub async fn dispatch(session: Rc<Session>, d: Decoded) -> Pending {
    let v = d.header.request_api_version;
    if let Some(c) = &d.header.client_id {
        if session.client_id.borrow().as_str() != c.as_str() {
            *session.client_id.borrow_mut() = c.to_string();
        }
    }
    use handlers::*;
    let request = match d.request {
        Request::WriteTxnMarkers(markers) => {
            return async move { Some(ResponseKind::WriteTxnMarkers(write_txn_markers::handle(session, v, markers).await)) }
                .boxed_local();
        }
        Request::Kafka(r) => *r,
    };
    match request {
        RequestKind::Produce(r) => {
            produce::dispatch(session, v, r).await.map(|o| o.map(ResponseKind::Produce)).boxed_local()
        }
        RequestKind::Fetch(r) => {
            async move { Some(ResponseKind::Fetch(fetch::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::ListOffsets(r) => {
            async move { Some(ResponseKind::ListOffsets(list_offsets::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::Metadata(r) => {
            async move { Some(ResponseKind::Metadata(metadata::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::ApiVersions(r) => {
            let resp = api_versions::handle(v, session.settings.transaction_version, r);
            async move { Some(ResponseKind::ApiVersions(resp)) }.boxed_local()
        }
        RequestKind::CreateTopics(r) => {
            async move { Some(ResponseKind::CreateTopics(create_topics::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::DeleteTopics(r) => {
            async move { Some(ResponseKind::DeleteTopics(delete_topics::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::InitProducerId(r) => {
            async move { Some(ResponseKind::InitProducerId(init_producer_id::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::OffsetForLeaderEpoch(r) => async move {
            Some(ResponseKind::OffsetForLeaderEpoch(offset_for_leader_epoch::handle(session, v, r).await))
        }
        .boxed_local(),
        RequestKind::DescribeConfigs(r) => {
            async move { Some(ResponseKind::DescribeConfigs(describe_configs::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::AddPartitionsToTxn(r) => {
            async move { Some(ResponseKind::AddPartitionsToTxn(add_partitions_to_txn::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::EndTxn(r) => {
            async move { Some(ResponseKind::EndTxn(end_txn::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::JoinGroup(r) => {
            async move { Some(ResponseKind::JoinGroup(join_group::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::SyncGroup(r) => {
            async move { Some(ResponseKind::SyncGroup(sync_group::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::Heartbeat(r) => {
            async move { Some(ResponseKind::Heartbeat(heartbeat::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::LeaveGroup(r) => {
            async move { Some(ResponseKind::LeaveGroup(leave_group::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::OffsetCommit(r) => {
            async move { Some(ResponseKind::OffsetCommit(offset_commit::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::OffsetFetch(r) => {
            async move { Some(ResponseKind::OffsetFetch(offset_fetch::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::ListGroups(r) => {
            async move { Some(ResponseKind::ListGroups(list_groups::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::DescribeGroups(r) => {
            async move { Some(ResponseKind::DescribeGroups(describe_groups::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::DeleteGroups(r) => {
            async move { Some(ResponseKind::DeleteGroups(delete_groups::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::OffsetDelete(r) => {
            async move { Some(ResponseKind::OffsetDelete(offset_delete::handle(session, v, r).await)) }.boxed_local()
        }
        RequestKind::AddOffsetsToTxn(r) => {
            async move { Some(ResponseKind::AddOffsetsToTxn(add_offsets_to_txn::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::TxnOffsetCommit(r) => {
            async move { Some(ResponseKind::TxnOffsetCommit(txn_offset_commit::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::DescribeTransactions(r) => {
            async move { Some(ResponseKind::DescribeTransactions(describe_transactions::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::ListTransactions(r) => {
            async move { Some(ResponseKind::ListTransactions(list_transactions::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::DescribeProducers(r) => {
            async move { Some(ResponseKind::DescribeProducers(describe_producers::handle(session, v, r).await)) }
                .boxed_local()
        }
        RequestKind::FindCoordinator(r) => {
            let resp = find_coordinator::handle(&session, v, r);
            async move { Some(ResponseKind::FindCoordinator(resp)) }.boxed_local()
        }
        RequestKind::DescribeCluster(r) => {
            let resp = describe_cluster::handle(&session, v, r);
            async move { Some(ResponseKind::DescribeCluster(resp)) }.boxed_local()
        }
        other => {
            // versions.rs only lets advertised APIs through, so this is a programming error.
            tracing::error!("no handler for {:?}", std::mem::discriminant(&other));
            async { None }.boxed_local()
        }
    }
}
