"""Fixtures that start the real `kaas` binary on a free port with a temp data dir."""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KAAS_BIN = os.environ.get("KAAS_BIN", str(ROOT / "target" / "release" / "kaas"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"kaas did not listen on {port} within {timeout}s")


class Broker:
    """One kaas process; kill()/restart() keep the same data dir and port."""

    def __init__(self, data_dir: Path, port: int, extra_env=None):
        self.data_dir = data_dir
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self.extra_env = extra_env or {}
        self.proc = None
        self.log_path = data_dir.parent / f"kaas-{port}.log"

    def start(self):
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        env.update(self.extra_env)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [KAAS_BIN, "serve", "--data-dir", str(self.data_dir),
             "--listen", self.bootstrap, "--node-id", "0"],
            stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_for_port(self.port)
        return self

    def kill(self):
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self):
        self.kill()
        return self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "data", free_port()).start()
    yield b
    b.stop()
