// Scenario "ctp": consume-transform-produce, a ConsumerGroup and transactional producers
// with the offsets in the transactions.

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

type ctpHandler struct {
	group      string
	outTopic   string
	admin      sarama.ClusterAdmin
	target     int64
	processed  atomic.Int64
	done       chan struct{}
	doneOnce   sync.Once
	abortOnce  sync.Once
	mu         sync.Mutex
	aborted    int            // records produced in the aborted transaction
	abortCheck map[string]any // group offsets seen right after the abort
	errs       []string
	txns       int
	generation []int32
}

func (h *ctpHandler) fail(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err.Error())
	h.mu.Unlock()
}

func (h *ctpHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	h.generation = append(h.generation, s.GenerationID())
	h.mu.Unlock()
	return nil
}
func (h *ctpHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *ctpHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	c := transactionalConfig(fmt.Sprintf("%s-ctp-%d", *prefix, claim.Partition()))
	c.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, c)
	if err != nil {
		h.fail(fmt.Errorf("NewSyncProducer (ctp %d): %w", claim.Partition(), err))
		return err
	}
	defer producer.Close()
	meta := sarama.NewConsumerGroupMetadataFromSession(s, h.group, nil)
	var batch []*sarama.ConsumerMessage
	// run one transaction with the batch: the transformed records to the same partition of the
	// output topic, the consumed offsets with them.
	run := func(commit bool) error {
		if err := producer.BeginTxn(); err != nil {
			return fmt.Errorf("BeginTxn: %w", err)
		}
		var out []*sarama.ProducerMessage
		for _, m := range batch {
			out = append(out, &sarama.ProducerMessage{Topic: h.outTopic, Partition: m.Partition,
				Key: sarama.ByteEncoder(m.Key), Value: sarama.StringEncoder("out:" + string(m.Value))})
		}
		if err := producer.SendMessages(out); err != nil {
			_ = producer.AbortTxn()
			return fmt.Errorf("SendMessages: %w", err)
		}
		for _, m := range batch {
			if err := producer.AddMessageToTxnWithGroupMetadata(m, meta, nil); err != nil {
				_ = producer.AbortTxn()
				return fmt.Errorf("AddMessageToTxn: %w", err)
			}
		}
		if commit {
			if err := producer.CommitTxn(); err != nil {
				return fmt.Errorf("CommitTxn: %w", err)
			}
		} else if err := producer.AbortTxn(); err != nil {
			return fmt.Errorf("AbortTxn: %w", err)
		}
		h.mu.Lock()
		h.txns++
		h.mu.Unlock()
		return nil
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var err error
		h.abortOnce.Do(func() {
			// The first batch is first aborted (its records and offsets must vanish), then
			// processed again in a transaction that commits.
			if err = run(false); err != nil {
				return
			}
			h.mu.Lock()
			h.aborted = len(batch)
			h.mu.Unlock()
			resp, ferr := h.admin.ListConsumerGroupOffsets(h.group, map[string][]int32{claim.Topic(): {claim.Partition()}})
			check := map[string]any{"partition": claim.Partition(), "error": errString(ferr)}
			if ferr == nil {
				if b := resp.GetBlock(claim.Topic(), claim.Partition()); b != nil {
					check["offset"] = b.Offset
					check["block_error"] = errString(b.Err)
				}
			}
			h.mu.Lock()
			h.abortCheck = check
			h.mu.Unlock()
		})
		if err != nil {
			return err
		}
		if err := run(true); err != nil {
			return err
		}
		if h.processed.Add(int64(len(batch))) >= h.target {
			h.doneOnce.Do(func() { close(h.done) })
		}
		batch = batch[:0]
		return nil
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			batch = append(batch, m)
			if len(batch) >= 100 {
				if err := flush(); err != nil {
					h.fail(fmt.Errorf("partition %d: %w", claim.Partition(), err))
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				h.fail(fmt.Errorf("partition %d: %w", claim.Partition(), err))
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// produceIdempotent writes n records ("<pre>-i") with an idempotent producer; returns the
// acknowledged placement of each and the production order.
func produceIdempotent(topic, pre string, n int) (map[string]rec, []string) {
	producer, err := sarama.NewSyncProducer([]string{*bootstrap}, idempotentConfig())
	must(err, "NewSyncProducer")
	acked := map[string]rec{}
	var order []string
	for i := 0; i < n; {
		var batch []*sarama.ProducerMessage
		for ; i < n && len(batch) < 200; i++ {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%53)),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", pre, i))})
		}
		must(producer.SendMessages(batch), "SendMessages "+topic)
		for _, m := range batch {
			v := string(m.Value.(sarama.StringEncoder))
			acked[v] = rec{m.Partition, m.Offset, "", v}
			order = append(order, v)
		}
	}
	must(producer.Close(), "SyncProducer.Close")
	return acked, order
}

// groupOffsetsVsEnd compares the group's committed offsets with the topic's end offsets.
func groupOffsetsVsEnd(admin sarama.ClusterAdmin, group, topic string, parts []int32, ends map[int32]int64) (map[string]int64, []string) {
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	must(err, "ListConsumerGroupOffsets "+group)
	committed := map[string]int64{}
	var diffs []string
	for _, p := range parts {
		b := resp.GetBlock(topic, p)
		off := int64(-2)
		if b != nil {
			off = b.Offset
			if b.Err != sarama.ErrNoError {
				diffs = append(diffs, fmt.Sprintf("partition %d: error %v", p, b.Err))
			}
		}
		committed[strconv.Itoa(int(p))] = off
		if off != ends[p] {
			diffs = append(diffs, fmt.Sprintf("partition %d: committed %d, end offset %d", p, off, ends[p]))
		}
	}
	return committed, diffs
}

func runCtp(admin sarama.ClusterAdmin) result {
	n := *records
	if n == 0 {
		n = 1200
	}
	in, outTopic := *prefix+"-ctp-in", *prefix+"-ctp-out"
	parts := partitionList(6)
	createTopic(admin, in, 6)
	createTopic(admin, outTopic, 6)
	acked, order := produceIdempotent(in, "in", n)
	inEnds := endOffsets(admin, in, parts, sarama.ReadUncommitted)

	group := *prefix + "-ctp-group"
	c := baseConfig()
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{*bootstrap}, group, c)
	must(err, "NewConsumerGroup")
	h := &ctpHandler{group: group, outTopic: outTopic, admin: admin, target: int64(n), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	groupErrs := make(chan error, 16)
	go func() {
		for e := range cg.Errors() {
			groupErrs <- e
		}
	}()
	consumeDone := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{in}, h); err != nil {
				consumeDone <- err
				return
			}
		}
		consumeDone <- nil
	}()
	r := result{}
	select {
	case <-h.done:
	case err := <-consumeDone:
		fatal("ConsumerGroup.Consume returned early: %v (handler errors %v)", err, h.errs)
	case err := <-groupErrs:
		fatal("ConsumerGroup error: %v (handler errors %v)", err, h.errs)
	case <-time.After(45 * time.Second):
		fatal("consume-transform-produce: %d of %d processed after 45s (handler errors %v)", h.processed.Load(), n, h.errs)
	}
	cancel()
	if err := <-consumeDone; err != nil {
		r["consume_error"] = err.Error()
	}
	must(cg.Close(), "ConsumerGroup.Close")
	h.mu.Lock()
	r["handler_errors"] = h.errs
	r["transactions"] = h.txns
	r["aborted_records"] = h.aborted
	r["after_abort"] = h.abortCheck
	r["generations"] = h.generation
	h.mu.Unlock()
	r["processed"] = h.processed.Load()

	// The group's offsets are those of the committed transactions: the input's end offsets.
	// They become visible once the markers are written, after EndTxn's answer: poll briefly.
	var committed map[string]int64
	var diffs []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		committed, diffs = groupOffsetsVsEnd(admin, group, in, parts, inEnds)
		if len(diffs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	r["committed_offsets"] = committed
	r["offset_differences"] = diffs

	writeSentinels(outTopic, parts)
	rc := readPartitions(outTopic, parts, sarama.ReadCommitted, nil, isSentinel)
	ru := readPartitions(outTopic, parts, sarama.ReadUncommitted, nil, isSentinel)
	r["read_committed"] = outputCheck(rc, acked, order)
	r["read_uncommitted"] = outputCheck(ru, acked, order)
	return r
}

// outputCheck compares the output topic with the input: each input value once as "out:<value>"
// in the input's partition, in the input's order.
func outputCheck(read map[int32][]rec, acked map[string]rec, order []string) result {
	count := map[string]int{}
	total, wrongPartition := 0, 0
	got := map[int32][]string{}
	for p, rs := range read {
		for _, r := range rs {
			if r.Value == "end" {
				continue
			}
			total++
			v := strings.TrimPrefix(r.Value, "out:")
			count[v]++
			if a, ok := acked[v]; !ok || a.Partition != p {
				wrongPartition++
			}
			got[p] = append(got[p], v)
		}
	}
	missing, dupes := 0, 0
	for _, v := range order {
		switch c := count[v]; {
		case c == 0:
			missing++
		case c > 1:
			dupes += c - 1
		}
	}
	// Order per partition, counting only first occurrences.
	ordered := true
	want := map[int32][]string{}
	for _, v := range order {
		want[acked[v].Partition] = append(want[acked[v].Partition], v)
	}
	for p, vs := range want {
		seen := map[string]bool{}
		var firsts []string
		for _, v := range got[p] {
			if !seen[v] {
				seen[v] = true
				firsts = append(firsts, v)
			}
		}
		if strings.Join(firsts, ",") != strings.Join(vs, ",") {
			ordered = false
		}
	}
	return result{"read": total, "distinct": len(count), "missing": missing, "duplicates": dupes,
		"wrong_partition": wrongPartition, "ordered": ordered}
}
