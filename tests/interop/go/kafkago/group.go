// Scenario "group": kafka.Reader with a GroupID (join, rebalance, commits) and the group
// requests ListGroups, DescribeGroups, DeleteGroups, OffsetFetch, OffsetCommit, OffsetDelete.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

type delivery struct {
	reader    string
	partition int
	offset    int64
	value     string
	at        time.Time
}

type groupRun struct {
	mu          sync.Mutex
	deliveries  []delivery
	readErrors  map[string]int
	lastErrText map[string]string
}

func (g *groupRun) consume(ctx context.Context, name string, r *kafka.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			g.mu.Lock()
			g.readErrors[name]++
			g.lastErrText[name] = err.Error()
			g.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		g.mu.Lock()
		g.deliveries = append(g.deliveries, delivery{name, m.Partition, m.Offset, string(m.Value), time.Now()})
		g.mu.Unlock()
	}
}

func (g *groupRun) snapshot() []delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]delivery(nil), g.deliveries...)
}

func groupReader(topic, group, name string, commitInterval time.Duration) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, GroupID: group, Topic: topic,
		Dialer:   &kafka.Dialer{ClientID: "kgo-" + name, Timeout: 10 * time.Second},
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 250 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
		JoinGroupBackoff: 250 * time.Millisecond, ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 250 * time.Millisecond,
		StartOffset: kafka.FirstOffset, CommitInterval: commitInterval,
		ErrorLogger: kafka.LoggerFunc(func(f string, a ...any) { logf("["+name+"] "+f, a...) }),
	})
}

type groupView struct {
	State    string
	Error    int
	Members  int
	Assigned map[string][]int // client id -> partitions of the topic
	Topics   map[string][]string
	Hosts    []string
}

func describeGroup(group, topic string) (groupView, error) {
	r, err := newClient().DescribeGroups(ctxT(10*time.Second), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return groupView{}, err
	}
	if len(r.Groups) != 1 {
		return groupView{}, fmt.Errorf("%d groups described", len(r.Groups))
	}
	g := r.Groups[0]
	v := groupView{State: g.GroupState, Error: code(g.Error), Members: len(g.Members), Assigned: map[string][]int{}, Topics: map[string][]string{}}
	for _, m := range g.Members {
		var ps []int
		for _, t := range m.MemberAssignments.Topics {
			if t.Topic == topic {
				ps = append(ps, t.Partitions...)
			}
		}
		sort.Ints(ps)
		v.Assigned[m.ClientID] = ps
		v.Topics[m.ClientID] = m.MemberMetadata.Topics
		v.Hosts = append(v.Hosts, m.ClientHost)
	}
	return v, nil
}

// waitStable waits for the group to be Stable with `members` members that share all
// `partitions` partitions.
func waitStable(group, topic string, members, partitions int, timeout time.Duration) (groupView, error) {
	deadline := time.Now().Add(timeout)
	for {
		v, err := describeGroup(group, topic)
		if err == nil && v.State == "Stable" && v.Members == members {
			seen := map[int]bool{}
			for _, ps := range v.Assigned {
				for _, p := range ps {
					seen[p] = true
				}
			}
			if len(seen) == partitions {
				return v, nil
			}
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("group not Stable with %d members after %s: %+v (%v)", members, timeout, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func committed(group, topic string, partitions int, all bool) (map[int]int64, error) {
	req := &kafka.OffsetFetchRequest{GroupID: group}
	if !all {
		var ps []int
		for p := 0; p < partitions; p++ {
			ps = append(ps, p)
		}
		req.Topics = map[string][]int{topic: ps}
	}
	r, err := newClient().OffsetFetch(ctxT(10*time.Second), req)
	if err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, r.Error
	}
	m := map[int]int64{}
	for _, p := range r.Topics[topic] {
		if p.Error != nil {
			return m, fmt.Errorf("partition %d: %w", p.Partition, p.Error)
		}
		m[p.Partition] = p.CommittedOffset
	}
	return m, nil
}

func sameOffsets(a, b map[int]int64, partitions int) bool {
	for p := 0; p < partitions; p++ {
		if a[p] != b[p] {
			return false
		}
	}
	return true
}

func writeGroupRecords(topic string, from, n int) error {
	w := newWriter(topic, compress.Snappy)
	defer w.Close()
	var msgs []kafka.Message
	for i := from; i < from+n; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("g%d", i%50)), Value: []byte(fmt.Sprintf("rec-%05d", i))})
	}
	return w.WriteMessages(ctxT(30*time.Second), msgs...)
}

func tally(ds []delivery, from, to int) (distinct, dupes, outside int, perReader map[string]int) {
	perReader = map[string]int{}
	seen := map[string]int{}
	for _, d := range ds {
		i, _ := strconv.Atoi(strings.TrimPrefix(d.value, "rec-"))
		if i < from || i >= to {
			outside++
			continue
		}
		seen[d.value]++
		perReader[d.reader]++
	}
	for _, c := range seen {
		if c > 1 {
			dupes += c - 1
		}
	}
	return len(seen), dupes, outside, perReader
}

func waitDelivered(g *groupRun, from, to int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		distinct, _, _, _ := tally(g.snapshot(), from, to)
		if distinct >= to-from || time.Now().After(deadline) {
			return distinct
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const (
	groupParts = 6
	phase1N    = 1200
	phase2N    = 600
)

func runGroup() {
	c := newClient()
	topic := "kgo-group-" + suffix
	group := "kgo-group-" + suffix
	must(createTopic(c, topic, groupParts, nil), "create topic")

	g := &groupRun{readErrors: map[string]int{}, lastErrText: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wgAB, wgC sync.WaitGroup

	// Phase 1: readers A and B (synchronous commits: ReadMessage commits each record before
	// returning it) form the group, then consume 1,200 records.
	started := time.Now()
	ra := groupReader(topic, group, "A", 0)
	rb := groupReader(topic, group, "B", 0)
	wgAB.Add(2)
	go g.consume(ctx, "A", ra, &wgAB)
	go g.consume(ctx, "B", rb, &wgAB)
	v, err := waitStable(group, topic, 2, groupParts, 30*time.Second)
	set("phase1_stable_error", errStr(err))
	set("phase1_stable_s", time.Since(started).Seconds())
	set("phase1_assignment", v.Assigned)
	must(writeGroupRecords(topic, 0, phase1N), "write phase 1")
	distinct := waitDelivered(g, 0, phase1N, 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	d1, dup1, _, per1 := tally(g.snapshot(), 0, phase1N)
	set("phase1", map[string]any{"distinct": d1, "duplicates": dup1, "per_reader": per1, "waited_distinct": distinct})
	_, end1, err := endOffsets(topic, groupParts, kafka.ReadUncommitted)
	must(err, "end offsets")
	com1, err := committed(group, topic, groupParts, false)
	set("phase1_committed", map[string]any{"error": errStr(err), "committed": com1, "end": end1, "equal": sameOffsets(com1, end1, groupParts)})

	// Reader D, alone in another group, starts at the end of each partition (StartOffset
	// LastOffset: no committed offset, so kafka-go asks ListOffsets for the latest): it must
	// read the records of phase 2 and none of phase 1.
	lateGroup := "kgo-late-" + suffix
	dres := &groupRun{readErrors: map[string]int{}, lastErrText: map[string]string{}}
	rd := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, GroupID: lateGroup, Topic: topic, MaxWait: 250 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second,
		JoinGroupBackoff: 250 * time.Millisecond, StartOffset: kafka.LastOffset, CommitInterval: 200 * time.Millisecond,
		Dialer: &kafka.Dialer{ClientID: "kgo-D", Timeout: 10 * time.Second},
	})
	var wgD sync.WaitGroup
	wgD.Add(1)
	go dres.consume(ctx, "D", rd, &wgD)

	// Phase 2: reader C (commits every 200 ms) joins; the group rebalances to three members.
	// Everything was committed: nobody may read a record of phase 1 again.
	before := len(g.snapshot())
	joinAt := time.Now()
	rc := groupReader(topic, group, "C", 200*time.Millisecond)
	wgC.Add(1)
	go g.consume(ctx, "C", rc, &wgC)
	v, err = waitStable(group, topic, 3, groupParts, 30*time.Second)
	set("phase2_stable_error", errStr(err))
	set("phase2_rebalance_s", time.Since(joinAt).Seconds())
	set("phase2_assignment", v.Assigned)
	set("phase2_member_topics", v.Topics)
	set("phase2_client_hosts", v.Hosts)
	time.Sleep(1500 * time.Millisecond) // the readers resume at their committed offsets
	set("redelivered_after_rebalance", len(g.snapshot())-before)
	_, err = waitStable(lateGroup, topic, 1, groupParts, 20*time.Second)
	set("late_group_stable_error", errStr(err))
	time.Sleep(500 * time.Millisecond) // D has looked its start offsets up
	must(writeGroupRecords(topic, phase1N, phase2N), "write phase 2")
	waitDelivered(g, phase1N, phase1N+phase2N, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	d2, dup2, _, per2 := tally(g.snapshot(), phase1N, phase1N+phase2N)
	dAll, dupAll, _, _ := tally(g.snapshot(), 0, phase1N+phase2N)
	set("phase2", map[string]any{"distinct": d2, "duplicates": dup2, "per_reader": per2})
	set("overall", map[string]any{"distinct": dAll, "duplicates": dupAll, "deliveries": len(g.snapshot())})

	_, end2, err := endOffsets(topic, groupParts, kafka.ReadUncommitted)
	must(err, "end offsets")
	var com2 map[int]int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		com2, err = committed(group, topic, groupParts, false)
		if (err == nil && sameOffsets(com2, end2, groupParts)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	set("phase2_committed", map[string]any{"error": errStr(err), "committed": com2, "end": end2, "equal": sameOffsets(com2, end2, groupParts)})
	waitDelivered(dres, phase1N, phase1N+phase2N, 10*time.Second)
	dD, dupD, outD, _ := tally(dres.snapshot(), phase1N, phase1N+phase2N)
	set("late_reader", map[string]any{"distinct": dD, "duplicates": dupD, "older_records": outD})
	rd.Close()
	wgD.Wait()
	comAll, err := committed(group, topic, groupParts, true)
	set("offset_fetch_all_topics", map[string]any{"error": errStr(err), "committed": comAll, "equal": sameOffsets(comAll, end2, groupParts)})

	// ListGroups, DeleteGroups of a group with members (refused), unknown group's offsets.
	lg, err := c.ListGroups(ctxT(10*time.Second), &kafka.ListGroupsRequest{})
	listed := map[string]any{"error": errStr(err)}
	if err == nil {
		listed["top_error"] = code(lg.Error)
		for _, gr := range lg.Groups {
			if gr.GroupID == group {
				listed["found"] = true
				listed["protocol_type"] = gr.ProtocolType
				listed["coordinator"] = gr.Coordinator
			}
		}
	}
	set("list_groups", listed)
	set("delete_non_empty_group_code", deleteGroup(group))
	unk, err := committed("kgo-no-such-group-"+suffix, topic, groupParts, false)
	set("offset_fetch_unknown_group", map[string]any{"error": errStr(err), "committed": unk})

	// OffsetCommit without membership (generation -1, no member id), as tools and consumers
	// without group management send it: refused while the group has members
	// (UNKNOWN_MEMBER_ID, 25), taken for a group without members, metadata kept.
	set("standalone_commit_active_group_code", commitOffsets(group, topic, map[int]int64{0: 1}))
	simple := "kgo-simple-" + suffix
	set("standalone_commit_code", commitOffsets(simple, topic, map[int]int64{0: 5, 1: 7}))
	sf, err := newClient().OffsetFetch(ctxT(10*time.Second), &kafka.OffsetFetchRequest{GroupID: simple, Topics: map[string][]int{topic: {0, 1, 2}}})
	simpleView := map[string]any{"error": errStr(err)}
	if err == nil {
		for _, p := range sf.Topics[topic] {
			simpleView[strconv.Itoa(p.Partition)] = map[string]any{"offset": p.CommittedOffset, "metadata": p.Metadata, "code": code(p.Error)}
		}
	}
	set("standalone_committed", simpleView)

	// OffsetDelete: refused for a topic the group's members subscribe to
	// (GROUP_SUBSCRIBED_TO_TOPIC, 86), done for the group without members, GROUP_ID_NOT_FOUND
	// (69) for a group that does not exist.
	set("offset_delete_subscribed", offsetDelete(group, topic, 0))
	set("offset_delete_standalone", offsetDelete(simple, topic, 0))
	after, err := committed(simple, topic, 2, false)
	set("offset_delete_standalone_after", map[string]any{"error": errStr(err), "committed": after})
	set("offset_delete_unknown_group", offsetDelete("kgo-no-such-group-"+suffix, topic, 0))

	// C leaves: A and B take its partitions over.
	leaveAt := time.Now()
	cancelC(rc, &wgC)
	v, err = waitStable(group, topic, 2, groupParts, 30*time.Second)
	set("after_leave_stable_error", errStr(err))
	set("after_leave_rebalance_s", time.Since(leaveAt).Seconds())
	set("after_leave_assignment", v.Assigned)

	// Everybody leaves: the group is Empty and keeps its offsets; then it is deleted.
	cancel()
	ra.Close()
	rb.Close()
	wgAB.Wait()
	var empty groupView
	for deadline := time.Now().Add(15 * time.Second); ; {
		empty, err = describeGroup(group, topic)
		if (err == nil && empty.State == "Empty" && empty.Members == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	set("after_close", map[string]any{"error": errStr(err), "state": empty.State, "members": empty.Members})
	com3, err := committed(group, topic, groupParts, false)
	set("after_close_committed", map[string]any{"error": errStr(err), "equal": sameOffsets(com3, end2, groupParts)})
	set("delete_group_code", deleteGroup(group))
	com4, err := committed(group, topic, groupParts, false)
	set("after_delete_committed", map[string]any{"error": errStr(err), "committed": com4})
	dv, err := describeGroup(group, topic)
	set("after_delete_describe", map[string]any{"error": errStr(err), "state": dv.State, "code": dv.Error, "members": dv.Members})
	g.mu.Lock()
	set("read_errors", g.readErrors)
	set("read_error_texts", g.lastErrText)
	g.mu.Unlock()
}

func cancelC(r *kafka.Reader, wg *sync.WaitGroup) {
	r.Close() // LeaveGroup; its consume loop ends with io.EOF
	wg.Wait()
}

func commitOffsets(group, topic string, offsets map[int]int64) int {
	var commits []kafka.OffsetCommit
	for p, o := range offsets {
		commits = append(commits, kafka.OffsetCommit{Partition: p, Offset: o, Metadata: fmt.Sprintf("meta-%d", p)})
	}
	r, err := newClient().OffsetCommit(ctxT(10*time.Second), &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: commits}})
	if err != nil {
		return -1000
	}
	for _, p := range r.Topics[topic] {
		if p.Error != nil {
			return code(p.Error)
		}
	}
	return 0
}

// offsetDelete answers [top-level code, code of the partition].
func offsetDelete(group, topic string, partition int) []int {
	r, err := newClient().OffsetDelete(ctxT(10*time.Second), &kafka.OffsetDeleteRequest{GroupID: group,
		Topics: map[string][]int{topic: {partition}}})
	if err != nil {
		return []int{-1000, -1000}
	}
	pc := -1
	for _, p := range r.Topics[topic] {
		if p.Partition == partition {
			pc = code(p.Error)
		}
	}
	return []int{code(r.Error), pc}
}

func deleteGroup(group string) int {
	r, err := newClient().DeleteGroups(ctxT(10*time.Second), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return -1000
	}
	return code(r.Errors[group])
}
