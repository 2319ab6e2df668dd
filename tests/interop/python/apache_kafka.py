"""Apache Kafka 4.4 itself, as a reference to run a black-box test against (never in the test
command: it measures what Kafka does so a closing note can put kaas beside it).

`ApacheKafka` has the part of conftest.Broker's interface the scenario tests use (start, stop,
kill, bootstrap, port, node_id): one KRaft broker+controller per instance, or several forming
one cluster (`ApacheKafka.cluster(n, ...)`), with its replication settings. The jars are those
of benches/load (`mvn -q -f benches/load/pom.xml package -DskipTests` fetches them)."""
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import free_port

ROOT = Path(__file__).resolve().parents[3]
LOAD = ROOT / "benches" / "load"
CP = f"{LOAD / 'target' / 'classes'}:{LOAD / 'target' / 'lib' / '*'}"
LOG4J = f"-Dlog4j2.configurationFile=file:{LOAD / 'log4j2.properties'}"


def available():
    """Why Apache Kafka cannot run here, or None."""
    if not (LOAD / "target" / "lib").is_dir():
        return "no Apache Kafka jars: mvn -q -f benches/load/pom.xml package -DskipTests"
    return None


def _java(heap, cls, *args):
    return ["java", f"-Xmx{heap}", "-cp", CP, LOG4J, cls, *map(str, args)]


class ApacheKafka:
    # Every node launched during the current test: conftest's autouse fixture kills those still
    # running when the test ends, whether it passed or not.
    launched = []

    def __init__(self, data_dir: Path, node_id=1, port=None, controller_port=None, extra=()):
        self.data_dir = Path(data_dir)
        self.node_id = node_id
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.extra = list(extra)
        self.voters = None           # set by cluster(); else a standalone controller
        self.proc = None
        self.log_path = self.data_dir.parent / f"kafka-{self.node_id}-{self.port}.log"

    @classmethod
    def cluster(cls, tmp_path, n, extra=()):
        """n brokers, each also a controller of one quorum, formatted with one cluster id."""
        nodes = [cls(tmp_path / f"kafka-{i}", node_id=i, extra=extra) for i in range(1, n + 1)]
        voters = ",".join(f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in nodes)
        cluster_id = _random_uuid()
        for b in nodes:
            b.voters = voters
            b.format(cluster_id)
        return nodes

    def _properties(self):
        rf = 1 if self.voters is None else min(3, self.voters.count("@"))
        quorum = (f"controller.quorum.voters={self.voters}" if self.voters
                  else f"controller.quorum.bootstrap.servers=127.0.0.1:{self.controller_port}")
        return "\n".join([
            "process.roles=broker,controller",
            f"node.id={self.node_id}",
            quorum,
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={self.data_dir / 'logs'}",
            f"offsets.topic.replication.factor={rf}",
            f"transaction.state.log.replication.factor={rf}",
            f"transaction.state.log.min.isr={min(rf, 2)}",
            f"default.replication.factor={rf}",
            f"min.insync.replicas={min(rf, 2)}",
            f"share.coordinator.state.topic.replication.factor={rf}",
            f"share.coordinator.state.topic.min.isr={min(rf, 2)}",
            *self.extra,
            "",
        ])

    def format(self, cluster_id=None):
        self.data_dir.mkdir(parents=True, exist_ok=True)
        props = self.data_dir / "server.properties"
        props.write_text(self._properties())
        argv = ["kafka.tools.StorageTool", "format", "--config", props,
                "--cluster-id", cluster_id or _random_uuid()]
        if self.voters is None:
            argv.append("--standalone")
        r = subprocess.run(_java("256m", *argv), capture_output=True, text=True)
        assert r.returncode == 0, f"kafka storage format failed:\n{r.stdout}{r.stderr}"

    def start(self, timeout=90):
        return self.launch().wait_listening(timeout)

    def launch(self):
        """Starts the process without waiting (a node of a quorum listens only once a majority
        of the controllers runs: start them all, then wait)."""
        if not (self.data_dir / "server.properties").exists():
            self.format()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                ["java", "-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true", LOG4J,
                 "-Dkaas.log.level=INFO", "-cp", CP, "kafka.Kafka", str(self.data_dir / "server.properties")],
                stdout=log, stderr=subprocess.STDOUT)
        ApacheKafka.launched.append(self)
        return self

    def wait_listening(self, timeout=90):
        deadline = time.time() + timeout
        while True:
            assert self.proc.poll() is None, f"Apache Kafka exited at start; see {self.log_path}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                assert time.time() < deadline, f"Apache Kafka did not listen within {timeout}s"
                time.sleep(0.2)

    def stop(self, timeout=60):
        """SIGTERM: Kafka's controlled shutdown (its coordinators move first)."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=timeout)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


def _random_uuid():
    r = subprocess.run(_java("256m", "kafka.tools.StorageTool", "random-uuid"), capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split(), f"kafka random-uuid failed:\n{r.stdout}{r.stderr}"
    return r.stdout.split()[-1]


def stop_all(brokers):
    for b in brokers:
        if b.alive():
            b.kill()

