// Scenarios "txn" (committed, aborted and pending transactions, read back per isolation level)
// and "lso" (ListOffsets right after each EndTxn).

package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// writeSentinels writes "end" to every partition with a plain idempotent producer, so that a
// reader knows where the records before it stop.
func writeSentinels(topic string, parts []int32) {
	c := idempotentConfig()
	c.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	must(err, "NewSyncProducer (sentinels)")
	for _, part := range parts {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder("end")})
		must(err, "sentinel")
	}
	must(p.Close(), "sentinel producer Close")
}

func isSentinel(_ int32, m *sarama.ConsumerMessage) bool { return string(m.Value) == "end" }

// countPrefixes counts the values read by prefix ("c1-", ...), the sentinels apart, and checks
// that the values of each prefix appear once each and in production order per partition.
func countPrefixes(read map[int32][]rec) (map[string]int, int, bool) {
	counts := map[string]int{}
	seen := map[string]bool{}
	dupes := 0
	ordered := true
	for _, rs := range read {
		lastIdx := map[string]int{}
		for _, r := range rs {
			if r.Value == "end" {
				continue
			}
			if seen[r.Value] {
				dupes++
			}
			seen[r.Value] = true
			dash := strings.LastIndexByte(r.Value, '-')
			pre := r.Value[:dash]
			idx, _ := strconv.Atoi(r.Value[dash+1:])
			if prev, ok := lastIdx[pre]; ok && idx <= prev {
				ordered = false
			}
			lastIdx[pre] = idx
			counts[pre]++
		}
	}
	return counts, dupes, ordered
}

func runTxn(admin sarama.ClusterAdmin) result {
	topic := *prefix + "-txn"
	parts := partitionList(3)
	createTopic(admin, topic, 3)
	r := result{}
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, transactionalConfig(*prefix+"-txn-producer"))
	must(err, "NewSyncProducer (transactional)")
	send := func(pre string, n int) []*sarama.ProducerMessage {
		var batch []*sarama.ProducerMessage
		for i := 0; i < n; i++ {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", pre, i))})
		}
		must(producer.SendMessages(batch), "SendMessages "+pre)
		return batch
	}
	// Each transaction writes a marker to every partition it wrote to.
	markers := 0
	touched := func(batch []*sarama.ProducerMessage) {
		ps := map[int32]bool{}
		for _, m := range batch {
			ps[m.Partition] = true
		}
		markers += len(ps)
	}
	must(producer.BeginTxn(), "BeginTxn 1")
	touched(send("c1", 300))
	must(producer.CommitTxn(), "CommitTxn 1")
	r["status_after_commit"] = producer.TxnStatus().String()
	must(producer.BeginTxn(), "BeginTxn 2")
	touched(send("a2", 200))
	must(producer.AbortTxn(), "AbortTxn 2")
	r["status_after_abort"] = producer.TxnStatus().String()

	// A third transaction left open: the last stable offset of each partition it wrote stops at
	// its first record there; the log end offset is past its records.
	must(producer.BeginTxn(), "BeginTxn 3")
	open := send("c3", 30)
	touched(open)
	firstOpen := map[int32]int64{}
	lastOpen := map[int32]int64{}
	for _, m := range open {
		if f, ok := firstOpen[m.Partition]; !ok || m.Offset < f {
			firstOpen[m.Partition] = m.Offset
		}
		if m.Offset > lastOpen[m.Partition] {
			lastOpen[m.Partition] = m.Offset
		}
	}
	lso := endOffsets(admin, topic, parts, sarama.ReadCommitted)
	leo := endOffsets(admin, topic, parts, sarama.ReadUncommitted)
	var openProblems []string
	for _, p := range parts {
		f, ok := firstOpen[p]
		if !ok {
			continue
		}
		if lso[p] != f {
			openProblems = append(openProblems, fmt.Sprintf("partition %d: last stable offset %d, first record of the open transaction at %d", p, lso[p], f))
		}
		if leo[p] != lastOpen[p]+1 {
			openProblems = append(openProblems, fmt.Sprintf("partition %d: log end offset %d, last record of the open transaction at %d", p, leo[p], lastOpen[p]))
		}
	}
	r["open_txn_partitions"] = len(firstOpen)
	r["open_txn_offset_problems"] = openProblems
	must(producer.CommitTxn(), "CommitTxn 3")
	must(producer.Close(), "transactional producer Close")

	// After the commit the log end offsets hold every record and marker, and the last stable
	// offsets have caught up with them. The markers are written after EndTxn is answered, so
	// this polls until both hold (whether the last stable offset may pass a marker that is not
	// visible yet is the lso scenario's question).
	r["expected_log_end_offsets_sum"] = 530 + markers
	var lsoAfter, leoAfter map[int32]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		lsoAfter = endOffsets(admin, topic, parts, sarama.ReadCommitted)
		leoAfter = endOffsets(admin, topic, parts, sarama.ReadUncommitted)
		same, leoSum := true, int64(0)
		for _, p := range parts {
			same = same && lsoAfter[p] == leoAfter[p]
			leoSum += leoAfter[p]
		}
		if (same && leoSum == int64(530+markers)) || time.Now().After(deadline) {
			r["lso_equals_leo_after_commit"] = same
			r["log_end_offsets_sum"] = leoSum
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	writeSentinels(topic, parts)
	rc := readPartitions(topic, parts, sarama.ReadCommitted, nil, isSentinel)
	ru := readPartitions(topic, parts, sarama.ReadUncommitted, nil, isSentinel)
	rcCounts, rcDupes, rcOrdered := countPrefixes(rc)
	ruCounts, ruDupes, ruOrdered := countPrefixes(ru)
	r["read_committed"] = result{"committed": rcCounts["c1"] + rcCounts["c3"], "aborted": rcCounts["a2"],
		"by_txn": rcCounts, "duplicates": rcDupes, "ordered": rcOrdered}
	r["read_uncommitted"] = result{"committed": ruCounts["c1"] + ruCounts["c3"], "aborted": ruCounts["a2"],
		"by_txn": ruCounts, "duplicates": ruDupes, "ordered": ruOrdered}
	return r
}

// ----------------------------------------------------------------------------------- lso

// runLso: transactions of one record per partition, each followed at once (right after EndTxn's
// answer, while the coordinator may still be writing the markers) by ListOffsets read_committed
// then read_uncommitted. Kafka's last stable offset stays at a transaction's first offset until
// the high watermark has passed its marker (ProducerStateManager.firstUnstableOffset counts the
// "unreplicated" transactions whose marker is above the high watermark), so the read_committed
// answer may pass the record only once read_uncommitted shows the marker.
func runLso(admin sarama.ClusterAdmin) result {
	topic := *prefix + "-lso"
	parts := partitionList(3)
	createTopic(admin, topic, 3)
	n := *records
	if n == 0 {
		n = 60
	}
	c := transactionalConfig(*prefix + "-lso-producer")
	c.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	must(err, "NewSyncProducer (transactional)")
	violations, markerPending, markerVisible := 0, 0, 0
	var examples []string
	for t := 0; t < n; t++ {
		must(producer.BeginTxn(), "BeginTxn")
		var batch []*sarama.ProducerMessage
		for _, p := range parts {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: p, Value: sarama.StringEncoder(fmt.Sprintf("t%d", t))})
		}
		must(producer.SendMessages(batch), "SendMessages")
		commit := t%2 == 0
		if commit {
			must(producer.CommitTxn(), "CommitTxn")
		} else {
			must(producer.AbortTxn(), "AbortTxn")
		}
		lso := endOffsets(admin, topic, parts, sarama.ReadCommitted)
		leo := endOffsets(admin, topic, parts, sarama.ReadUncommitted)
		for _, m := range batch {
			marker := m.Offset + 1 // nothing else writes to the topic
			switch {
			case leo[m.Partition] > marker:
				markerVisible++
			case lso[m.Partition] > m.Offset:
				violations++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("txn %d (commit %v) partition %d: record at %d, marker at %d; ListOffsets read_committed %d, read_uncommitted %d",
						t, commit, m.Partition, m.Offset, marker, lso[m.Partition], leo[m.Partition]))
				}
			default:
				markerPending++
			}
		}
	}
	must(producer.Close(), "transactional producer Close")
	return result{"transactions": n, "observations": n * len(parts), "lso_past_invisible_marker": violations,
		"marker_pending_lso_held": markerPending, "marker_visible": markerVisible, "examples": examples}
}
