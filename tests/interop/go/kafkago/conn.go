// Scenario "conn": the low-level kafka.Conn API (Dial, DialLeader, ReadBatch, long polls,
// DeleteTopics).

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

func runConn() {
	topic := "kgo-conn-" + suffix

	// The README's pattern: Dial, find the controller, CreateTopics there, ReadPartitions.
	conn, err := kafka.Dial("tcp", addr)
	must(err, "dial")
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	controller, err := conn.Controller()
	set("controller", map[string]any{"error": errStr(err), "id": controller.ID, "addr": fmt.Sprintf("%s:%d", controller.Host, controller.Port)})
	brokers, err := conn.Brokers()
	set("brokers", map[string]any{"error": errStr(err), "count": len(brokers)})
	cc, err := kafka.Dial("tcp", net.JoinHostPort(controller.Host, strconv.Itoa(controller.Port)))
	must(err, "dial controller")
	cc.SetDeadline(time.Now().Add(30 * time.Second))
	err = cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1})
	set("conn_create_topics", errStr(err))
	cc.Close()
	must(waitTopic(topic, 3), "topic ready")
	parts, err := conn.ReadPartitions(topic)
	set("read_partitions", map[string]any{"error": errStr(err), "count": len(parts)})
	all, err := conn.ReadPartitions()
	found := 0
	for _, p := range all {
		if p.Topic == topic {
			found++
		}
	}
	set("read_partitions_all_topics", map[string]any{"error": errStr(err), "of_topic": found})
	conn.Close()

	// DialLeader + WriteMessages, then a compressed batch whose base offset is returned.
	lc, err := kafka.DialLeader(ctxT(10*time.Second), "tcp", addr, topic, 0)
	must(err, "dial leader")
	lc.SetDeadline(time.Now().Add(30 * time.Second))
	var msgs []kafka.Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte("c"), Value: []byte(fmt.Sprintf("conn-%d", i))})
	}
	_, err = lc.WriteMessages(msgs...)
	set("conn_write", errStr(err))
	var more []kafka.Message
	for i := 10; i < 15; i++ {
		more = append(more, kafka.Message{Value: []byte(fmt.Sprintf("conn-%d", i))})
	}
	_, part, base, _, err := lc.WriteCompressedMessagesAt(compress.Snappy.Codec(), more...)
	set("conn_write_compressed", map[string]any{"error": errStr(err), "partition": part, "base_offset": base})
	first, err1 := lc.ReadFirstOffset()
	last, err2 := lc.ReadLastOffset()
	f2, l2, err3 := lc.ReadOffsets()
	set("conn_offsets", map[string]any{"first": first, "last": last, "offsets": []int64{f2, l2}, "errors": errStr(err1) + errStr(err2) + errStr(err3)})

	// Seek + ReadBatch: everything, in order, and the high watermark.
	_, err = lc.Seek(0, kafka.SeekAbsolute)
	set("seek_error", errStr(err))
	b := lc.ReadBatch(1, 10<<20)
	var values []string
	var offsets []int64
	for {
		m, err := b.ReadMessage()
		if err != nil {
			break
		}
		values = append(values, string(m.Value))
		offsets = append(offsets, m.Offset)
	}
	hwm := b.HighWaterMark()
	set("read_batch_all", map[string]any{"values": values, "offsets": offsets, "hwm": hwm, "close": errStr(b.Close())})
	// From the middle of the snappy batch (offsets 10-14): Kafka sends the whole batch, the
	// client skips 10 and 11.
	_, err = lc.Seek(12, kafka.SeekAbsolute)
	b = lc.ReadBatch(1, 10<<20)
	values, offsets = nil, nil
	for {
		m, err := b.ReadMessage()
		if err != nil {
			break
		}
		values = append(values, string(m.Value))
		offsets = append(offsets, m.Offset)
	}
	set("read_batch_mid_batch", map[string]any{"values": values, "offsets": offsets, "error": errStr(err), "close": errStr(b.Close())})
	lc.Close()

	// Partition 1: ten batches of one 1,000-byte record each; fetch limits (KIP-74: the first
	// batch comes whole even above max bytes; otherwise only whole batches count).
	pc, err := kafka.DialLeader(ctxT(10*time.Second), "tcp", addr, topic, 1)
	must(err, "dial leader 1")
	pc.SetDeadline(time.Now().Add(60 * time.Second))
	big := bytes.Repeat([]byte("m"), 1000)
	for i := 0; i < 10; i++ {
		_, err = pc.WriteMessages(kafka.Message{Value: big})
		must(err, "write one")
	}
	batchSize := recordBatchSize(1000)
	readWith := func(cfg kafka.ReadBatchConfig, at int64) (int, time.Duration, string) {
		if _, err := pc.Seek(at, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
			return -1, 0, err.Error()
		}
		pc.SetReadDeadline(time.Now().Add(15 * time.Second))
		started := time.Now()
		b := pc.ReadBatchWith(cfg)
		n := 0
		var last error
		for {
			_, err := b.ReadMessage()
			if err != nil {
				last = err
				break
			}
			n++
		}
		elapsed := time.Since(started)
		b.Close()
		text := ""
		if last != nil && !errors.Is(last, io.EOF) {
			text = last.Error()
		}
		return n, elapsed, text
	}
	n1, _, e1 := readWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 100}, 0)
	n3, _, e3 := readWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: batchSize*3 + batchSize/2}, 0)
	nAll, _, eAll := readWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20}, 0)
	set("fetch_max_bytes", map[string]any{"batch_size": batchSize, "tiny": n1, "three_and_a_half": n3, "all": nAll, "errors": []string{e1, e3, eAll}})

	// Long polls at the end of the partition: nothing arrives (the broker waits MaxWait);
	// one record arrives after 400 ms (answered then); MinBytes 3,000 while 1,000-byte
	// records arrive every 250 ms (answered once three are there).
	nEmpty, tEmpty, eEmpty := readWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 1500 * time.Millisecond}, 10)
	writeLater := func(delay time.Duration, count int) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			wc, err := kafka.DialLeader(ctxT(10*time.Second), "tcp", addr, topic, 1)
			if err != nil {
				logf("write later: %v", err)
				return
			}
			defer wc.Close()
			wc.SetDeadline(time.Now().Add(30 * time.Second))
			for i := 0; i < count; i++ {
				time.Sleep(delay)
				if _, err := wc.WriteMessages(kafka.Message{Value: big}); err != nil {
					logf("write later: %v", err)
					return
				}
			}
		}()
		return done
	}
	done := writeLater(400*time.Millisecond, 1)
	nWake, tWake, eWake := readWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 5 * time.Second}, 10)
	<-done
	done = writeLater(250*time.Millisecond, 10)
	nMin, tMin, eMin := readWith(kafka.ReadBatchConfig{MinBytes: 3000, MaxBytes: 1 << 20, MaxWait: 6 * time.Second}, 11)
	<-done
	set("long_poll", map[string]any{
		"empty":     map[string]any{"n": nEmpty, "s": tEmpty.Seconds(), "error": eEmpty},
		"wake":      map[string]any{"n": nWake, "s": tWake.Seconds(), "error": eWake},
		"min_bytes": map[string]any{"n": nMin, "s": tMin.Seconds(), "error": eMin},
	})

	// Fetching past the end is OFFSET_OUT_OF_RANGE (1).
	pc.Seek(1000, kafka.SeekAbsolute|kafka.SeekDontCheck)
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	ob := pc.ReadBatch(1, 1<<20)
	_, oerr := ob.ReadMessage()
	ob.Close()
	set("out_of_range", map[string]any{"code": code(oerr), "error": errStr(oerr)})
	pc.Close()

	// Conn.DeleteTopics: gone from Metadata.
	dc, err := kafka.Dial("tcp", addr)
	must(err, "dial")
	dc.SetDeadline(time.Now().Add(20 * time.Second))
	set("conn_delete_topics", errStr(dc.DeleteTopics(topic)))
	dc.Close()
	set("conn_deleted_gone", waitGone(topic))
}
