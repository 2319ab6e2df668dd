//! Apache Kafka 4.4's dynamic broker configs (`DynamicConfig.Broker`: the 110 configs
//! `kafka-configs --entity-type brokers --alter` may change at runtime), each with Kafka's type,
//! validator and default, whether Kafka takes it only for one broker (`per_broker`), and what it
//! does on kaas ([`Effect`]); and the names of Kafka's other broker configs, which it refuses to
//! change at runtime ([`KAFKA_STATIC_CONFIGS`]). Read from Kafka 4.4's jars
//! (`DynamicConfig.Broker.configKeys()`, `DynamicBrokerConfig.perBrokerConfigs`,
//! `DynamicConfig.Broker.nonDynamicProps()`). Pure data.

use crate::store::configs::topic::table::{Kind, Valid};

/// Why a stored config has no effect on kaas (its DescribeConfigs documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Threads,
    Replication,
    Tiered,
    Kerberos,
    Oauth,
    Groups,
    Dlq,
    CleanerBuffers,
}

impl Missing {
    pub fn why(self) -> &'static str {
        match self {
            Missing::Threads => {
                "kaas has no such thread pool (its threads are connection_threads, partition_threads and sync_threads, set at start): stored and described, no effect."
            }
            Missing::Replication => {
                "kaas keeps one copy on the shared disk and does not replicate: stored and described, no effect."
            }
            Missing::Tiered => "Tiered storage is not in kaas: stored and described, no effect.",
            Missing::Kerberos => "kaas has no GSSAPI (Kerberos) login: stored and described, no effect.",
            Missing::Oauth => "kaas has no OAUTHBEARER login to refresh: stored and described, no effect.",
            Missing::Groups => {
                "kaas's group coordinator assigns in place and keeps its state in its own database: stored and described, no effect."
            }
            Missing::Dlq => "Share groups and their dead letter queues are not in kaas: stored and described, no effect.",
            Missing::CleanerBuffers => {
                "kaas's log cleaner sizes its reads itself: stored and described, no effect."
            }
        }
    }
}

/// What a dynamic broker config does on kaas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The default of this topic config for every topic without its own value, at once (as
    /// Kafka's DynamicLogConfig); checked as the topic config is.
    Topic(&'static str),
    /// Accepted and stored; kaas has no machinery it would configure.
    Stored(Missing),
    /// A kaas setting read at start, or security kaas does not change at runtime: refused as
    /// Kafka refuses its static configs.
    Static,
    /// What kaas always does: only this value.
    Fixed(&'static str),
}

#[derive(Debug, Clone, Copy)]
pub struct DynamicDef {
    pub name: &'static str,
    pub kind: Kind,
    pub valid: Valid,
    /// Kafka's default; `None` where Kafka has none (null).
    pub default: Option<&'static str>,
    /// Kafka takes it for one broker only, not as the cluster default.
    pub per_broker: bool,
    pub effect: Effect,
}

const fn dynamic(
    name: &'static str,
    kind: Kind,
    valid: Valid,
    default: Option<&'static str>,
    per_broker: bool,
    effect: Effect,
) -> DynamicDef {
    DynamicDef { name, kind, valid, default, per_broker, effect }
}

use Effect::{Fixed, Static, Stored, Topic};
use Kind::*;
use Missing::*;
use Valid::*;

/// All 110, sorted by name.
#[rustfmt::skip]
pub const DYNAMIC_CONFIGS: &[DynamicDef] = &[
    dynamic("background.threads", Int, AtLeast(1), Some("10"), false, Stored(Threads)),
    dynamic("compression.gzip.level", Int, GzipLevel, Some("-1"), false, Topic("compression.gzip.level")),
    dynamic("compression.lz4.level", Int, Between(1, 17), Some("9"), false, Topic("compression.lz4.level")),
    dynamic("compression.type", Str, OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]), Some("producer"), false, Topic("compression.type")),
    dynamic("compression.zstd.level", Int, Between(-131072, 22), Some("3"), false, Topic("compression.zstd.level")),
    dynamic("config.providers", List, Any, Some(""), false, Static),
    dynamic("cordoned.log.dirs", List, Any, Some(""), true, Static),
    dynamic("errors.deadletterqueue.auto.create.topics.enable", Bool, Any, Some("false"), false, Stored(Dlq)),
    dynamic("errors.deadletterqueue.topic.name.prefix", Str, Any, Some("dlq."), false, Stored(Dlq)),
    dynamic("follower.fetch.last.tiered.offset.enable", Bool, Any, Some("false"), false, Stored(Tiered)),
    dynamic("follower.replication.throttled.rate", Long, AtLeast(0), Some("9223372036854775807"), false, Stored(Replication)),
    dynamic("group.consumer.assignment.interval.ms", Int, AtLeast(0), Some("1000"), false, Stored(Groups)),
    dynamic("group.consumer.assignor.offload.enable", Bool, Any, Some("true"), false, Stored(Groups)),
    dynamic("group.coordinator.cached.buffer.max.bytes", Int, AtLeast(524288), Some("1048588"), false, Stored(Groups)),
    dynamic("group.share.assignment.interval.ms", Int, AtLeast(0), Some("1000"), false, Stored(Groups)),
    dynamic("group.share.assignor.offload.enable", Bool, Any, Some("true"), false, Stored(Groups)),
    dynamic("group.streams.assignment.interval.ms", Int, AtLeast(0), Some("1000"), false, Stored(Groups)),
    dynamic("group.streams.assignor.offload.enable", Bool, Any, Some("true"), false, Stored(Groups)),
    dynamic("leader.replication.throttled.rate", Long, AtLeast(0), Some("9223372036854775807"), false, Stored(Replication)),
    dynamic("listener.security.protocol.map", Str, Any, Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"), true, Static),
    dynamic("listeners", List, Any, Some("PLAINTEXT://:9092"), true, Static),
    dynamic("log.cleaner.backoff.ms", Long, AtLeast(0), Some("15000"), false, Static),
    dynamic("log.cleaner.dedupe.buffer.size", Long, Any, Some("134217728"), false, Static),
    dynamic("log.cleaner.delete.retention.ms", Long, AtLeast(0), Some("86400000"), false, Topic("delete.retention.ms")),
    dynamic("log.cleaner.io.buffer.load.factor", Double, Any, Some("0.9"), false, Stored(CleanerBuffers)),
    dynamic("log.cleaner.io.buffer.size", Int, AtLeast(0), Some("524288"), false, Stored(CleanerBuffers)),
    dynamic("log.cleaner.io.max.bytes.per.second", Double, Any, Some("1.7976931348623157E308"), false, Static),
    dynamic("log.cleaner.max.compaction.lag.ms", Long, AtLeast(1), Some("9223372036854775807"), false, Topic("max.compaction.lag.ms")),
    dynamic("log.cleaner.min.cleanable.ratio", Double, Between(0, 1), Some("0.5"), false, Topic("min.cleanable.dirty.ratio")),
    dynamic("log.cleaner.min.compaction.lag.ms", Long, AtLeast(0), Some("0"), false, Topic("min.compaction.lag.ms")),
    dynamic("log.cleaner.threads", Int, AtLeast(0), Some("1"), false, Static),
    dynamic("log.cleanup.policy", List, ListOf(&["compact", "delete"]), Some("delete"), false, Topic("cleanup.policy")),
    dynamic("log.flush.interval.messages", Long, AtLeast(1), Some("9223372036854775807"), false, Topic("flush.messages")),
    dynamic("log.flush.interval.ms", Long, Any, None, false, Topic("flush.ms")),
    dynamic("log.index.interval.bytes", Int, AtLeast(0), Some("4096"), false, Topic("index.interval.bytes")),
    dynamic("log.index.size.max.bytes", Int, AtLeast(4), Some("10485760"), false, Topic("segment.index.bytes")),
    dynamic("log.local.retention.bytes", Long, AtLeast(-2), Some("-2"), false, Topic("local.retention.bytes")),
    dynamic("log.local.retention.ms", Long, AtLeast(-2), Some("-2"), false, Topic("local.retention.ms")),
    dynamic("log.message.timestamp.after.max.ms", Long, AtLeast(0), Some("3600000"), false, Topic("message.timestamp.after.max.ms")),
    dynamic("log.message.timestamp.before.max.ms", Long, AtLeast(0), Some("9223372036854775807"), false, Topic("message.timestamp.before.max.ms")),
    dynamic("log.message.timestamp.type", Str, OneOf(&["CreateTime", "LogAppendTime"]), Some("CreateTime"), false, Topic("message.timestamp.type")),
    dynamic("log.preallocate", Bool, Any, Some("false"), false, Topic("preallocate")),
    dynamic("log.remote.copy.lag.bytes", Long, AtLeast(-1), Some("-1"), false, Topic("remote.copy.lag.bytes")),
    dynamic("log.remote.copy.lag.ms", Long, AtLeast(-1), Some("0"), false, Topic("remote.copy.lag.ms")),
    dynamic("log.retention.bytes", Long, Any, Some("-1"), false, Topic("retention.bytes")),
    dynamic("log.retention.ms", Long, Any, None, false, Topic("retention.ms")),
    dynamic("log.roll.jitter.ms", Long, Any, None, false, Topic("segment.jitter.ms")),
    dynamic("log.roll.ms", Long, Any, None, false, Topic("segment.ms")),
    dynamic("log.segment.bytes", Int, AtLeast(1048576), Some("1073741824"), false, Topic("segment.bytes")),
    dynamic("log.segment.delete.delay.ms", Long, AtLeast(0), Some("60000"), false, Topic("file.delete.delay.ms")),
    dynamic("max.connection.creation.rate", Int, AtLeast(0), Some("2147483647"), false, Static),
    dynamic("max.connections", Int, AtLeast(0), Some("2147483647"), false, Static),
    dynamic("max.connections.per.ip", Int, AtLeast(0), Some("2147483647"), false, Static),
    dynamic("max.connections.per.ip.overrides", Str, Any, Some(""), false, Static),
    dynamic("max.decompressed.message.bytes", Int, Between(1, 2147483639), Some("2147483639"), false, Topic("max.decompressed.message.bytes")),
    dynamic("message.max.bytes", Int, AtLeast(0), Some("1048588"), false, Topic("max.message.bytes")),
    dynamic("metric.reporters", List, Any, Some("org.apache.kafka.common.metrics.JmxReporter"), false, Static),
    dynamic("min.insync.replicas", Int, AtLeast(1), Some("1"), false, Topic("min.insync.replicas")),
    dynamic("num.io.threads", Int, AtLeast(1), Some("8"), false, Stored(Threads)),
    dynamic("num.network.threads", Int, AtLeast(1), Some("3"), false, Stored(Threads)),
    dynamic("num.recovery.threads.per.data.dir", Int, AtLeast(1), Some("2"), false, Stored(Threads)),
    dynamic("num.replica.fetchers", Int, AtLeast(1), Some("1"), false, Stored(Threads)),
    dynamic("principal.builder.class", Class, Any, Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), true, Static),
    dynamic("producer.id.expiration.ms", Int, AtLeast(1), Some("86400000"), false, Static),
    dynamic("remote.fetch.max.wait.ms", Int, AtLeast(1), Some("500"), false, Stored(Tiered)),
    dynamic("remote.list.offsets.request.timeout.ms", Long, AtLeast(1), Some("30000"), false, Stored(Tiered)),
    dynamic("remote.log.index.file.cache.total.size.bytes", Long, AtLeast(1), Some("1073741824"), false, Stored(Tiered)),
    dynamic("remote.log.manager.copier.thread.pool.size", Int, AtLeast(1), Some("10"), false, Stored(Tiered)),
    dynamic("remote.log.manager.copy.max.bytes.per.second", Long, AtLeast(1), Some("9223372036854775807"), false, Stored(Tiered)),
    dynamic("remote.log.manager.expiration.thread.pool.size", Int, AtLeast(1), Some("10"), false, Stored(Tiered)),
    dynamic("remote.log.manager.fetch.max.bytes.per.second", Long, AtLeast(1), Some("9223372036854775807"), false, Stored(Tiered)),
    dynamic("remote.log.manager.follower.thread.pool.size", Int, AtLeast(1), Some("2"), false, Stored(Tiered)),
    dynamic("remote.log.reader.threads", Int, AtLeast(1), Some("10"), false, Stored(Tiered)),
    dynamic("replica.alter.log.dirs.io.max.bytes.per.second", Long, AtLeast(0), Some("9223372036854775807"), false, Stored(Replication)),
    dynamic("sasl.enabled.mechanisms", List, Any, Some("GSSAPI"), true, Static),
    dynamic("sasl.jaas.config", Password, Any, None, true, Static),
    dynamic("sasl.kerberos.kinit.cmd", Str, Any, Some("/usr/bin/kinit"), true, Stored(Kerberos)),
    dynamic("sasl.kerberos.min.time.before.relogin", Long, Any, Some("60000"), true, Stored(Kerberos)),
    dynamic("sasl.kerberos.principal.to.local.rules", List, Any, Some("DEFAULT"), true, Stored(Kerberos)),
    dynamic("sasl.kerberos.service.name", Str, Any, None, true, Stored(Kerberos)),
    dynamic("sasl.kerberos.ticket.renew.jitter", Double, Any, Some("0.05"), true, Stored(Kerberos)),
    dynamic("sasl.kerberos.ticket.renew.window.factor", Double, Any, Some("0.8"), true, Stored(Kerberos)),
    dynamic("sasl.login.refresh.buffer.seconds", Short, Any, Some("300"), true, Stored(Oauth)),
    dynamic("sasl.login.refresh.min.period.seconds", Short, Any, Some("60"), true, Stored(Oauth)),
    dynamic("sasl.login.refresh.window.factor", Double, Any, Some("0.8"), true, Stored(Oauth)),
    dynamic("sasl.login.refresh.window.jitter", Double, Any, Some("0.05"), true, Stored(Oauth)),
    dynamic("sasl.mechanism.inter.broker.protocol", Str, Any, Some("GSSAPI"), true, Static),
    dynamic("share.coordinator.cached.buffer.max.bytes", Int, AtLeast(524288), Some("1048588"), false, Stored(Groups)),
    dynamic("ssl.cipher.suites", List, Any, Some(""), true, Static),
    dynamic("ssl.client.auth", Str, OneOf(&["required", "requested", "none"]), Some("none"), true, Static),
    dynamic("ssl.enabled.protocols", List, Any, Some("TLSv1.2,TLSv1.3"), true, Static),
    dynamic("ssl.endpoint.identification.algorithm", Str, Any, Some("https"), true, Static),
    dynamic("ssl.engine.factory.class", Class, Any, None, true, Static),
    dynamic("ssl.key.password", Password, Any, None, true, Static),
    dynamic("ssl.keymanager.algorithm", Str, Any, Some("SunX509"), true, Static),
    dynamic("ssl.keystore.certificate.chain", Password, Any, None, true, Static),
    dynamic("ssl.keystore.key", Password, Any, None, true, Static),
    dynamic("ssl.keystore.location", Str, Any, None, true, Static),
    dynamic("ssl.keystore.password", Password, Any, None, true, Static),
    dynamic("ssl.keystore.type", Str, Any, Some("JKS"), true, Static),
    dynamic("ssl.protocol", Str, Any, Some("TLSv1.3"), true, Static),
    dynamic("ssl.provider", Str, Any, None, true, Static),
    dynamic("ssl.secure.random.implementation", Str, Any, None, true, Static),
    dynamic("ssl.trustmanager.algorithm", Str, Any, Some("PKIX"), true, Static),
    dynamic("ssl.truststore.certificates", Password, Any, None, true, Static),
    dynamic("ssl.truststore.location", Str, Any, None, true, Static),
    dynamic("ssl.truststore.password", Password, Any, None, true, Static),
    dynamic("ssl.truststore.type", Str, Any, Some("JKS"), true, Static),
    dynamic("transaction.partition.verification.enable", Bool, Any, Some("true"), false, Fixed("true")),
    dynamic("unclean.leader.election.enable", Bool, Any, Some("false"), false, Topic("unclean.leader.election.enable")),
];

/// Kafka 4.4's broker configs that are not dynamic (`DynamicConfig.Broker.nonDynamicProps()`),
/// sorted: changing one is "Cannot update these configs dynamically". A name in neither list is
/// a custom config, which Kafka stores and ignores.
#[rustfmt::skip]
pub const KAFKA_STATIC_CONFIGS: &[&str] = &[
    "add.partitions.to.txn.retry.backoff.max.ms", "add.partitions.to.txn.retry.backoff.ms", "advertised.listeners",
    "alter.config.policy.class.name", "alter.log.dirs.replication.quota.window.num",
    "alter.log.dirs.replication.quota.window.size.seconds", "authorizer.class.name", "auto.create.topics.enable",
    "auto.leader.rebalance.enable", "broker.heartbeat.interval.ms", "broker.id", "broker.rack",
    "broker.session.timeout.ms", "client.quota.callback.class", "connection.failed.authentication.delay.ms",
    "connections.max.idle.ms", "connections.max.reauth.ms", "controlled.shutdown.enable",
    "controller.listener.names", "controller.performance.always.log.threshold.ms",
    "controller.performance.sample.period.ms", "controller.quorum.append.linger.ms",
    "controller.quorum.auto.join.enable", "controller.quorum.bootstrap.servers",
    "controller.quorum.election.backoff.max.ms", "controller.quorum.election.timeout.ms",
    "controller.quorum.fetch.max.bytes", "controller.quorum.fetch.snapshot.max.bytes",
    "controller.quorum.fetch.timeout.ms", "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms", "controller.quorum.voters", "controller.quota.window.num",
    "controller.quota.window.size.seconds", "controller.socket.timeout.ms", "create.topic.policy.class.name",
    "default.replication.factor", "delegation.token.expiry.check.interval.ms", "delegation.token.expiry.time.ms",
    "delegation.token.max.lifetime.ms", "delegation.token.secret.key",
    "delete.records.purgatory.purge.interval.requests", "delete.topic.enable", "early.start.listeners",
    "fetch.max.bytes", "fetch.purgatory.purge.interval.requests", "group.consumer.assignors",
    "group.consumer.heartbeat.interval.ms", "group.consumer.max.assignment.interval.ms",
    "group.consumer.max.heartbeat.interval.ms", "group.consumer.max.session.timeout.ms", "group.consumer.max.size",
    "group.consumer.migration.policy", "group.consumer.min.assignment.interval.ms",
    "group.consumer.min.heartbeat.interval.ms", "group.consumer.min.session.timeout.ms",
    "group.consumer.regex.refresh.interval.ms", "group.consumer.session.timeout.ms",
    "group.coordinator.append.linger.ms", "group.coordinator.background.threads",
    "group.coordinator.rebalance.protocols", "group.coordinator.threads", "group.initial.rebalance.delay.ms",
    "group.max.session.timeout.ms", "group.max.size", "group.min.session.timeout.ms", "group.share.assignors",
    "group.share.delivery.count.limit", "group.share.dlq.manager.class.name", "group.share.heartbeat.interval.ms",
    "group.share.initialize.retry.interval.ms", "group.share.max.assignment.interval.ms",
    "group.share.max.delivery.count.limit", "group.share.max.heartbeat.interval.ms",
    "group.share.max.partition.max.record.locks", "group.share.max.record.lock.duration.ms",
    "group.share.max.session.timeout.ms", "group.share.max.share.sessions", "group.share.max.size",
    "group.share.min.assignment.interval.ms", "group.share.min.delivery.count.limit",
    "group.share.min.heartbeat.interval.ms", "group.share.min.partition.max.record.locks",
    "group.share.min.record.lock.duration.ms", "group.share.min.session.timeout.ms",
    "group.share.partition.max.record.locks", "group.share.persister.class.name",
    "group.share.record.lock.duration.ms", "group.share.session.timeout.ms",
    "group.streams.acceptable.recovery.lag", "group.streams.assignors", "group.streams.heartbeat.interval.ms",
    "group.streams.initial.rebalance.delay.ms", "group.streams.max.assignment.interval.ms",
    "group.streams.max.heartbeat.interval.ms", "group.streams.max.session.timeout.ms", "group.streams.max.size",
    "group.streams.max.standby.replicas", "group.streams.max.warmup.replicas",
    "group.streams.min.assignment.interval.ms", "group.streams.min.heartbeat.interval.ms",
    "group.streams.min.session.timeout.ms", "group.streams.min.task.offset.interval.ms",
    "group.streams.num.standby.replicas", "group.streams.num.warmup.replicas",
    "group.streams.rack.aware.assignment.tags", "group.streams.session.timeout.ms",
    "group.streams.task.offset.interval.ms", "group.streams.topology.description.plugin.class",
    "initial.broker.registration.timeout.ms", "inter.broker.listener.name", "internal.metadata.delete.delay.millis",
    "internal.metadata.log.segment.bytes", "internal.metadata.max.batch.size.in.bytes",
    "kafka.metrics.polling.interval.secs", "kafka.metrics.reporters", "leader.imbalance.check.interval.seconds",
    "log.cleaner.enable", "log.dir", "log.dir.failure.timeout.ms", "log.dirs",
    "log.flush.offset.checkpoint.interval.ms", "log.flush.scheduler.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms", "log.initial.task.delay.ms", "log.retention.check.interval.ms",
    "log.retention.hours", "log.retention.minutes", "log.roll.hours", "log.roll.jitter.hours",
    "max.incremental.fetch.session.cache.slots", "max.request.partition.size.limit", "metadata.log.dir",
    "metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
    "metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.max.idle.interval.ms",
    "metadata.max.retention.bytes", "metadata.max.retention.ms", "metrics.num.samples", "metrics.recording.level",
    "metrics.sample.window.ms", "node.id", "num.partitions", "num.replica.alter.log.dirs.threads",
    "offset.metadata.max.bytes", "offsets.commit.timeout.ms", "offsets.load.buffer.size",
    "offsets.retention.check.interval.ms", "offsets.retention.minutes", "offsets.topic.compression.codec",
    "offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
    "process.roles", "producer.id.expiration.check.interval.ms", "producer.purgatory.purge.interval.requests",
    "queued.max.request.bytes", "queued.max.requests", "quota.window.num", "quota.window.size.seconds",
    "remote.log.index.file.cache.ttl.ms", "remote.log.manager.copy.quota.window.num",
    "remote.log.manager.copy.quota.window.size.seconds", "remote.log.manager.fetch.quota.window.num",
    "remote.log.manager.fetch.quota.window.size.seconds", "remote.log.manager.task.interval.ms",
    "remote.log.manager.task.retry.backoff.max.ms", "remote.log.manager.task.retry.backoff.ms",
    "remote.log.manager.task.retry.jitter", "remote.log.manager.thread.pool.size",
    "remote.log.metadata.custom.metadata.max.bytes", "remote.log.metadata.manager.class.name",
    "remote.log.metadata.manager.class.path", "remote.log.metadata.manager.impl.prefix",
    "remote.log.metadata.manager.listener.name", "remote.log.reader.max.pending.tasks",
    "remote.log.storage.manager.class.name", "remote.log.storage.manager.class.path",
    "remote.log.storage.manager.impl.prefix", "remote.log.storage.system.enable", "replica.fetch.backoff.ms",
    "replica.fetch.max.bytes", "replica.fetch.min.bytes", "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms", "replica.high.watermark.checkpoint.interval.ms", "replica.lag.time.max.ms",
    "replica.selector.class", "replica.socket.receive.buffer.bytes", "replica.socket.timeout.ms",
    "replication.quota.window.num", "replication.quota.window.size.seconds", "request.timeout.ms",
    "sasl.client.callback.handler.class", "sasl.login.callback.handler.class", "sasl.login.class",
    "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms", "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms", "sasl.mechanism.controller.protocol",
    "sasl.oauthbearer.allow.unverified.audience", "sasl.oauthbearer.allow.unverified.issuer",
    "sasl.oauthbearer.assertion.algorithm", "sasl.oauthbearer.assertion.claim.aud",
    "sasl.oauthbearer.assertion.claim.exp.seconds", "sasl.oauthbearer.assertion.claim.iss",
    "sasl.oauthbearer.assertion.claim.jti.include", "sasl.oauthbearer.assertion.claim.nbf.seconds",
    "sasl.oauthbearer.assertion.claim.sub", "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file", "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.template.file", "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret", "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwt.retriever.class", "sasl.oauthbearer.jwt.validator.class", "sasl.oauthbearer.scope",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.token.endpoint.url",
    "sasl.server.callback.handler.class", "sasl.server.max.receive.size", "security.inter.broker.protocol",
    "security.providers", "server.max.startup.time.ms", "share.coordinator.append.linger.ms",
    "share.coordinator.cold.partition.snapshot.interval.ms", "share.coordinator.load.buffer.size",
    "share.coordinator.snapshot.update.records.per.snapshot", "share.coordinator.state.topic.compression.codec",
    "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.prune.interval.ms", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.segment.bytes", "share.coordinator.threads",
    "share.coordinator.write.timeout.ms", "share.fetch.purgatory.purge.interval.requests",
    "socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms", "socket.listen.backlog.size",
    "socket.receive.buffer.bytes", "socket.request.max.bytes", "socket.send.buffer.bytes", "ssl.allow.dn.changes",
    "ssl.allow.san.changes", "ssl.principal.mapping.rules", "telemetry.max.bytes",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms", "transaction.max.timeout.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms", "transaction.state.log.load.buffer.size",
    "transaction.state.log.min.isr", "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor", "transaction.state.log.segment.bytes",
    "transaction.two.phase.commit.enable", "transactional.id.expiration.ms", "unclean.leader.election.interval.ms",
    "unstable.api.versions.enable", "unstable.feature.versions.enable",
];

/// The dynamic config `name`, if Kafka has one.
pub fn find(name: &str) -> Option<&'static DynamicDef> {
    DYNAMIC_CONFIGS.binary_search_by(|d| d.name.cmp(name)).ok().map(|i| &DYNAMIC_CONFIGS[i])
}

/// The dynamic broker config whose value defaults topic config `topic`.
pub fn for_topic(topic: &str) -> Option<&'static DynamicDef> {
    DYNAMIC_CONFIGS.iter().find(|d| matches!(d.effect, Effect::Topic(t) if t == topic))
}

/// A Kafka broker config that cannot change at runtime.
pub fn is_kafka_static(name: &str) -> bool {
    KAFKA_STATIC_CONFIGS.binary_search(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::configs::topic::table as topic_table;

    #[test]
    fn the_tables_are_kafkas_sorted_and_disjoint() {
        assert_eq!(DYNAMIC_CONFIGS.len(), 110);
        assert_eq!(KAFKA_STATIC_CONFIGS.len(), 272);
        assert!(DYNAMIC_CONFIGS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(KAFKA_STATIC_CONFIGS.windows(2).all(|w| w[0] < w[1]));
        assert!(DYNAMIC_CONFIGS.iter().all(|d| !is_kafka_static(d.name)));
    }

    #[test]
    fn every_topic_effect_names_a_topic_config_once() {
        for d in DYNAMIC_CONFIGS {
            if let Effect::Topic(t) = d.effect {
                assert!(topic_table::find(t).is_some(), "{} -> {t}", d.name);
                assert_eq!(for_topic(t).map(|x| x.name), Some(d.name));
            }
        }
    }
}
