// Scenario "group": a two-member ConsumerGroup, committed offsets, ListConsumerGroups /
// DescribeConsumerGroups.

package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

type memberHandler struct {
	id        int
	mu        *sync.Mutex
	consumed  map[string][]int // value -> members that consumed it
	perMember map[int]int
	sessions  map[int][]string // member -> "generation:assignment" per session
	total     *atomic.Int64
	target    int64
	done      chan struct{}
	doneOnce  *sync.Once
}

func (h *memberHandler) Setup(s sarama.ConsumerGroupSession) error {
	var ps []string
	for t, parts := range s.Claims() {
		for _, p := range parts {
			ps = append(ps, fmt.Sprintf("%s/%d", t, p))
		}
	}
	sort.Strings(ps)
	h.mu.Lock()
	h.sessions[h.id] = append(h.sessions[h.id], fmt.Sprintf("%d:%s", s.GenerationID(), strings.Join(ps, ",")))
	h.mu.Unlock()
	return nil
}
func (h *memberHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *memberHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.mu.Lock()
			h.consumed[string(m.Value)] = append(h.consumed[string(m.Value)], h.id)
			h.perMember[h.id]++
			h.mu.Unlock()
			s.MarkMessage(m, "")
			if h.total.Add(1) >= h.target {
				h.doneOnce.Do(func() { close(h.done) })
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func describeGroup(admin sarama.ClusterAdmin, group string) (result, *sarama.GroupDescription) {
	ds, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		return result{"error": err.Error()}, nil
	}
	if len(ds) != 1 {
		return result{"error": fmt.Sprintf("%d descriptions", len(ds))}, nil
	}
	d := ds[0]
	var assigned []string
	for _, m := range d.Members {
		a, err := m.GetMemberAssignment()
		if err != nil {
			return result{"error": "member assignment: " + err.Error()}, d
		}
		if a == nil {
			continue
		}
		for t, ps := range a.Topics {
			for _, p := range ps {
				assigned = append(assigned, fmt.Sprintf("%s/%d", t, p))
			}
		}
	}
	sort.Strings(assigned)
	return result{"group": d.GroupId, "error_code": int(d.Err), "state": d.State, "protocol_type": d.ProtocolType,
		"protocol": d.Protocol, "members": len(d.Members), "assigned": assigned}, d
}

func runGroup(admin sarama.ClusterAdmin) result {
	n := *records
	if n == 0 {
		n = 1200
	}
	topic := *prefix + "-group"
	parts := partitionList(6)
	createTopic(admin, topic, 6)
	group := *prefix + "-group"
	var mu sync.Mutex
	var total atomic.Int64
	done := make(chan struct{})
	var doneOnce sync.Once
	consumed := map[string][]int{}
	perMember := map[int]int{}
	sessions := map[int][]string{}
	ctx, cancel := context.WithCancel(context.Background())
	var groups []sarama.ConsumerGroup
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for id := 0; id < 2; id++ {
		c := baseConfig()
		c.ClientID = fmt.Sprintf("kaas-sarama-member-%d", id)
		c.Consumer.Offsets.Initial = sarama.OffsetOldest
		c.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
		c.Consumer.Return.Errors = true
		cg, err := sarama.NewConsumerGroup([]string{*bootstrap}, group, c)
		must(err, "NewConsumerGroup")
		groups = append(groups, cg)
		h := &memberHandler{id: id, mu: &mu, consumed: consumed, perMember: perMember, sessions: sessions,
			total: &total, target: int64(n), done: done, doneOnce: &doneOnce}
		go func() {
			for e := range cg.Errors() {
				errs <- e
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, h); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Produce only once both members share a generation that covers every partition: from
	// then on no rebalance is due, so every record must be consumed exactly once.
	stable := false
	var joined []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		s0, s1 := sessions[0], sessions[1]
		joined = append(append([]string{}, s0...), s1...)
		if len(s0) > 0 && len(s1) > 0 {
			a, b := s0[len(s0)-1], s1[len(s1)-1]
			ga, gb := strings.SplitN(a, ":", 2), strings.SplitN(b, ":", 2)
			if ga[0] == gb[0] && ga[1] != "" && gb[1] != "" &&
				len(strings.Split(ga[1], ","))+len(strings.Split(gb[1], ",")) == len(parts) {
				stable = true
			}
		}
		mu.Unlock()
		if stable {
			break
		}
		select {
		case e := <-errs:
			fatal("consumer group error before the group was stable: %v", e)
		default:
		}
	}
	if !stable {
		fatal("the two members did not share a generation covering %d partitions within 20s: sessions %v", len(parts), joined)
	}
	r := result{}
	acked, order := produceIdempotent(topic, "g", n)
	ends := endOffsets(admin, topic, parts, sarama.ReadUncommitted)
	select {
	case <-done:
	case e := <-errs:
		fatal("consumer group error: %v", e)
	case <-time.After(30 * time.Second):
		fatal("group consumed %d of %d records after 30s", total.Load(), n)
	}
	// Wait for a last auto-commit interval to let stragglers show up as duplicates.
	time.Sleep(300 * time.Millisecond)
	r["describe_while_running"], _ = describeGroup(admin, group)
	listed, err := admin.ListConsumerGroups()
	must(err, "ListConsumerGroups")
	r["listed_protocol_type"], r["listed"] = listed[group], false
	if _, ok := listed[group]; ok {
		r["listed"] = true
	}
	cancel()
	wg.Wait()
	for _, g := range groups {
		must(g.Close(), "ConsumerGroup.Close")
	}
	select {
	case e := <-errs:
		r["group_error"] = e.Error()
	default:
	}
	mu.Lock()
	dupes, missing := 0, 0
	for _, v := range order {
		switch c := len(consumed[v]); {
		case c == 0:
			missing++
		case c > 1:
			dupes += c - 1
		}
	}
	r["consumed"] = total.Load()
	r["distinct"] = len(consumed)
	r["duplicates"] = dupes
	r["missing"] = missing
	r["per_member"] = map[string]int{"0": perMember[0], "1": perMember[1]}
	r["sessions"] = map[string][]string{"0": sessions[0], "1": sessions[1]}
	mu.Unlock()
	r["produced"] = len(acked)
	// Committed offsets: the members commit what they marked when they close.
	committed, diffs := groupOffsetsVsEnd(admin, group, topic, parts, ends)
	r["committed_offsets"] = committed
	r["offset_differences"] = diffs
	r["describe_after_close"], _ = describeGroup(admin, group)
	return r
}
