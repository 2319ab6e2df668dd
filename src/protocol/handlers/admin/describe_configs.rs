//! DescribeConfigs (key 32): every Kafka topic config with its value, source, synonyms and
//! documentation (store::topic_config::describe), Kafka's internal topics with the configs Kafka
//! creates them with, the broker configs kaas has a true value for (store::broker_config);
//! a GROUP's configs (store::group_config: Kafka's group configs with the broker's values);
//! BROKER_LOGGER and CLIENT_METRICS resources have no configs here (kaas has no Log4j loggers
//! and no client-metrics subscriptions).

use std::collections::BTreeMap;
use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use crate::config::Settings;
use crate::error_code::ResponseError;
use crate::protocol::{str_bytes, Session};
use crate::store::broker_config::{describe_broker, BrokerEntry};
use crate::store::config_resources::{
    describe_target, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use crate::store::group_config::{describe_group, group_doc, GroupDefaults, GroupEntry, GroupOverrides};
use crate::store::group_config_store;
use crate::store::topic_config::describe::SOURCE_DEFAULT;
use crate::store::topic_config::describe::{describe_topic, internal_topic_configs, Described, Synonym};

/// The value of every kaas setting that is a Kafka broker config (store::broker_config).
fn broker_settings(st: &Settings) -> BTreeMap<&'static str, String> {
    let listener = |hostport: &str| format!("PLAINTEXT://{hostport}");
    let advertised = st.advertised_listener.as_deref().unwrap_or(&st.listen);
    BTreeMap::from([
        ("advertised.listeners", listener(advertised)),
        ("auto.create.topics.enable", st.auto_create_topics.to_string()),
        ("broker.heartbeat.interval.ms", st.broker_heartbeat_interval_ms.to_string()),
        ("broker.id", st.node_id.to_string()),
        ("broker.session.timeout.ms", st.broker_session_timeout_ms.to_string()),
        ("connections.max.idle.ms", st.connections_max_idle_ms.to_string()),
        ("fetch.max.bytes", st.fetch_max_bytes.to_string()),
        ("group.consumer.assignors", st.group_consumer_assignors.join(",")),
        ("group.consumer.heartbeat.interval.ms", st.group_consumer_heartbeat_interval_ms.to_string()),
        ("group.consumer.max.size", st.group_consumer_max_size.to_string()),
        ("group.consumer.migration.policy", st.group_consumer_migration_policy.to_ascii_lowercase()),
        ("group.consumer.session.timeout.ms", st.group_consumer_session_timeout_ms.to_string()),
        ("group.initial.rebalance.delay.ms", st.group_initial_rebalance_delay_ms.to_string()),
        ("listeners", listener(&st.listen)),
        ("log.dirs", st.data_dir.join("topics").to_string_lossy().into_owned()),
        ("log.message.timestamp.after.max.ms", st.log_message_timestamp_after_max_ms.to_string()),
        ("log.message.timestamp.before.max.ms", st.log_message_timestamp_before_max_ms.to_string()),
        ("log.message.timestamp.type", st.log_message_timestamp_type.clone()),
        ("log.retention.bytes", st.retention_bytes.to_string()),
        ("log.retention.check.interval.ms", st.retention_check_interval_ms.to_string()),
        ("log.retention.ms", st.retention_ms.to_string()),
        ("log.segment.bytes", st.segment_bytes.to_string()),
        ("max.connections", st.max_connections.to_string()),
        ("max.connections.per.ip", st.max_connections_per_ip.to_string()),
        ("max.incremental.fetch.session.cache.slots", st.max_incremental_fetch_session_cache_slots.to_string()),
        ("message.max.bytes", st.max_message_bytes.to_string()),
        ("node.id", st.node_id.to_string()),
        ("num.partitions", st.num_partitions.to_string()),
        ("offsets.retention.check.interval.ms", st.offsets_retention_check_interval_ms.to_string()),
        ("offsets.retention.minutes", st.offsets_retention_minutes.to_string()),
        ("producer.id.expiration.ms", st.producer_id_expiration_ms.to_string()),
        ("queued.max.request.bytes", st.queued_max_request_bytes.to_string()),
        ("socket.request.max.bytes", st.max_request_bytes.to_string()),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            st.transaction_abort_check_interval_ms.to_string(),
        ),
        ("transaction.max.timeout.ms", st.transaction_max_timeout_ms.to_string()),
        ("transaction.state.log.num.partitions", st.txn_shards.to_string()),
        ("transactional.id.expiration.ms", st.transactional_id_expiration_ms.to_string()),
    ])
}

/// One broker config: read-only (kaas changes none at runtime), its type and, when asked for,
/// its documentation from v3.
fn broker_entry(e: BrokerEntry, synonyms: bool, documentation: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut out = entry(e.name, &e.value, e.source, true);
    if synonyms {
        out.synonyms = synonyms_of(e.synonyms);
    }
    if version >= 3 {
        out.config_type = e.config_type;
        if documentation {
            out.documentation = Some(str_bytes(e.doc));
        }
    }
    out
}

fn synonyms_of(synonyms: Vec<Synonym>) -> Vec<DescribeConfigsSynonym> {
    synonyms
        .into_iter()
        .map(|syn| {
            let mut out = DescribeConfigsSynonym::default();
            out.name = str_bytes(&syn.name);
            out.value = Some(str_bytes(&syn.value));
            out.source = syn.source;
            out
        })
        .collect()
}

fn entry(name: &str, value: &str, source: i8, read_only: bool) -> DescribeConfigsResourceResult {
    let mut e = DescribeConfigsResourceResult::default();
    e.name = str_bytes(name);
    e.value = Some(str_bytes(value));
    e.config_source = source;
    e.read_only = read_only;
    e
}

/// One topic config; synonyms when asked for, type and documentation from v3 (earlier versions
/// cannot carry them).
fn topic_entry(d: Described, synonyms: bool, documentation: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut e = entry(d.name, &d.value, d.source, false);
    if synonyms {
        e.synonyms = synonyms_of(d.synonyms);
    }
    if version >= 3 {
        e.config_type = d.config_type;
        if documentation {
            e.documentation = Some(str_bytes(d.doc));
        }
    }
    e
}

pub(super) fn group_defaults(st: &Settings) -> GroupDefaults {
    GroupDefaults {
        consumer_session_timeout_ms: st.group_consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms: st.group_consumer_heartbeat_interval_ms,
    }
}

/// Group `name`'s config overrides (store::group_config_store, read on the blocking pool).
async fn group_overrides(s: &Session, name: &str) -> Option<GroupOverrides> {
    let dir = s.settings.data_dir.clone();
    match tokio::task::spawn_blocking(move || group_config_store::load(&dir)).await {
        Ok(Ok(mut all)) => all.remove(name),
        Ok(Err(e)) => {
            tracing::warn!("reading the group configs: {e}");
            None
        }
        Err(_) => None,
    }
}

/// One group config: not read-only (Kafka can change it), its synonyms when asked for (as
/// Kafka's createGroupConfigEntry: the group's value, then the broker's), its type from v3.
fn group_entry(e: GroupEntry, synonyms: bool, documentation: bool, version: i16) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default();
    out.name = str_bytes(e.name);
    out.value = e.value.as_deref().map(str_bytes);
    out.config_source = e.source;
    out.read_only = false;
    if synonyms {
        let mut syn = DescribeConfigsSynonym::default();
        syn.name = str_bytes(e.name);
        syn.value = e.value.as_deref().map(str_bytes);
        syn.source = e.source;
        out.synonyms = vec![syn];
        if let Some(default) = e.default.as_deref() {
            let mut broker = DescribeConfigsSynonym::default();
            broker.name = str_bytes(e.name);
            broker.value = Some(str_bytes(default));
            broker.source = SOURCE_DEFAULT;
            out.synonyms.push(broker);
        }
    }
    if version >= 3 {
        out.config_type = e.config_type;
        if documentation {
            out.documentation = Some(str_bytes(group_doc(e.name)));
        }
    }
    out
}

/// Kafka describes every config when the key list is null or empty.
fn wanted(keys: &Option<Vec<kafka_protocol::protocol::StrBytes>>, name: &str) -> bool {
    keys.as_ref().is_none_or(|k| k.is_empty() || k.iter().any(|x| x.as_str() == name))
}

/// A topic's own configs: an internal topic's are the ones Kafka creates it with (kaas keeps no
/// log for it); `None` for a topic that does not exist.
async fn topic_configs(s: &Session, name: &str) -> Option<BTreeMap<String, String>> {
    match internal_topic_configs(name) {
        Some(configs) => Some(configs),
        None => s.lookup(name, false).await.ok().map(|h| h.meta.configs.clone()),
    }
}

pub async fn handle(s: Rc<Session>, version: i16, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let st = &s.settings;
    let defaults = st.topic_defaults();
    let mut resp = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut r = DescribeConfigsResult::default();
        r.resource_type = res.resource_type;
        r.resource_name = res.resource_name.clone();
        r.error_message = None; // Kafka sends null, not "", when there is no error
        match res.resource_type {
            RESOURCE_TOPIC => match topic_configs(&s, &res.resource_name).await {
                Some(configs) => {
                    for d in describe_topic(&defaults, &configs) {
                        if wanted(&res.configuration_keys, d.name) {
                            r.configs.push(topic_entry(d, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                None => r.error_code = ResponseError::UnknownTopicOrPartition.code(),
            },
            // Kafka lists the broker's Log4j loggers; kaas logs through `tracing` and has none.
            RESOURCE_BROKER_LOGGER => {
                if let Err(e) = describe_target(&res.resource_name, st.node_id, true) {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            }
            // A client-metrics subscription has only the configs set on it; kaas sets none.
            RESOURCE_CLIENT_METRICS if res.resource_name.is_empty() => {
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(str_bytes("Client metrics subscription name must not be empty"));
            }
            RESOURCE_CLIENT_METRICS => {}
            // This broker: its settings and what kaas does (store::broker_config). The cluster
            // default (an empty name) lists the dynamic defaults, and kaas has none.
            RESOURCE_BROKER => match describe_target(&res.resource_name, st.node_id, false) {
                Ok(Some(())) => {
                    for e in describe_broker(&broker_settings(st)) {
                        if wanted(&res.configuration_keys, e.name) {
                            r.configs.push(broker_entry(e, req.include_synonyms, req.include_documentation, version));
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            },
            // Any group name, known or not, as Kafka's ConfigHelper (store::group_config).
            RESOURCE_GROUP => match describe_group(
                &res.resource_name,
                group_defaults(st),
                group_overrides(&s, &res.resource_name).await.as_ref(),
            ) {
                Ok(entries) => {
                    for e in entries.into_iter().filter(|e| wanted(&res.configuration_keys, e.name)) {
                        r.configs.push(group_entry(e, req.include_synonyms, req.include_documentation, version));
                    }
                }
                Err(e) => {
                    r.error_code = e.code();
                    r.error_message = Some(str_bytes(&e.to_string()));
                }
            },
            _ => {
                r.error_code = ResponseError::InvalidRequest.code();
                r.error_message = Some(str_bytes("Unsupported resource type"));
            }
        }
        resp.results.push(r);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::broker_config::setting_names;

    #[test]
    fn every_broker_config_kaas_sets_has_its_value() {
        let values = broker_settings(&Settings::default());
        let missing: Vec<_> = setting_names().filter(|n| !values.contains_key(n)).collect();
        assert!(missing.is_empty(), "{missing:?}");
        assert!(values.keys().all(|n| setting_names().any(|s| s == *n)), "no value outside the table");
    }
}
