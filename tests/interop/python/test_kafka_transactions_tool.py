"""Apache Kafka's kafka-transactions tool (org.apache.kafka.tools.TransactionsCommand) against
kaas: list, describe, describe-producers, and abort of a hanging transaction."""
from confluent_kafka import Producer

import javaharness
import kaashelpers


def tool(bootstrap, *args):
    run = javaharness.run_java("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bootstrap, *args,
                               timeout=120)
    assert run.returncode == 0, run.describe()
    return run.stdout


def test_list_describe_and_abort_a_hanging_transaction(broker):
    topic = kaashelpers.unique_topic("hang")
    kaashelpers.create_topic(broker.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "hang-1",
                  "transaction.timeout.ms": 600000})
    p.init_transactions(30)
    p.begin_transaction()
    for _ in range(3):
        p.produce(topic, value=b"x")
    assert p.flush(30) == 0

    listed = tool(broker.bootstrap, "list")
    assert "hang-1" in listed and "Ongoing" in listed, listed
    described = tool(broker.bootstrap, "describe", "--transactional-id", "hang-1")
    assert "Ongoing" in described and f"{topic}-0" in described, described
    producers = tool(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
    rows = [line.split() for line in producers.splitlines()[1:] if line.strip()]
    assert len(rows) == 1 and rows[0][-1] == "0", producers  # CurrentTransactionStartOffset

    # The open transaction holds the LSO at 0: a read_committed consumer sees nothing.
    assert kaashelpers.end_offsets(broker.bootstrap, topic, 1, isolation="read_committed")[0] == 0

    tool(broker.bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    producers = tool(broker.bootstrap, "describe-producers", "--topic", topic, "--partition", "0")
    rows = [line.split() for line in producers.splitlines()[1:] if line.strip()]
    assert rows[0][-1] == "None", producers
    # The abort marker released the LSO; the aborted records stay invisible read_committed.
    assert kaashelpers.end_offsets(broker.bootstrap, topic, 1, isolation="read_committed")[0] == 4
    got = kaashelpers.consume_to_end(broker.bootstrap, topic, 1, isolation="read_committed")
    assert got == {0: []}, got
    kaashelpers.assert_no_panic(broker)
