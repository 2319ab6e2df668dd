// Scenarios "sync" and "async": an idempotent SyncProducer / AsyncProducer into a
// 6-partition topic, read back.

package main

import (
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

func runSync(admin sarama.ClusterAdmin) result {
	n := *records
	if n == 0 {
		n = 2000
	}
	topic := *prefix + "-sync"
	createTopic(admin, topic, 6)
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, idempotentConfig())
	must(err, "NewSyncProducer")
	acked := map[string]rec{}
	var order []string
	msg := func(i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%97)),
			Value: sarama.StringEncoder(fmt.Sprintf("sync-%d", i))}
	}
	// The first 100 one at a time, the rest 100 per SendMessages.
	i := 0
	for ; i < n && i < 100; i++ {
		m := msg(i)
		p, off, err := producer.SendMessage(m)
		must(err, fmt.Sprintf("SendMessage %d", i))
		v := fmt.Sprintf("sync-%d", i)
		acked[v] = rec{p, off, "", v}
		order = append(order, v)
	}
	for i < n {
		var batch []*sarama.ProducerMessage
		for ; i < n && len(batch) < 100; i++ {
			batch = append(batch, msg(i))
		}
		must(producer.SendMessages(batch), "SendMessages")
		for _, m := range batch {
			v := string(m.Value.(sarama.StringEncoder))
			acked[v] = rec{m.Partition, m.Offset, "", v}
			order = append(order, v)
		}
	}
	must(producer.Close(), "SyncProducer.Close")
	parts := partitionList(6)
	ends := endOffsets(admin, topic, parts, sarama.ReadUncommitted)
	read := readPartitions(topic, parts, sarama.ReadUncommitted, ends, nil)
	r := checkReadBack(read, acked, order)
	r["produced"] = n
	r["acked"] = len(acked)
	r["acked_offsets_increase"] = ackedOffsetsIncrease(acked, order)
	r["partitions_used"] = partitionsUsed(acked)
	sum := int64(0)
	for _, e := range ends {
		sum += e
	}
	r["end_offsets_sum"] = sum
	return r
}

// --------------------------------------------------------------------------------- async

func runAsync(admin sarama.ClusterAdmin) result {
	n := *records
	if n == 0 {
		n = 5000
	}
	topic := *prefix + "-async"
	createTopic(admin, topic, 6)
	producer, err := sarama.NewAsyncProducer([]string{*bootstrap}, idempotentConfig())
	must(err, "NewAsyncProducer")
	acked := map[string]rec{}
	order := make([]string, 0, n)
	var errs []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for got := 0; got < n; got++ {
			select {
			case m := <-producer.Successes():
				v := string(m.Value.(sarama.StringEncoder))
				acked[v] = rec{m.Partition, m.Offset, "", v}
			case e := <-producer.Errors():
				errs = append(errs, e.Error())
			}
		}
	}()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("async-%d", i)
		order = append(order, v)
		producer.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%89)),
			Value: sarama.StringEncoder(v)}
	}
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		fatal("AsyncProducer: %d of %d acknowledged after 40s", len(acked), n)
	}
	must(producer.Close(), "AsyncProducer.Close")
	parts := partitionList(6)
	ends := endOffsets(admin, topic, parts, sarama.ReadUncommitted)
	read := readPartitions(topic, parts, sarama.ReadUncommitted, ends, nil)
	r := checkReadBack(read, acked, order)
	r["produced"] = n
	r["acked"] = len(acked)
	r["produce_errors"] = errs
	r["acked_offsets_increase"] = ackedOffsetsIncrease(acked, order)
	r["partitions_used"] = partitionsUsed(acked)
	sum := int64(0)
	for _, e := range ends {
		sum += e
	}
	r["end_offsets_sum"] = sum
	return r
}
