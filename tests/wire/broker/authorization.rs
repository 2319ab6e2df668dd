//! The authorizer over the wire (docs/security.md): with `authorizer = standard` and
//! `allow_everyone_if_no_acl_found`, an anonymous client creates DENY ACLs with CreateAcls; the
//! requests they name are then refused with Kafka's codes (a KIP-848 subscription, Metadata,
//! InitProducerId and EndTxn of a transactional id), DescribeAcls lists them and DeleteAcls
//! removes them. Without an authorizer the ACL APIs are SECURITY_DISABLED, as in Kafka.

use crate::common;
use common::{create_topic, Broker, Client};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const SECURITY_DISABLED: i16 = 54;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn describe_all(c: &mut Client) -> DescribeAclsResponse {
    let mut req = DescribeAclsRequest::default();
    req.resource_type_filter = 1; // ANY
    req.pattern_type_filter = 1; // ANY
    req.operation = 1; // ANY
    req.permission_type = 1; // ANY
                             // null filters (kafka-protocol's defaults are empty strings)
    (req.resource_name_filter, req.principal_filter, req.host_filter) = (None, None, None);
    c.call(ApiKey::DescribeAcls, 3, req)
}

/// DENY for every principal and host.
fn deny(resource_type: i8, name: &str, operation: i8) -> AclCreation {
    let mut a = AclCreation::default();
    a.resource_type = resource_type;
    a.resource_name = s(name);
    a.resource_pattern_type = 3; // LITERAL
    a.principal = s("User:*");
    a.host = s("*");
    a.operation = operation;
    a.permission_type = 2; // DENY
    a
}

fn metadata_error(c: &mut Client, topic: &str) -> i16 {
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(s(topic)));
    let mut req = MetadataRequest::default();
    req.topics = Some(vec![t]);
    let resp: MetadataResponse = c.call(ApiKey::Metadata, 12, req);
    resp.topics[0].error_code
}

#[test]
fn acl_apis_are_security_disabled_without_an_authorizer() {
    let b = Broker::start();
    let mut c = b.client();
    assert_eq!(describe_all(&mut c).error_code, SECURITY_DISABLED);
    let mut req = CreateAclsRequest::default();
    req.creations = vec![deny(2, "t", 3)];
    let resp: CreateAclsResponse = c.call(ApiKey::CreateAcls, 3, req);
    assert_eq!(resp.results[0].error_code, SECURITY_DISABLED);
}

#[test]
fn deny_acls_refuse_what_they_name_with_kafkas_codes_until_deleted() {
    let b = Broker::start_with_env(&[("KAAS_AUTHORIZER", "standard"), ("KAAS_ALLOW_EVERYONE_IF_NO_ACL_FOUND", "true")]);
    let mut c = b.client();
    create_topic(&mut c, "secret");
    assert_eq!(metadata_error(&mut c, "secret"), 0, "no ACL names it: everyone may");
    let mut req = CreateAclsRequest::default();
    // TOPIC secret: READ and DESCRIBE denied; TRANSACTIONAL_ID tx: WRITE denied.
    req.creations = vec![deny(2, "secret", 3), deny(2, "secret", 8), deny(5, "tx", 4)];
    let resp: CreateAclsResponse = c.call(ApiKey::CreateAcls, 3, req);
    assert!(resp.results.iter().all(|r| r.error_code == 0), "{:?}", resp.results);

    assert_eq!(metadata_error(&mut c, "secret"), TOPIC_AUTHORIZATION_FAILED);
    let mut hb = ConsumerGroupHeartbeatRequest::default();
    hb.group_id = GroupId(s("g"));
    hb.member_id = s("m1");
    hb.rebalance_timeout_ms = 30_000;
    hb.subscribed_topic_names = Some(vec![TopicName(s("secret"))]);
    hb.topic_partitions = Some(vec![]);
    let resp: ConsumerGroupHeartbeatResponse = c.call(ApiKey::ConsumerGroupHeartbeat, 1, hb);
    assert_eq!(resp.error_code, TOPIC_AUTHORIZATION_FAILED);
    let mut init = InitProducerIdRequest::default();
    init.transactional_id = Some(TransactionalId(s("tx")));
    init.transaction_timeout_ms = 60_000;
    init.producer_id = ProducerId(-1);
    init.producer_epoch = -1;
    let resp: InitProducerIdResponse = c.call(ApiKey::InitProducerId, 5, init);
    assert_eq!(
        (resp.error_code, resp.producer_id.0, resp.producer_epoch),
        (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    );
    let mut end = EndTxnRequest::default();
    end.transactional_id = TransactionalId(s("tx"));
    let resp: EndTxnResponse = c.call(ApiKey::EndTxn, 4, end);
    assert_eq!(resp.error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);

    let listed = describe_all(&mut c);
    assert_eq!(listed.error_code, 0);
    let count: usize = listed.resources.iter().map(|r| r.acls.len()).sum();
    assert_eq!((listed.resources.len(), count), (2, 3));

    let mut filter = DeleteAclsFilter::default();
    filter.resource_type_filter = 1;
    filter.pattern_type_filter = 1;
    filter.operation = 1;
    filter.permission_type = 1;
    (filter.resource_name_filter, filter.principal_filter, filter.host_filter) = (None, None, None);
    let mut del = DeleteAclsRequest::default();
    del.filters = vec![filter];
    let resp: DeleteAclsResponse = c.call(ApiKey::DeleteAcls, 3, del);
    assert_eq!(resp.filter_results[0].matching_acls.len(), 3);
    assert_eq!(metadata_error(&mut c, "secret"), 0, "the ACLs are gone");
}
