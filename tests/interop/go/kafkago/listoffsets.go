// Scenario "listoffsets-dup": one raw ListOffsets request naming a partition twice.

package main

import (
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
)

// One ListOffsets request naming partition 0 twice (earliest and latest) and partition 1
// once: Apache Kafka answers the duplicated partition INVALID_REQUEST (42), once, with offset
// and timestamp -1 (ReplicaManager.fetchOffset with ListOffsetsRequest.duplicatePartitions),
// and the other partition normally. kafka.Client never sends this (it splits a ListOffsets
// into one request per partition and timestamp); kafka-go's protocol package sends it as
// written.
func runListOffsetsDuplicate() {
	c := newClient()
	topic := "kgo-dup-" + suffix
	must(createTopic(c, topic, 2, nil), "create topic")
	w := newWriter(topic, 0)
	w.Balancer = toPartition
	must(w.WriteMessages(ctxT(20*time.Second), kafka.Message{Partition: 0, Value: []byte("a")},
		kafka.Message{Partition: 1, Value: []byte("b")}, kafka.Message{Partition: 1, Value: []byte("c")}), "write")
	w.Close()
	dup, err := rawListOffsets(topic, []listoffsets.RequestPartition{
		{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -2}, {Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1},
		{Partition: 1, CurrentLeaderEpoch: -1, Timestamp: -1}})
	set("raw_list_offsets_duplicate", map[string]any{"error": errStr(err), "entries": dup})
}
