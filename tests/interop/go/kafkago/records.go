// Scenario "records": headers, timestamps, null versus empty keys and values, ListOffsets by
// time, LogAppendTime and max.message.bytes.

package main

import (
	"bytes"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
)

const maxMessageBytes = 65536

// recordBatchSize is the size of a v2 record batch (61 bytes of header, Kafka's
// batch.sizeInBytes()) of one record with a null key, no headers and a value of n bytes.
func recordBatchSize(n int) int {
	varint := func(v int64) int {
		u := uint64((v << 1) ^ (v >> 63))
		s := 1
		for u >= 0x80 {
			u >>= 7
			s++
		}
		return s
	}
	body := 1 + varint(0) + varint(0) + varint(-1) + varint(int64(n)) + n + varint(0)
	return 61 + varint(int64(body)) + body
}

func runRecords() {
	c := newClient()
	topic := "kgo-records-" + suffix
	must(createTopic(c, topic, 1, map[string]string{"max.message.bytes": strconv.Itoa(maxMessageBytes)}), "create topic")

	t0 := time.UnixMilli(time.Now().Add(-30 * time.Minute).UnixMilli())
	binary := []byte{0, 1, 2, 0, 255, 254, 0}
	sent := []kafka.Message{
		{Key: []byte("k0"), Value: []byte("v0"), Time: t0, Headers: []kafka.Header{
			{Key: "h1", Value: []byte("x")}, {Key: "h1", Value: []byte("y")}, {Key: "empty", Value: []byte{}},
			{Key: "nil", Value: nil}, {Key: "bin", Value: binary}, {Key: "", Value: []byte("empty key")}}},
		{Key: nil, Value: nil, Time: t0.Add(1 * time.Millisecond)},
		{Key: []byte{}, Value: []byte{}, Time: t0.Add(2 * time.Millisecond)},
		{Key: nil, Value: []byte("only value"), Time: t0.Add(1000 * time.Millisecond)},
		{Key: []byte("only key"), Value: nil, Time: t0.Add(2000 * time.Millisecond)},
		{Key: binary, Value: append(binary, binary...), Time: t0.Add(-10 * time.Minute)},
		{Key: []byte("now"), Value: bytes.Repeat([]byte("z"), 1000)},
	}
	w := newWriter(topic, 0)
	w.BatchSize = len(sent)
	w.BatchTimeout = 50 * time.Millisecond
	before := time.Now()
	set("write_error", errStr(w.WriteMessages(ctxT(20*time.Second), sent...)))
	after := time.Now()
	w.Close()
	n := int64(len(sent))

	// Protocol-level Fetch: null and empty stay apart, headers and timestamps as sent.
	recs, batches, resp, err := fetchAll(topic, 0, 0, n, kafka.ReadUncommitted)
	set("fetch_error", errStr(err))
	set("fetch_batches", len(batches))
	var views []map[string]any
	for i, r := range recs {
		v := map[string]any{"offset": r.Offset, "key_nil": r.KeyNil, "value_nil": r.ValueNil,
			"key": string(r.Key), "value_len": len(r.Value), "time_ms": r.TimeMs}
		if i < len(sent) {
			s := sent[i]
			v["key_ok"] = bytes.Equal(r.Key, s.Key) && r.KeyNil == (s.Key == nil)
			v["value_ok"] = bytes.Equal(r.Value, s.Value) && r.ValueNil == (s.Value == nil)
			if s.Time.IsZero() {
				v["time_ok"] = r.TimeMs >= before.UnixMilli() && r.TimeMs <= after.UnixMilli()
			} else {
				v["time_ok"] = r.TimeMs == s.Time.UnixMilli()
			}
			hok := len(r.Headers) == len(s.Headers)
			for j := 0; hok && j < len(s.Headers); j++ {
				hok = r.Headers[j].Key == s.Headers[j].Key && bytes.Equal(r.Headers[j].Value, s.Headers[j].Value) &&
					(r.Headers[j].Value == nil) == (s.Headers[j].Value == nil)
			}
			v["headers_ok"] = hok
		}
		views = append(views, v)
	}
	set("fetched", views)
	if resp != nil {
		set("fetch_offsets", map[string]any{"hwm": resp.HighWatermark, "lso": resp.LastStableOffset, "log_start": resp.LogStartOffset})
	}

	// kafka.Reader without a group, read_uncommitted and read_committed alike.
	readerView := func(iso kafka.IsolationLevel) map[string]any {
		msgs, err := readPartition(topic, 0, 0, n, iso)
		ok := len(msgs) == len(sent)
		for i := 0; ok && i < len(msgs); i++ {
			m, s := msgs[i], sent[i]
			ok = m.Offset == int64(i) && bytes.Equal(m.Key, s.Key) && bytes.Equal(m.Value, s.Value) && len(m.Headers) == len(s.Headers)
			if ok && !s.Time.IsZero() {
				ok = m.Time.UnixMilli() == s.Time.UnixMilli()
			}
			for j := 0; ok && j < len(s.Headers); j++ {
				ok = m.Headers[j].Key == s.Headers[j].Key && bytes.Equal(m.Headers[j].Value, s.Headers[j].Value)
			}
		}
		return map[string]any{"error": errStr(err), "count": len(msgs), "all_equal": ok}
	}
	set("reader_uncommitted", readerView(kafka.ReadUncommitted))
	set("reader_committed", readerView(kafka.ReadCommitted))
	_, lastU, errU := endOffsets(topic, 1, kafka.ReadUncommitted)
	_, lastC, errC := endOffsets(topic, 1, kafka.ReadCommitted)
	set("list_offsets_isolation", map[string]any{"uncommitted": lastU[0], "committed": lastC[0], "errors": errStr(errU) + errStr(errC)})
	_, _, respC, err := fetchAll(topic, 0, n-1, n, kafka.ReadCommitted)
	if respC != nil {
		set("fetch_committed_offsets", map[string]any{"error": errStr(err), "hwm": respC.HighWatermark, "lso": respC.LastStableOffset})
	}

	// ListOffsets by timestamp: the first offset whose timestamp is at or after the target.
	byTime := func(at time.Time) (int64, int) {
		r, err := newClient().ListOffsets(ctxT(10*time.Second), &kafka.ListOffsetsRequest{
			Topics: map[string][]kafka.OffsetRequest{topic: {kafka.TimeOffsetOf(0, at)}}})
		if err != nil {
			return -100, -1000
		}
		for _, p := range r.Topics[topic] {
			if p.Error != nil {
				return -100, code(p.Error)
			}
			for off := range p.Offsets {
				return off, 0
			}
		}
		return -100, -1
	}
	o1, e1 := byTime(t0.Add(500 * time.Millisecond))
	o2, e2 := byTime(t0.Add(-20 * time.Minute))
	o3, e3 := byTime(time.Now().Add(time.Hour))
	set("offsets_by_time", map[string]any{"t0+500ms": o1, "t0-20m": o2, "future": o3, "codes": []int{e1, e2, e3}})
	// The timestamp in the answer is the found record's (kafka.Client hides it: it answers
	// with the requested one); latest and earliest answer -1.
	rawT, err := rawListOffsets(topic, []listoffsets.RequestPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: t0.Add(500 * time.Millisecond).UnixMilli()}})
	set("raw_offsets_by_time", map[string]any{"error": errStr(err), "entries": rawT, "expected_ts": t0.Add(time.Second).UnixMilli()})
	rawE, err := rawListOffsets(topic, []listoffsets.RequestPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -2}})
	rawL, err2 := rawListOffsets(topic, []listoffsets.RequestPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1}})
	set("raw_offsets_special", map[string]any{"error": errStr(err) + errStr(err2), "earliest": rawE, "latest": rawL})
	// The same through kafka.Reader.SetOffsetAt (Conn.ReadOffset, ListOffsets v1).
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MaxWait: 250 * time.Millisecond})
	err = r.SetOffsetAt(ctxT(10*time.Second), t0.Add(500*time.Millisecond))
	m, rerr := r.ReadMessage(ctxT(10 * time.Second))
	r.Close()
	set("reader_set_offset_at", map[string]any{"error": errStr(err) + errStr(rerr), "offset": m.Offset, "value": string(m.Value)})

	// message.timestamp.type=LogAppendTime: Kafka sets the batch's timestamp type and max
	// timestamp to the append time and recomputes the CRC, leaving the records' own timestamps
	// (first timestamp + deltas) as the producer wrote them; kafka-go, which reads the latter
	// and checks the CRC, still sees the producer's times. ListOffsets by time uses the append
	// time.
	lat := "kgo-logappend-" + suffix
	must(createTopic(c, lat, 1, map[string]string{"message.timestamp.type": "LogAppendTime"}), "create "+lat)
	lw := newWriter(lat, 0)
	lw.BatchSize = 2
	lw.BatchTimeout = 50 * time.Millisecond
	beforeLA := time.Now()
	set("log_append_write_error", errStr(lw.WriteMessages(ctxT(20*time.Second),
		kafka.Message{Value: []byte("la-0"), Time: t0}, kafka.Message{Value: []byte("la-1"), Time: t0.Add(time.Second)})))
	afterLA := time.Now()
	lw.Close()
	laRecs, _, _, err := fetchAll(lat, 0, 0, 2, kafka.ReadUncommitted)
	var laTimes []int64
	for _, r := range laRecs {
		laTimes = append(laTimes, r.TimeMs)
	}
	laOff := map[string]any{}
	if r, err := newClient().ListOffsets(ctxT(10*time.Second), &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{lat: {kafka.TimeOffsetOf(0, beforeLA.Add(-time.Minute))}}}); err == nil {
		for _, p := range r.Topics[lat] {
			for off, ts := range p.Offsets {
				laOff = map[string]any{"offset": off, "ts_ms": ts.UnixMilli(), "error": code(p.Error)}
			}
		}
	} else {
		laOff["error"] = errStr(err)
	}
	rawLA, rerrLA := rawListOffsets(lat, []listoffsets.RequestPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: beforeLA.Add(-time.Minute).UnixMilli()}})
	set("log_append_raw_by_time", map[string]any{"error": errStr(rerrLA), "entries": rawLA})
	set("log_append_time", map[string]any{"fetch_error": errStr(err), "times": laTimes,
		"sent": []int64{t0.UnixMilli(), t0.Add(time.Second).UnixMilli()}, "by_time": laOff,
		"append_window": []int64{beforeLA.UnixMilli(), afterLA.UnixMilli()}})

	// max.message.bytes (65,536): a batch of exactly that size is taken, one byte more is
	// MESSAGE_TOO_LARGE (10) from the broker (kafka-go's own limit raised so the request goes).
	atLimit := maxMessageBytes
	for recordBatchSize(atLimit) > maxMessageBytes {
		atLimit--
	}
	big := func(codec compress.Compression, value []byte) (int, string) {
		w := newWriter(topic, codec)
		w.BatchSize, w.BatchBytes, w.MaxAttempts = 1, 16<<20, 1
		defer w.Close()
		err := w.WriteMessages(ctxT(20*time.Second), kafka.Message{Value: value, Time: time.Now()})
		return code(err), errStr(err)
	}
	sizes := map[string]any{"at_limit_value": atLimit, "at_limit_batch": recordBatchSize(atLimit), "over_batch": recordBatchSize(atLimit + 1)}
	cAt, sAt := big(0, bytes.Repeat([]byte("a"), atLimit))
	cOver, sOver := big(0, bytes.Repeat([]byte("b"), atLimit+1))
	cHuge, sHuge := big(0, bytes.Repeat([]byte("c"), 200_000))
	cZip, sZip := big(compress.Gzip, make([]byte, 200_000)) // 200 kB of zeros, a few hundred bytes gzipped
	cAfter, sAfter := big(0, []byte("after"))
	set("max_message", map[string]any{"sizes": sizes, "at_limit_code": cAt, "over_code": cOver, "huge_code": cHuge,
		"gzip_small_batch_code": cZip, "after_code": cAfter, "texts": []string{sAt, sOver, sHuge, sZip, sAfter}})
	_, last, err := endOffsets(topic, 1, kafka.ReadUncommitted)
	set("max_message_end_offset", map[string]any{"error": errStr(err), "end": last[0], "expected_if_ok": n + 3})
	tail, err := readPartition(topic, 0, n, last[0], kafka.ReadUncommitted)
	var tailView []map[string]any
	for _, m := range tail {
		allSame := len(m.Value) > 0 && bytes.Count(m.Value, m.Value[:1]) == len(m.Value)
		tailView = append(tailView, map[string]any{"offset": m.Offset, "len": len(m.Value), "uniform": allSame, "first": string(m.Value[:min(1, len(m.Value))])})
	}
	set("max_message_tail", map[string]any{"error": errStr(err), "records": tailView})
}
