"""The Prometheus endpoint scraped with Python's urllib after confluent-kafka (librdkafka)
produced: the topic's bytes and records in, the Produce requests and their times, the fsyncs
and the producer's id are counted."""
import re
import urllib.request

from conftest import Broker, free_port, poll_until
from kaashelpers import create_topic, produce_confluent, unique_topic

N = 200


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        return resp.read().decode()


def value(text: str, series: str):
    """The sample `series` (name and labels as exposed), or None."""
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else None


def test_confluent_kafka_produce_is_counted(tmp_path):
    port = free_port()
    broker = Broker(tmp_path / "data", free_port(),
                    extra_env={"KAAS_METRICS_LISTEN": f"127.0.0.1:{port}"}).start()
    topic = unique_topic("metrics")
    create_topic(broker.bootstrap, topic, 1)
    records = [(f"k{i}", f"value-{i}") for i in range(N)]
    produce_confluent(broker.bootstrap, topic, records)

    def counted():
        text = scrape(port)
        produces = value(text, 'kafka_network_requestmetrics_requests_total{request="Produce"}')
        timed = value(text, 'kafka_network_requestmetrics_totaltimems_count{request="Produce"}')
        records_in = value(text, f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}}')
        return text if records_in == N and produces == timed else None
    text = poll_until(counted, 10, f"{N} records counted in")
    bytes_in = value(text, f'kafka_server_brokertopicmetrics_bytesin_total{{topic="{topic}"}}')
    payload = sum(len(k) + len(v) for k, v in records)
    assert bytes_in is not None and bytes_in > payload, f"{bytes_in} bytes in for {payload} bytes of keys and values"
    produces = value(text, 'kafka_network_requestmetrics_requests_total{request="Produce"}')
    assert produces is not None and 1 <= produces <= N
    assert value(text, 'kafka_network_requestmetrics_totaltimems_count{request="Produce"}') == produces
    assert value(text, "kaas_log_fsync_seconds_count") >= 1
    assert value(text, "kafka_server_replicamanager_partitioncount") == 1
    # librdkafka's idempotent producer holds one producer id, with state in the partition.
    assert value(text, "kafka_server_replicamanager_produceridcount") == 1
    broker.stop()
