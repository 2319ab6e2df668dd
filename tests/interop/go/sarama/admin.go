// Scenario "admin": ClusterAdmin CreateTopic, ListTopics, DescribeTopics, DescribeConfig,
// CreatePartitions, DeleteTopic, DescribeCluster.

package main

import (
	"errors"
	"fmt"
	"sort"

	"github.com/IBM/sarama"
)

func runAdmin(admin sarama.ClusterAdmin) result {
	r := result{}
	topic := *prefix + "-admin"
	retention := "3600000"
	must(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false), "CreateTopic")
	r["create_again_error"] = errString(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false))
	r["create_again_is_exists"] = errors.Is(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false), sarama.ErrTopicAlreadyExists)

	topics, err := admin.ListTopics()
	must(err, "ListTopics")
	if d, ok := topics[topic]; ok {
		lt := result{"partitions": d.NumPartitions, "replication_factor": d.ReplicationFactor}
		if v := d.ConfigEntries["retention.ms"]; v != nil {
			lt["retention.ms"] = *v
		}
		r["list_topics"] = lt
	}

	describe := func(t string) result {
		md, err := admin.DescribeTopics([]string{t})
		if err != nil {
			return result{"error": err.Error()}
		}
		if len(md) != 1 {
			return result{"error": fmt.Sprintf("%d topics described", len(md))}
		}
		m := md[0]
		var problems []string
		for _, p := range m.Partitions {
			if p.Err != sarama.ErrNoError || p.Leader < 0 || len(p.Replicas) != 1 || len(p.Isr) != 1 {
				problems = append(problems, fmt.Sprintf("partition %d: err %v leader %d replicas %v isr %v", p.ID, p.Err, p.Leader, p.Replicas, p.Isr))
			}
		}
		return result{"topic_error": errString(m.Err), "topic_error_code": int(m.Err), "name": m.Name,
			"partitions": len(m.Partitions), "partition_problems": problems, "internal": m.IsInternal}
	}
	r["describe_topics"] = describe(topic)

	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	must(err, "DescribeConfig")
	var allNames []string
	for _, e := range entries {
		allNames = append(allNames, e.Name)
	}
	sort.Strings(allNames)
	cfg := result{"entries": len(entries), "names": allNames}
	for _, e := range entries {
		if e.Name == "retention.ms" || e.Name == "cleanup.policy" {
			cfg[e.Name] = result{"value": e.Value, "default": e.Default, "read_only": e.ReadOnly,
				"source": e.Source.String(), "sensitive": e.Sensitive}
		}
	}
	r["describe_config"] = cfg
	// Only the named key.
	some, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}})
	must(err, "DescribeConfig retention.ms")
	var names []string
	for _, e := range some {
		names = append(names, e.Name+"="+e.Value)
	}
	r["describe_config_named"] = names

	must(admin.CreatePartitions(topic, 5, nil, false), "CreatePartitions 5")
	r["after_create_partitions"] = describe(topic)
	shrink := admin.CreatePartitions(topic, 4, nil, false)
	r["shrink_error"] = errString(shrink)
	r["shrink_is_invalid_partitions"] = errors.Is(shrink, sarama.ErrInvalidPartitions)
	// The new partitions take writes.
	c := idempotentConfig()
	c.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	must(err, "NewSyncProducer")
	p, off, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 4, Value: sarama.StringEncoder("x")})
	r["produce_new_partition"] = result{"partition": p, "offset": off, "error": errString(err)}
	must(producer.Close(), "SyncProducer.Close")

	brokers, controller, err := admin.DescribeCluster()
	must(err, "DescribeCluster")
	var addrs []string
	var ids []int32
	for _, b := range brokers {
		addrs = append(addrs, b.Addr())
		ids = append(ids, b.ID())
	}
	r["cluster"] = result{"brokers": addrs, "ids": ids, "controller": controller}

	must(admin.DeleteTopic(topic), "DeleteTopic")
	after, err := admin.ListTopics()
	must(err, "ListTopics after DeleteTopic")
	_, still := after[topic]
	r["listed_after_delete"] = still
	r["describe_after_delete"] = describe(topic)
	delAgain := admin.DeleteTopic(topic)
	r["delete_again_error"] = errString(delAgain)
	r["delete_again_is_unknown"] = errors.Is(delAgain, sarama.ErrUnknownTopicOrPartition)
	return r
}
