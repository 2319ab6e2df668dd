// kafkago: segmentio/kafka-go against a Kafka-compatible broker, as a black box.
//
//	kafkago <host:port> <scenario>
//
// Scenarios: admin, produce, group, records, conn, listoffsets-dup. Each prints one line
// "RESULT {json}" on stdout with what it observed (tests/interop/python/test_kafkago.py
// asserts on it) and logs progress on stderr. A scenario records what the broker answered
// instead of stopping at the first surprise, so that one run shows every divergence.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
)

var (
	addr   string
	out    = map[string]any{}
	suffix = fmt.Sprintf("%d-%04d", time.Now().UnixNano()%1_000_000_000, rand.Intn(10000))
)

func set(k string, v any) {
	out[k] = v
	logf("%s", k)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kafkago <host:port> <admin|produce|group|records|conn|listoffsets-dup>")
		os.Exit(2)
	}
	addr = os.Args[1]
	scenario := os.Args[2]
	started := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				set("fatal", fmt.Sprint(r))
			}
		}()
		switch scenario {
		case "admin":
			runAdmin()
		case "produce":
			runProduce()
		case "group":
			runGroup()
		case "records":
			runRecords()
		case "conn":
			runConn()
		case "listoffsets-dup":
			runListOffsetsDuplicate()
		default:
			panic("unknown scenario " + scenario)
		}
	}()
	set("elapsed_s", time.Since(started).Seconds())
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "json:", err)
		os.Exit(1)
	}
	fmt.Println("RESULT " + string(b))
}

// ---------------------------------------------------------------------------- helpers

// code is the Kafka error code in err: 0 for nil, the code of a kafka.Error (also inside
// kafka.WriteErrors), -2 for kafka-go's own client-side MessageTooLargeError (no request
// sent), -1000 for any other error.
func code(err error) int {
	if err == nil {
		return 0
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return -2
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil {
				return code(e)
			}
		}
		return 0
	}
	var ke kafka.Error
	if errors.As(err, &ke) {
		return int(ke)
	}
	return -1000
}

func errStr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func must(err error, what string) {
	if err != nil {
		panic(what + ": " + err.Error())
	}
}

func ctxT(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return ctx
}

// newClient has its own Transport, so its metadata is fetched afresh (kafka-go's Transport
// answers Metadata from a cache refreshed every 6 s).
func newClient() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: 15 * time.Second,
		Transport: &kafka.Transport{ClientID: "kaas-kafkago"}}
}

func createTopic(c *kafka.Client, name string, partitions int, configs map[string]string) error {
	var entries []kafka.ConfigEntry
	for k, v := range configs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	r, err := c.CreateTopics(ctxT(20*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: entries}},
	})
	if err != nil {
		return err
	}
	if e := r.Errors[name]; e != nil {
		return e
	}
	return waitTopic(name, partitions)
}

// topicMeta is what a fresh Metadata request says of one topic.
func topicMeta(name string) (kafka.Topic, *kafka.MetadataResponse, error) {
	md, err := newClient().Metadata(ctxT(10*time.Second), &kafka.MetadataRequest{Topics: []string{name}})
	if err != nil {
		return kafka.Topic{}, nil, err
	}
	for _, t := range md.Topics {
		if t.Name == name {
			return t, md, nil
		}
	}
	return kafka.Topic{Name: name, Error: kafka.UnknownTopicOrPartition}, md, nil
}

// waitGone reports whether the topic's Metadata says UNKNOWN_TOPIC_OR_PARTITION within 5 s.
func waitGone(topic string) bool {
	for i := 0; i < 50; i++ {
		t, _, err := topicMeta(topic)
		if err == nil && code(t.Error) == int(kafka.UnknownTopicOrPartition) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func waitTopic(name string, partitions int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		t, _, err := topicMeta(name)
		if err == nil && t.Error == nil && len(t.Partitions) == partitions {
			ok := true
			for _, p := range t.Partitions {
				if p.Error != nil || p.Leader.Host == "" {
					ok = false
				}
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not ready with %d partitions: %v %v", name, partitions, t, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func endOffsets(topic string, partitions int, iso kafka.IsolationLevel) (map[int]int64, map[int]int64, error) {
	var reqs []kafka.OffsetRequest
	for p := 0; p < partitions; p++ {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	r, err := newClient().ListOffsets(ctxT(10*time.Second), &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{topic: reqs}, IsolationLevel: iso})
	if err != nil {
		return nil, nil, err
	}
	first, last := map[int]int64{}, map[int]int64{}
	for _, p := range r.Topics[topic] {
		if p.Error != nil {
			return nil, nil, fmt.Errorf("partition %d: %w", p.Partition, p.Error)
		}
		first[p.Partition], last[p.Partition] = p.FirstOffset, p.LastOffset
	}
	return first, last, nil
}

func newWriter(topic string, codec compress.Compression) *kafka.Writer {
	return &kafka.Writer{
		Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchSize: 200, BatchTimeout: 5 * time.Millisecond, Compression: codec,
		MaxAttempts: 5, WriteBackoffMin: 50 * time.Millisecond, WriteBackoffMax: 500 * time.Millisecond,
		Transport: &kafka.Transport{ClientID: "kaas-kafkago-writer"},
	}
}

// toPartition sends each message to its Message.Partition.
var toPartition = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int { return m.Partition })

// readPartition reads [0, end) of one partition with a kafka.Reader without a group.
func readPartition(topic string, partition int, from, end int64, iso kafka.IsolationLevel) ([]kafka.Message, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, Topic: topic, Partition: partition, MinBytes: 1, MaxBytes: 10 << 20,
		MaxWait: 250 * time.Millisecond, IsolationLevel: iso, MaxAttempts: 3,
	})
	defer r.Close()
	var msgs []kafka.Message
	if from >= end {
		return nil, nil
	}
	if err := r.SetOffset(from); err != nil {
		return nil, err
	}
	ctx := ctxT(30 * time.Second)
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return msgs, fmt.Errorf("after %d messages: %w", len(msgs), err)
		}
		msgs = append(msgs, m)
		if m.Offset >= end-1 {
			return msgs, nil
		}
	}
}

// fetched is one record as kafka.Client.Fetch (the protocol-level decoder) gives it: there a
// null key or value is nil and an empty one is a zero-length non-nil Bytes.
type fetched struct {
	Offset   int64
	TimeMs   int64
	Key      []byte
	Value    []byte
	KeyNil   bool
	ValueNil bool
	Headers  []protocol.Header
}

type fetchedBatch struct {
	BaseOffset  int64
	Codec       int
	LeaderEpoch int32
	Records     int
}

func readBytes(b protocol.Bytes) ([]byte, bool) {
	if b == nil {
		return nil, true
	}
	defer b.Close()
	v, err := io.ReadAll(b)
	must(err, "read record bytes")
	if v == nil {
		v = []byte{}
	}
	return v, false
}

// fetchAll reads [from, end) of one partition with kafka.Client.Fetch.
func fetchAll(topic string, partition int, from, end int64, iso kafka.IsolationLevel) ([]fetched, []fetchedBatch, *kafka.FetchResponse, error) {
	c := newClient()
	var recs []fetched
	var batches []fetchedBatch
	var last *kafka.FetchResponse
	off := from
	for empty := 0; off < end; {
		resp, err := c.Fetch(ctxT(10*time.Second), &kafka.FetchRequest{Topic: topic, Partition: partition,
			Offset: off, MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 300 * time.Millisecond, IsolationLevel: iso})
		if err != nil {
			return recs, batches, last, err
		}
		last = resp
		if resp.Error != nil {
			return recs, batches, last, resp.Error
		}
		var readers []protocol.RecordReader
		if s, ok := resp.Records.(*protocol.RecordStream); ok {
			readers = s.Records
		} else {
			readers = []protocol.RecordReader{resp.Records}
		}
		got := 0
		for _, rr := range readers {
			fb := fetchedBatch{BaseOffset: -1, Codec: -1}
			if b, ok := rr.(*protocol.RecordBatch); ok {
				fb = fetchedBatch{BaseOffset: b.BaseOffset, Codec: int(b.Attributes.Compression()), LeaderEpoch: b.PartitionLeaderEpoch}
			}
			for {
				r, err := rr.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return recs, batches, last, err
				}
				fb.Records++
				f := fetched{Offset: r.Offset, TimeMs: r.Time.UnixMilli(), Headers: r.Headers}
				f.Key, f.KeyNil = readBytes(r.Key)
				f.Value, f.ValueNil = readBytes(r.Value)
				if r.Offset >= off && r.Offset < end {
					recs = append(recs, f)
					got++
					off = r.Offset + 1
				}
			}
			batches = append(batches, fb)
		}
		if got == 0 {
			if empty++; empty > 20 {
				return recs, batches, last, fmt.Errorf("no records at offset %d (high watermark %d)", off, resp.HighWatermark)
			}
		}
	}
	return recs, batches, last, nil
}

// rawListOffsets sends one ListOffsets v5 request as written (kafka.Client splits it into
// one request per partition and timestamp) with kafka-go's protocol package; it returns each
// partition entry of the answer as [partition, error code, offset, timestamp].
func rawListOffsets(topic string, parts []listoffsets.RequestPartition) ([][4]int64, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	m, err := protocol.RoundTrip(nc, 5, 1, "kaas-kafkago-raw", &listoffsets.Request{
		ReplicaID: -1, Topics: []listoffsets.RequestTopic{{Topic: topic, Partitions: parts}}})
	if err != nil {
		return nil, err
	}
	var entries [][4]int64
	for _, t := range m.(*listoffsets.Response).Topics {
		for _, p := range t.Partitions {
			entries = append(entries, [4]int64{int64(p.Partition), int64(p.ErrorCode), p.Offset, p.Timestamp})
		}
	}
	return entries, nil
}
