"""Shared helpers of the bench/ scripts: servers on free ports with temp dirs,
and a minimal pipelining RESP client for loading data.

Used by bench/redis-benchmark-compare, bench/published-tables and
bench/external-confirm.
"""

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def encode(*args):
    """One command in RESP (arguments: bytes, str or int)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = b"%d" % a
        elif isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def call(port, *args):
    """One request; the raw reply bytes, or None if nothing answered."""
    req = encode(*args)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(req)
            return s.recv(4096)
    except OSError:
        return None


def answers_from(port, directory):
    """True once a server on `port` answers PING and its CONFIG GET dir is
    `directory` (so a server someone else started on the port never counts)."""
    if not (call(port, b"PING") or b"").startswith(b"+PONG"):
        return False
    reply = call(port, b"CONFIG", b"GET", b"dir") or b""
    return os.fsencode(os.path.realpath(directory)) in reply


class Server:
    """A server child process on a free port with its own temp dir.

    `argv_for_port(port, dir)` gives the command line. Exits the script with
    status 2 if the server does not come up (five tries on fresh ports)."""

    def __init__(self, name, argv_for_port, prefix="rb-bench"):
        self.name = name
        self.proc = None
        for _attempt in range(5):
            self.port = free_port()
            self.dir = tempfile.mkdtemp(prefix=f"{prefix}-{name}-")
            self.log = open(os.path.join(self.dir, "server.log"), "wb")
            self.argv = argv_for_port(self.port, self.dir)
            try:
                self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
            except OSError as e:
                self.close()
                print(f"cannot start {name} ({self.argv[0]}): {e}", file=sys.stderr)
                sys.exit(2)
            deadline = time.time() + 30
            while self.proc.poll() is None and time.time() < deadline:
                if answers_from(self.port, self.dir):
                    return
                time.sleep(0.05)
            self.log.flush()
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                tail = f.read()[-2000:].decode(errors="replace")
            self.close()
            print(f"{name} did not start on port {self.port}:\n{tail}", file=sys.stderr)
        sys.exit(2)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def close(self):
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_argv(redis_server, extra=()):
    """Redis 7 as the in-memory reference: no RDB, no AOF (unless `extra`
    says otherwise, e.g. `--appendonly yes --appendfsync everysec`)."""
    return lambda port, d: [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                            "--save", "", "--appendonly", "no"] + list(extra)


def roaringd_argv(roaringd_bin, extra=()):
    return lambda port, d: [roaringd_bin, "--port", str(port), "--bind", "127.0.0.1",
                            "--dir", d] + list(extra)


class ReplyError(Exception):
    pass


class Conn:
    """A blocking RESP2 connection that pipelines: `send` queues commands,
    `flush` writes them and reads every reply. Error replies are collected
    (not raised) by `flush`; `call` raises ReplyError on one."""

    def __init__(self, port, host="127.0.0.1", timeout=300):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb", buffering=1 << 20)
        self.out = []
        self.out_bytes = 0
        self.pending = 0

    def close(self):
        self.rfile.close()
        self.sock.close()

    def _read(self):
        line = self.rfile.readline()
        if not line:
            raise ConnectionError("server closed the connection")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return ReplyError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rfile.read(n + 2)
            return data[:-2]
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self._read() for _ in range(n)]
        raise ConnectionError(f"bad reply line {line[:80]!r}")

    def send(self, *args, window=2000, window_bytes=8 << 20):
        """Queue a command; flushes on its own every `window` commands."""
        cmd = encode(*args)
        self.out.append(cmd)
        self.out_bytes += len(cmd)
        self.pending += 1
        if self.pending >= window or self.out_bytes >= window_bytes:
            return self.flush()
        return []

    def flush(self):
        """Write the queued commands, read their replies; returns the errors."""
        if not self.pending:
            return []
        self.sock.sendall(b"".join(self.out))
        errors = []
        for _ in range(self.pending):
            r = self._read()
            if isinstance(r, ReplyError):
                errors.append(r)
        self.out, self.out_bytes, self.pending = [], 0, 0
        return errors

    def call(self, *args):
        self.flush()
        self.sock.sendall(encode(*args))
        r = self._read()
        if isinstance(r, ReplyError):
            raise r
        return r


def populate_bitmaps(tr, redis, nkeys, rkeys, seed, bits=100, offsets=10_000_000, prefix="foo-"):
    """The published tables' many-key population: `nkeys` keys `prefix`i of
    `bits` random offsets in [0, `offsets`) on roaringd (TR.SETBITS over
    Conn `tr`), the first `rkeys` of them, with the same bits, on Redis
    (SETBIT over Conn `redis`; each Redis key spans the full range, as a
    string bitmap must). Raises RuntimeError on an error reply."""
    rng = random.Random(seed)
    errs = []
    for k in range(nkeys):
        offs = [rng.randrange(offsets) for _ in range(bits)]
        key = f"{prefix}{k}"
        errs += tr.send("TR.SETBITS", key, *offs, window=500)
        if k < rkeys:
            for o in offs:
                errs += redis.send("SETBIT", key, o, 1, window=5000)
            errs += redis.send("SETBIT", key, offsets - 1, 0, window=5000)
    errs += tr.flush() + redis.flush()
    if errs:
        raise RuntimeError(f"population failed: {errs[0]}")


def loadavg():
    return os.getloadavg()


RESP_BENCHMARK_VERSION = "0.2.5"


def resp_benchmark():
    """The `resp-benchmark` executable: $RESP_BENCHMARK, else one on PATH,
    else the one in a venv of its own under ~/.cache/roaringd/bench-venv,
    which is created and given resp-benchmark RESP_BENCHMARK_VERSION from
    PyPI on first use (a fresh machine needs nothing installed by hand).
    Raises RuntimeError when that install fails."""
    tool = os.environ.get("RESP_BENCHMARK") or shutil.which("resp-benchmark")
    if tool:
        return tool
    venv = os.path.join(os.path.expanduser("~/.cache/roaringd"), "bench-venv")
    tool = os.path.join(venv, "bin", "resp-benchmark")
    if os.path.exists(tool):
        return tool
    print(f"installing resp-benchmark {RESP_BENCHMARK_VERSION} into {venv}", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q",
                        "--disable-pip-version-check",
                        f"resp-benchmark=={RESP_BENCHMARK_VERSION}"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"could not install resp-benchmark into {venv}: {e}") from e
    return tool


def cpu_seconds(pid):
    """utime + stime of process `pid` (every thread), in seconds
    (fields 14 and 15 of /proc/PID/stat, proc(5))."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
