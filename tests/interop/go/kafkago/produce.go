// Scenario "produce": kafka.Writer with each compression codec and acks setting, read back
// with kafka.Reader and kafka.Client.Fetch; auto topic creation, unknown topics.

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

var codecs = []struct {
	name  string
	codec compress.Compression
}{
	{"none", 0}, {"gzip", compress.Gzip}, {"snappy", compress.Snappy}, {"lz4", compress.Lz4}, {"zstd", compress.Zstd},
}

const produceN = 2000

func runProduce() {
	c := newClient()
	results := map[string]any{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cd := range codecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := produceWithCodec(c, cd.name, cd.codec)
			mu.Lock()
			results[cd.name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	set("codecs", results)

	// acks=0 (RequireNone): Kafka sends no Produce response, so kafka-go sends the next
	// request on the same connection without reading one; a broker that answered anyway
	// would hand kafka-go a Produce response for its next request. acks=1 (RequireOne).
	for _, acks := range []struct {
		name string
		acks kafka.RequiredAcks
	}{{"acks0", kafka.RequireNone}, {"acks1", kafka.RequireOne}} {
		set("writer_"+acks.name, writeWithAcks(c, acks.name, acks.acks))
	}

	// One Writer without a Topic: each Message names its own.
	ta, tb := "kgo-multi-a-"+suffix, "kgo-multi-b-"+suffix
	must(createTopic(c, ta, 2, nil), "create "+ta)
	must(createTopic(c, tb, 3, nil), "create "+tb)
	mw := &kafka.Writer{Addr: kafka.TCP(addr), Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond, Transport: &kafka.Transport{}}
	var mmsgs []kafka.Message
	for i := 0; i < 60; i++ {
		t := ta
		if i%3 == 0 {
			t = tb
		}
		mmsgs = append(mmsgs, kafka.Message{Topic: t, Value: []byte(strconv.Itoa(i))})
	}
	werr := mw.WriteMessages(ctxT(20*time.Second), mmsgs...)
	mw.Close()
	_, la, ea := endOffsets(ta, 2, kafka.ReadUncommitted)
	_, lb, eb := endOffsets(tb, 3, kafka.ReadUncommitted)
	set("multi_topic_writer", map[string]any{"error": errStr(werr) + errStr(ea) + errStr(eb),
		"a": la[0] + la[1], "b": lb[0] + lb[1] + lb[2]})

	// A Writer allowed to create its topic writes to a topic that does not exist yet.
	auto := "kgo-auto-" + suffix
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: auto, RequiredAcks: kafka.RequireAll, AllowAutoTopicCreation: true,
		BatchTimeout: 5 * time.Millisecond, MaxAttempts: 10, WriteBackoffMin: 100 * time.Millisecond, Transport: &kafka.Transport{}}
	var msgs []kafka.Message
	for i := 0; i < 20; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(i)), Value: []byte("auto-" + strconv.Itoa(i))})
	}
	set("auto_create_write_error", errStr(w.WriteMessages(ctxT(30*time.Second), msgs...)))
	w.Close()
	t, _, err := topicMeta(auto)
	set("auto_create_topic", map[string]any{"error": errStr(err), "code": code(t.Error), "partitions": len(t.Partitions)})
	_, last, err := endOffsets(auto, len(t.Partitions), kafka.ReadUncommitted)
	var total int64
	for _, v := range last {
		total += v
	}
	set("auto_create_records", map[string]any{"error": errStr(err), "total": total})

	// Without AllowAutoTopicCreation the Writer's Metadata does not create the topic.
	noAuto := "kgo-noauto-" + suffix
	w = &kafka.Writer{Addr: kafka.TCP(addr), Topic: noAuto, RequiredAcks: kafka.RequireAll, MaxAttempts: 2, Transport: &kafka.Transport{}}
	set("no_auto_create_write_code", code(w.WriteMessages(ctxT(20*time.Second), kafka.Message{Value: []byte("x")})))
	w.Close()
	t, _, _ = topicMeta(noAuto)
	set("no_auto_create_topic_code", code(t.Error))

	// A Produce request straight to a partition of a topic that does not exist (no Metadata
	// before it): Kafka answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing (only Metadata
	// auto-creates).
	direct := "kgo-direct-" + suffix
	host, portS, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portS)
	conn, err := (&kafka.Dialer{Timeout: 10 * time.Second}).DialPartition(ctxT(10*time.Second), "tcp", addr,
		kafka.Partition{Topic: direct, ID: 0, Leader: kafka.Broker{Host: host, Port: port, ID: 0}})
	if err == nil {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = conn.WriteMessages(kafka.Message{Value: []byte("nowhere")})
		conn.Close()
		set("direct_produce_unknown_topic_code", code(err))
		set("direct_produce_unknown_topic_error", errStr(err))
	} else {
		set("direct_produce_unknown_topic_error", "dial: "+errStr(err))
	}
	t, _, _ = topicMeta(direct)
	set("direct_produce_topic_code", code(t.Error))
}

func writeWithAcks(c *kafka.Client, name string, acks kafka.RequiredAcks) map[string]any {
	res := map[string]any{}
	topic := "kgo-" + name + "-" + suffix
	if err := createTopic(c, topic, 1, nil); err != nil {
		res["create_error"] = errStr(err)
		return res
	}
	tr := &kafka.Transport{ClientID: "kaas-kafkago-" + name}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: acks, BatchSize: 50,
		BatchTimeout: 5 * time.Millisecond, MaxAttempts: 1, Transport: tr}
	defer w.Close()
	write := func(from, n int) error {
		var msgs []kafka.Message
		for i := from; i < from+n; i++ {
			msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprintf("%s-%d", name, i))})
		}
		return w.WriteMessages(ctxT(20*time.Second), msgs...)
	}
	// The writer's own Transport (the same connection pool) lists the offsets afterwards.
	same := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: tr}
	listed := func() (int64, error) {
		r, err := same.ListOffsets(ctxT(10*time.Second), &kafka.ListOffsetsRequest{
			Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
		if err != nil {
			return -1, err
		}
		for _, p := range r.Topics[topic] {
			return p.LastOffset, p.Error
		}
		return -1, errors.New("no partition in the answer")
	}
	res["write1_error"] = errStr(write(0, 500))
	var end int64
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		end, err = listed()
		if (err == nil && end == 500) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res["after_write1"] = map[string]any{"end": end, "error": errStr(err)}
	res["write2_error"] = errStr(write(500, 300))
	for deadline := time.Now().Add(5 * time.Second); ; {
		end, err = listed()
		if (err == nil && end == 800) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res["after_write2"] = map[string]any{"end": end, "error": errStr(err)}
	msgs, err := readPartition(topic, 0, 0, end, kafka.ReadUncommitted)
	ordered := true
	for i, m := range msgs {
		if string(m.Value) != fmt.Sprintf("%s-%d", name, i) {
			ordered = false
		}
	}
	res["read"] = map[string]any{"count": len(msgs), "in_order": ordered, "error": errStr(err)}
	res["writer_errors"] = w.Stats().Errors
	return res
}

func produceWithCodec(c *kafka.Client, name string, codec compress.Compression) map[string]any {
	res := map[string]any{}
	topic := "kgo-comp-" + name + "-" + suffix
	if err := createTopic(c, topic, 6, nil); err != nil {
		res["create_error"] = errStr(err)
		return res
	}
	w := newWriter(topic, codec)
	defer w.Close()
	var msgs []kafka.Message
	for i := 0; i < produceN; i++ {
		fill := strings.Repeat(string(rune('a'+i%26)), 40+i%160)
		msgs = append(msgs, kafka.Message{
			Key:     []byte(fmt.Sprintf("key-%d", i%97)),
			Value:   []byte(fmt.Sprintf("%s-%06d-%s", name, i, fill)),
			Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.Itoa(i))}, {Key: "codec", Value: []byte(name)}},
		})
	}
	started := time.Now()
	var werr error
	for lo := 0; lo < produceN && werr == nil; lo += 500 {
		werr = w.WriteMessages(ctxT(30*time.Second), msgs[lo:lo+500]...)
	}
	res["write_error"] = errStr(werr)
	res["write_s"] = time.Since(started).Seconds()
	stats := w.Stats()
	res["writer_batches"] = stats.Writes
	res["writer_errors"] = stats.Errors

	_, last, err := endOffsets(topic, 6, kafka.ReadUncommitted)
	if err != nil {
		res["list_offsets_error"] = errStr(err)
		return res
	}
	var total int64
	for _, v := range last {
		total += v
	}
	res["end_offsets_total"] = total

	seen := map[int]int{} // i -> times read
	keyParts := map[string]map[int]bool{}
	mismatches, orderViolations, headerMismatches := 0, 0, 0
	var readErrs []string
	codecsSeen := map[int]int{}
	batches := 0
	for p := 0; p < 6; p++ {
		got, err := readPartition(topic, p, 0, last[p], kafka.ReadUncommitted)
		if err != nil {
			readErrs = append(readErrs, fmt.Sprintf("p%d: %v", p, err))
		}
		prev := -1
		for j, m := range got {
			if m.Offset != int64(j) {
				mismatches++
			}
			parts := strings.SplitN(string(m.Value), "-", 3)
			i, perr := strconv.Atoi(parts[1])
			if perr != nil || i < 0 || i >= produceN || !bytes.Equal(m.Value, msgs[i].Value) || !bytes.Equal(m.Key, msgs[i].Key) {
				mismatches++
				continue
			}
			if len(m.Headers) != 2 || m.Headers[0].Key != "i" || string(m.Headers[0].Value) != strconv.Itoa(i) || string(m.Headers[1].Value) != name {
				headerMismatches++
			}
			seen[i]++
			if i <= prev {
				orderViolations++
			}
			prev = i
			k := string(m.Key)
			if keyParts[k] == nil {
				keyParts[k] = map[int]bool{}
			}
			keyParts[k][m.Partition] = true
		}
		// The stored batches as the protocol-level Fetch returns them.
		_, fbs, _, err := fetchAll(topic, p, 0, last[p], kafka.ReadUncommitted)
		if err != nil {
			readErrs = append(readErrs, fmt.Sprintf("fetch p%d: %v", p, err))
		}
		for _, b := range fbs {
			codecsSeen[b.Codec]++
		}
		batches += len(fbs)
	}
	dupes, missing := 0, 0
	for i := 0; i < produceN; i++ {
		switch {
		case seen[i] == 0:
			missing++
		case seen[i] > 1:
			dupes += seen[i] - 1
		}
	}
	multi := 0
	for _, ps := range keyParts {
		if len(ps) > 1 {
			multi++
		}
	}
	cs := map[string]int{}
	for k, v := range codecsSeen {
		cs[strconv.Itoa(k)] = v
	}
	res["read_errors"] = readErrs
	res["distinct"] = len(seen)
	res["missing"] = missing
	res["duplicates"] = dupes
	res["mismatches"] = mismatches
	res["header_mismatches"] = headerMismatches
	res["order_violations"] = orderViolations
	res["keys_in_several_partitions"] = multi
	res["fetched_batch_codecs"] = cs
	res["fetched_batches"] = batches
	res["expected_codec"] = int(codec)
	return res
}
