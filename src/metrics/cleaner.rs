//! The log cleaner's metrics, named as the JMX exporter names Kafka's `kafka.log:type=LogCleaner`
//! and `type=LogCleanerManager` MBeans where Kafka has one.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Default)]
pub struct CleanerMeter {
    pub bytes_read: Counter,
    pub bytes_written: Counter,
    pub passes: Counter,
    pub errors: Counter,
    pub max_dirty_percent: Gauge,
    pub time_since_last_run_ms: Gauge,
    pub max_buffer_utilization_percent: Gauge,
    pub max_clean_time_secs: Gauge,
    pub max_compaction_delay_secs: Gauge,
}

impl CleanerMeter {
    pub fn register(r: &mut Registry) -> CleanerMeter {
        let m = CleanerMeter::default();
        r.register("kaas_log_cleaner_bytes_read", "Bytes the log cleaner read from segments", m.bytes_read.clone());
        r.register(
            "kaas_log_cleaner_bytes_written",
            "Bytes the log cleaner wrote to cleaned segments",
            m.bytes_written.clone(),
        );
        r.register("kaas_log_cleaner_passes", "Cleaning passes installed", m.passes.clone());
        r.register(
            "kaas_log_cleaner_errors",
            "Cleaning passes that failed (the log is left as it was and cleaned again later)",
            m.errors.clone(),
        );
        r.register(
            "kafka_log_logcleanermanager_max_dirty_percent",
            "Dirty share, in percent, of the dirtiest compacted log at the last selection (max-dirty-percent)",
            m.max_dirty_percent.clone(),
        );
        r.register(
            "kafka_log_logcleanermanager_time_since_last_run_ms",
            "Milliseconds since a cleaner thread last looked for a log to clean (time-since-last-run-ms)",
            m.time_since_last_run_ms.clone(),
        );
        r.register(
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "Key map use, in percent, of the last pass (max-buffer-utilization-percent)",
            m.max_buffer_utilization_percent.clone(),
        );
        r.register(
            "kafka_log_logcleaner_max_clean_time_secs",
            "Seconds the last pass took (max-clean-time-secs)",
            m.max_clean_time_secs.clone(),
        );
        r.register(
            "kafka_log_logcleaner_max_compaction_delay_secs",
            "Seconds past max.compaction.lag.ms of the most overdue log at the last selection (max-compaction-delay-secs)",
            m.max_compaction_delay_secs.clone(),
        );
        m
    }
}
