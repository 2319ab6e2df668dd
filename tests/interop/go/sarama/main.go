// Command sarama-interop runs IBM/sarama against a Kafka-compatible broker and prints what it
// saw as one JSON line ("RESULT {...}") for tests/interop/python/test_sarama.py to assert on.
//
//	sarama-interop -bootstrap 127.0.0.1:9092 -version default|max -scenario NAME -prefix P
//
// -version default leaves sarama's Config.Version as NewConfig sets it (what users who never
// set it get); -version max sets sarama.MaxVersion, the newest version constant sarama knows.
//
// Scenarios:
//
//	sync   idempotent SyncProducer into a 6-partition topic, read back
//	async  idempotent AsyncProducer into a 6-partition topic, read back
//	txn    transactional producer: committed, aborted and (while open) pending transactions,
//	       read back read_committed and read_uncommitted
//	lso    ListOffsets read_committed / read_uncommitted right after each EndTxn: the last
//	       stable offset must not pass a transaction whose marker is not visible yet
//	ctp    consume-transform-produce: ConsumerGroup + transactional producers, offsets in the
//	       transactions (one transaction aborted and redone)
//	group  two-member ConsumerGroup, committed offsets, ListConsumerGroups / DescribeConsumerGroups
//	admin  ClusterAdmin: CreateTopic, ListTopics, DescribeTopics, DescribeConfig, CreatePartitions,
//	       DeleteTopic, DescribeCluster
//
// The program only gathers facts (counts, offsets, errors); the pytest decides what is right.
// An error the program cannot go on after is reported as {"fatal": "..."} with exit code 1.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

var (
	bootstrap = flag.String("bootstrap", "127.0.0.1:9092", "broker address")
	version   = flag.String("version", "default", "default (sarama's default Config.Version) or max (sarama.MaxVersion)")
	scenario  = flag.String("scenario", "", "sync|async|txn|lso|ctp|group|admin")
	prefix    = flag.String("prefix", "sarama", "prefix of topic, group and transactional ids")
	records   = flag.Int("records", 0, "records to produce (0: the scenario's default)")
	timeout   = flag.Duration("timeout", 75*time.Second, "the whole run fails after this")
)

type result map[string]any

func fatal(format string, args ...any) {
	emit(result{"fatal": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

func must(err error, what string) {
	if err != nil {
		fatal("%s: %v", what, err)
	}
}

func emit(r result) {
	b, err := json.Marshal(r)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"fatal": %q}`, err.Error()))
	}
	fmt.Println("RESULT " + string(b))
}

func errString(err error) string {
	if err == nil || errors.Is(err, sarama.ErrNoError) {
		return ""
	}
	return err.Error()
}

func baseConfig() *sarama.Config {
	c := sarama.NewConfig()
	switch *version {
	case "default":
	case "max":
		c.Version = sarama.MaxVersion
	default:
		fatal("unknown -version %q", *version)
	}
	c.ClientID = "kaas-sarama-interop"
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	return c
}

func idempotentConfig() *sarama.Config {
	c := baseConfig()
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 5
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	return c
}

func transactionalConfig(id string) *sarama.Config {
	c := idempotentConfig()
	c.Producer.Transaction.ID = id
	c.Producer.Transaction.Timeout = 30 * time.Second
	return c
}

func newAdmin() sarama.ClusterAdmin {
	a, err := sarama.NewClusterAdmin([]string{*bootstrap}, baseConfig())
	must(err, "NewClusterAdmin")
	return a
}

func createTopic(admin sarama.ClusterAdmin, topic string, partitions int32) {
	must(admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false),
		"CreateTopic "+topic)
}

func partitionList(n int32) []int32 {
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

// endOffsets gives each partition's log end offset (isolation ReadUncommitted) or last stable
// offset (ReadCommitted), as ListOffsets answers.
func endOffsets(admin sarama.ClusterAdmin, topic string, parts []int32, iso sarama.IsolationLevel) map[int32]int64 {
	req := map[string]map[int32]int64{topic: {}}
	for _, p := range parts {
		req[topic][p] = sarama.OffsetNewest
	}
	res, err := admin.ListOffsets(req, &sarama.ListOffsetsOptions{IsolationLevel: iso})
	must(err, "ListOffsets "+topic)
	out := map[int32]int64{}
	for _, p := range parts {
		r := res[topic][p]
		if r == nil {
			fatal("ListOffsets %s/%d: no answer", topic, p)
		}
		if r.Err != nil && !errors.Is(r.Err, sarama.ErrNoError) {
			fatal("ListOffsets %s/%d: %v", topic, p, r.Err)
		}
		out[p] = r.Offset
	}
	return out
}

type rec struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// readPartitions consumes every partition from the oldest offset until stop(partition, message)
// says so (or, for stopAt, until the message before the given end offset); a partition whose
// end offset is 0 is not read.
func readPartitions(topic string, parts []int32, iso sarama.IsolationLevel, stopAt map[int32]int64,
	stop func(p int32, m *sarama.ConsumerMessage) bool) map[int32][]rec {
	c := baseConfig()
	c.Consumer.IsolationLevel = iso
	c.Consumer.Return.Errors = true
	consumer, err := sarama.NewConsumer([]string{*bootstrap}, c)
	must(err, "NewConsumer")
	defer consumer.Close()
	var mu sync.Mutex
	out := map[int32][]rec{}
	errs := make(chan error, len(parts))
	var wg sync.WaitGroup
	for _, p := range parts {
		if stopAt != nil && stopAt[p] == 0 {
			continue
		}
		wg.Add(1)
		go func(p int32) {
			defer wg.Done()
			pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
			if err != nil {
				errs <- fmt.Errorf("ConsumePartition %s/%d: %w", topic, p, err)
				return
			}
			defer pc.Close()
			var got []rec
			deadline := time.After(25 * time.Second)
			for {
				select {
				case m := <-pc.Messages():
					got = append(got, rec{m.Partition, m.Offset, string(m.Key), string(m.Value)})
					if (stopAt != nil && m.Offset >= stopAt[p]-1) || (stop != nil && stop(p, m)) {
						mu.Lock()
						out[p] = got
						mu.Unlock()
						return
					}
				case e := <-pc.Errors():
					errs <- fmt.Errorf("consuming %s/%d: %w", topic, p, e)
					return
				case <-deadline:
					errs <- fmt.Errorf("consuming %s/%d (isolation %d): still waiting after 25s with %d records, last %v",
						topic, p, iso, len(got), last(got))
					return
				}
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		fatal("%v", e)
	}
	return out
}

func last(rs []rec) any {
	if len(rs) == 0 {
		return nil
	}
	return rs[len(rs)-1]
}

// checkReadBack compares what was read with what was acknowledged: acked maps value -> (partition,
// offset), order gives the values in the order they were produced.
func checkReadBack(read map[int32][]rec, acked map[string]rec, order []string) result {
	seen := map[string]int{}
	total, dupes, unknown, misplaced := 0, 0, 0, 0
	var problems []string
	for p, rs := range read {
		for _, r := range rs {
			total++
			seen[r.Value]++
			if seen[r.Value] > 1 {
				dupes++
			}
			a, ok := acked[r.Value]
			if !ok {
				unknown++
				continue
			}
			if a.Partition != p || a.Offset != r.Offset {
				misplaced++
				if len(problems) < 5 {
					problems = append(problems, fmt.Sprintf("%s acked at %d/%d read at %d/%d", r.Value, a.Partition, a.Offset, p, r.Offset))
				}
			}
		}
	}
	// Per partition, the values read must be the values produced to it, in production order.
	outOfOrder := 0
	want := map[int32][]string{}
	for _, v := range order {
		a := acked[v]
		want[a.Partition] = append(want[a.Partition], v)
	}
	for p, vs := range want {
		got := read[p]
		for i, v := range vs {
			if i >= len(got) || got[i].Value != v {
				outOfOrder++
				if len(problems) < 10 {
					g := "<nothing>"
					if i < len(got) {
						g = got[i].Value
					}
					problems = append(problems, fmt.Sprintf("partition %d position %d: want %s, read %s", p, i, v, g))
				}
				break
			}
		}
	}
	missing := 0
	for _, v := range order {
		if seen[v] == 0 {
			missing++
		}
	}
	return result{"read": total, "distinct": len(seen), "duplicates": dupes, "missing": missing,
		"unknown": unknown, "misplaced": misplaced, "partitions_out_of_order": outOfOrder, "problems": problems}
}

// ackedOffsetsIncrease: per partition, the acknowledged offsets grow in production order.
func ackedOffsetsIncrease(acked map[string]rec, order []string) bool {
	lastOff := map[int32]int64{}
	for _, v := range order {
		a := acked[v]
		if prev, ok := lastOff[a.Partition]; ok && a.Offset <= prev {
			return false
		}
		lastOff[a.Partition] = a.Offset
	}
	return true
}

func partitionsUsed(acked map[string]rec) int {
	ps := map[int32]bool{}
	for _, a := range acked {
		ps[a.Partition] = true
	}
	return len(ps)
}

func versionInfo(r result) result {
	r["sarama_version"] = baseConfig().Version.String()
	r["scenario"] = *scenario
	return r
}

func main() {
	flag.Parse()
	if os.Getenv("SARAMA_LOG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Ltime|log.Lmicroseconds)
	}
	time.AfterFunc(*timeout, func() { fatal("scenario %s did not finish within %v", *scenario, *timeout) })
	admin := newAdmin()
	started := time.Now()
	var r result
	switch *scenario {
	case "sync":
		r = runSync(admin)
	case "async":
		r = runAsync(admin)
	case "txn":
		r = runTxn(admin)
	case "lso":
		r = runLso(admin)
	case "ctp":
		r = runCtp(admin)
	case "group":
		r = runGroup(admin)
	case "admin":
		r = runAdmin(admin)
	default:
		fatal("unknown -scenario %q", *scenario)
	}
	r["seconds"] = time.Since(started).Seconds()
	_ = admin.Close()
	emit(versionInfo(r))
}
