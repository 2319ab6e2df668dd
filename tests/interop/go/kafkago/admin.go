// Scenario "admin": kafka.Client CreateTopics (and its refusals), Metadata, ListOffsets,
// DescribeConfigs, IncrementalAlterConfigs / AlterConfigs, CreatePartitions, DeleteTopics.

package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

func describeTopicConfigs(c *kafka.Client, topic string, names []string) (map[string]kafka.DescribeConfigResponseConfigEntry, error) {
	r, err := c.DescribeConfigs(ctxT(10*time.Second), &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: names}}})
	if err != nil {
		return nil, err
	}
	if len(r.Resources) != 1 {
		return nil, fmt.Errorf("%d resources in the answer", len(r.Resources))
	}
	if r.Resources[0].Error != nil {
		return nil, r.Resources[0].Error
	}
	m := map[string]kafka.DescribeConfigResponseConfigEntry{}
	for _, e := range r.Resources[0].ConfigEntries {
		m[e.ConfigName] = e
	}
	return m, nil
}

func configView(m map[string]kafka.DescribeConfigResponseConfigEntry, names ...string) map[string]any {
	v := map[string]any{}
	for _, n := range names {
		if e, ok := m[n]; ok {
			v[n] = map[string]any{"value": e.ConfigValue, "source": e.ConfigSource, "read_only": e.ReadOnly}
		}
	}
	return v
}

func runAdmin() {
	c := newClient()
	topic := "kgo-admin-" + suffix

	// ApiVersions as kafka-go sees them (informational).
	if av, err := c.ApiVersions(ctxT(10*time.Second), &kafka.ApiVersionsRequest{}); err == nil {
		vs := map[string][2]int{}
		for _, k := range av.ApiKeys {
			vs[k.ApiName] = [2]int{k.MinVersion, k.MaxVersion}
		}
		set("api_versions", vs)
		set("api_versions_error", code(av.Error))
	} else {
		set("api_versions_error", errStr(err))
	}

	// CreateTopics: 6 partitions with two topic configs, then the refusals Kafka gives.
	err := createTopic(c, topic, 6, map[string]string{"retention.ms": "3600000", "max.message.bytes": "200000"})
	set("create", errStr(err))
	create := func(t kafka.TopicConfig, validateOnly bool) int {
		timeout := 10 * time.Second
		if validateOnly {
			// kafka-go's Transport waits after a successful CreateTopics until Metadata lists
			// the topic, which a validate-only creation never does: the answer is in the
			// response anyway, the wait only ends with the context.
			timeout = 1500 * time.Millisecond
		}
		r, err := newClient().CreateTopics(ctxT(timeout), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{t}, ValidateOnly: validateOnly})
		if err != nil {
			return -1000
		}
		return code(r.Errors[t.Topic])
	}
	set("create_again_code", create(kafka.TopicConfig{Topic: topic, NumPartitions: 6, ReplicationFactor: 1}, false))
	set("create_zero_partitions_code", create(kafka.TopicConfig{Topic: "kgo-zero-" + suffix, NumPartitions: 0, ReplicationFactor: 1}, false))
	set("create_bad_name_code", create(kafka.TopicConfig{Topic: "kgo/bad name", NumPartitions: 1, ReplicationFactor: 1}, false))
	set("create_bad_config_value_code", create(kafka.TopicConfig{Topic: "kgo-badcfg-" + suffix, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "not-a-number"}}}, false))
	set("create_unknown_config_code", create(kafka.TopicConfig{Topic: "kgo-unkcfg-" + suffix, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "no.such.config", ConfigValue: "1"}}}, false))
	validateOnly := "kgo-validate-" + suffix
	set("create_validate_only_code", create(kafka.TopicConfig{Topic: validateOnly, NumPartitions: 3, ReplicationFactor: 1}, true))
	time.Sleep(300 * time.Millisecond)
	vt, _, _ := topicMeta(validateOnly)
	set("validate_only_topic_exists", vt.Error == nil && len(vt.Partitions) > 0)
	for _, t := range []string{"kgo-zero-", "kgo-badcfg-", "kgo-unkcfg-"} {
		tt, _, _ := topicMeta(t + suffix)
		if tt.Error == nil && len(tt.Partitions) > 0 {
			set("refused_topic_created_"+t, true)
		}
	}

	// Metadata: brokers, controller, cluster id, the topic's partitions.
	t, md, err := topicMeta(topic)
	set("metadata_error", errStr(err))
	if md != nil {
		var brokers []string
		for _, b := range md.Brokers {
			brokers = append(brokers, fmt.Sprintf("%d@%s:%d", b.ID, b.Host, b.Port))
		}
		set("metadata_brokers", brokers)
		set("metadata_controller", md.Controller.ID)
		set("metadata_cluster_id", md.ClusterID)
		var parts []map[string]any
		for _, p := range t.Partitions {
			var replicas, isr []int
			for _, b := range p.Replicas {
				replicas = append(replicas, b.ID)
			}
			for _, b := range p.Isr {
				isr = append(isr, b.ID)
			}
			parts = append(parts, map[string]any{"id": p.ID, "leader": fmt.Sprintf("%d@%s:%d", p.Leader.ID, p.Leader.Host, p.Leader.Port),
				"replicas": replicas, "isr": isr, "error": code(p.Error)})
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i]["id"].(int) < parts[j]["id"].(int) })
		set("metadata_partitions", parts)
		set("metadata_topic_internal", t.Internal)
	}
	unknown, _, _ := topicMeta("kgo-never-created-" + suffix)
	set("metadata_unknown_topic_code", code(unknown.Error))

	// ListOffsets on the empty topic, then after writing p+1 records to partition p.
	first, last, err := endOffsets(topic, 6, kafka.ReadUncommitted)
	set("list_offsets_empty", map[string]any{"error": errStr(err), "first": first, "last": last})
	w := newWriter(topic, 0)
	w.Balancer = toPartition
	var msgs []kafka.Message
	for p := 0; p < 6; p++ {
		for i := 0; i <= p; i++ {
			msgs = append(msgs, kafka.Message{Partition: p, Key: []byte(fmt.Sprintf("p%d", p)), Value: []byte(fmt.Sprintf("v%d-%d", p, i))})
		}
	}
	set("write_error", errStr(w.WriteMessages(ctxT(20*time.Second), msgs...)))
	w.Close()
	first, last, err = endOffsets(topic, 6, kafka.ReadUncommitted)
	set("list_offsets_written", map[string]any{"error": errStr(err), "first": first, "last": last})
	_, lastRC, err := endOffsets(topic, 6, kafka.ReadCommitted)
	set("list_offsets_read_committed", map[string]any{"error": errStr(err), "last": lastRC})

	// DescribeConfigs: all of the topic's, a named one, an unknown topic, the broker.
	cfgs, err := describeTopicConfigs(c, topic, nil)
	set("describe_configs_error", errStr(err))
	set("describe_configs_count", len(cfgs))
	set("describe_configs", configView(cfgs, "retention.ms", "max.message.bytes", "cleanup.policy", "compression.type", "segment.bytes"))
	named, err := describeTopicConfigs(c, topic, []string{"retention.ms"})
	set("describe_configs_named", map[string]any{"error": errStr(err), "names": keys(named)})
	_, err = describeTopicConfigs(c, "kgo-never-created-"+suffix, nil)
	set("describe_configs_unknown_topic_code", code(err))
	br, err := c.DescribeConfigs(ctxT(10*time.Second), &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeBroker, ResourceName: "0"}}})
	if err == nil && len(br.Resources) == 1 {
		names := map[string]kafka.DescribeConfigResponseConfigEntry{}
		for _, e := range br.Resources[0].ConfigEntries {
			names[e.ConfigName] = e
		}
		set("describe_broker_configs", map[string]any{"error": code(br.Resources[0].Error), "count": len(names),
			"view": configView(names, "message.max.bytes", "num.partitions", "auto.create.topics.enable")})
	} else {
		set("describe_broker_configs", map[string]any{"error": errStr(err)})
	}

	// IncrementalAlterConfigs sets one config and keeps the others; AlterConfigs replaces the
	// whole set (configs it does not name go back to their defaults).
	ir, err := c.IncrementalAlterConfigs(ctxT(10*time.Second), &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "7200000", ConfigOperation: kafka.ConfigOperationSet}}}}})
	if err == nil && len(ir.Resources) == 1 {
		err = ir.Resources[0].Error
	}
	set("incremental_alter_error", errStr(err))
	cfgs, err = describeTopicConfigs(c, topic, nil)
	set("after_incremental_alter", map[string]any{"error": errStr(err), "configs": configView(cfgs, "retention.ms", "max.message.bytes")})
	ar, err := c.AlterConfigs(ctxT(10*time.Second), &kafka.AlterConfigsRequest{
		Resources: []kafka.AlterConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.AlterConfigRequestConfig{{Name: "retention.ms", Value: "1000000"}}}}})
	if err == nil {
		for _, e := range ar.Errors {
			if e != nil {
				err = e
			}
		}
	}
	set("alter_error", errStr(err))
	cfgs, err = describeTopicConfigs(c, topic, nil)
	set("after_alter", map[string]any{"error": errStr(err), "configs": configView(cfgs, "retention.ms", "max.message.bytes")})

	// CreatePartitions: 6 -> 8; then fewer, the same and an unknown topic are refused.
	createParts := func(name string, count int32) int {
		r, err := newClient().CreatePartitions(ctxT(10*time.Second), &kafka.CreatePartitionsRequest{
			Topics: []kafka.TopicPartitionsConfig{{Name: name, Count: count}}})
		if err != nil {
			return -1000
		}
		return code(r.Errors[name])
	}
	set("create_partitions_code", createParts(topic, 8))
	set("create_partitions_wait", errStr(waitTopic(topic, 8)))
	set("create_partitions_fewer_code", createParts(topic, 4))
	set("create_partitions_same_code", createParts(topic, 8))
	set("create_partitions_unknown_code", createParts("kgo-never-created-"+suffix, 3))
	// A new writer (new Transport, new metadata) writes to partition 7.
	w = newWriter(topic, 0)
	w.Balancer = toPartition
	set("write_new_partition_error", errStr(w.WriteMessages(ctxT(20*time.Second),
		kafka.Message{Partition: 7, Value: []byte("in-7")}, kafka.Message{Partition: 6, Value: []byte("in-6")})))
	w.Close()
	_, last, err = endOffsets(topic, 8, kafka.ReadUncommitted)
	set("list_offsets_after_create_partitions", map[string]any{"error": errStr(err), "last": last})

	// DeleteTopics: the topic goes from Metadata; deleting it again is UNKNOWN_TOPIC_OR_PARTITION.
	dr, err := c.DeleteTopics(ctxT(10*time.Second), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = dr.Errors[topic]
	}
	set("delete_topic_error", errStr(err))
	set("deleted_topic_gone", waitGone(topic))
	dr, err = newClient().DeleteTopics(ctxT(10*time.Second), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = dr.Errors[topic]
	}
	set("delete_again_code", code(err))
	_, _, err = endOffsets(topic, 1, kafka.ReadUncommitted)
	set("list_offsets_deleted_code", code(err))
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
