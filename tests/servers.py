"""Starting and stopping the servers under test.

Two kinds of server process:
  * roaringd: the binary from $ROARINGD_BIN (default
    $CARGO_TARGET_DIR/release/roaringd, CARGO_TARGET_DIR defaulting to
    $HOME/.cache/roaringd/target; built with cargo when missing);
  * redis-server (Debian's 7.0.x), the reference.

With ROARINGD_TEST_AGAINST_REDIS=1 the "roaringd" side is a second
redis-server (with AOF on, so that the restart and crash tests have a
durable store to check); that mode validates the harness itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from resp_client import Err, RespClient

REPO = Path(__file__).resolve().parent.parent
AGAINST_REDIS = os.environ.get("ROARINGD_TEST_AGAINST_REDIS", "") not in ("", "0")
REDIS_SERVER = os.environ.get("REDIS_SERVER_BIN", shutil.which("redis-server") or "/usr/bin/redis-server")
REDIS_CLI = os.environ.get("REDIS_CLI_BIN", shutil.which("redis-cli") or "/usr/bin/redis-cli")

_built = False


def roaringd_bin() -> str:
    global _built
    b = os.environ.get("ROARINGD_BIN")
    if b:
        return b
    target = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/roaringd/target"))
    path = os.path.join(target, "release", "roaringd")
    if not os.path.exists(path) and not _built:
        cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
        env = dict(os.environ, CARGO_TARGET_DIR=target)
        subprocess.run([cargo, "build", "--release", "-p", "roaringd-server", "--bin", "roaringd"],
                       cwd=REPO, env=env, check=True)
        _built = True
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    pass


class ServerProcess:
    """One server process on 127.0.0.1:port with its own data directory."""

    def __init__(self, kind: str, extra_args=(), dir: str | None = None, port: int | None = None,
                 config_file: str | None = None):
        assert kind in ("roaringd", "redis")
        self.kind = kind
        self.config_file = config_file
        self.extra_args = list(extra_args)
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix=f"rtest-{kind}-")
        self.port = port or free_port()
        self.port_fixed = port is not None
        self.proc: subprocess.Popen | None = None
        self.log_path = os.path.join(self.dir, f"{kind}-{self.port}.log")
        self.password: str | None = None
        for i, a in enumerate(self.extra_args):
            if a == "--requirepass":
                self.password = self.extra_args[i + 1]

    @property
    def is_real_roaringd(self) -> bool:
        return self.kind == "roaringd" and not AGAINST_REDIS

    def argv(self) -> list[str]:
        conf = [self.config_file] if self.config_file else []
        if self.kind == "roaringd" and not AGAINST_REDIS:
            return [roaringd_bin(), *conf, "--port", str(self.port), "--dir", self.dir,
                    "--bind", "127.0.0.1", *self.extra_args]
        args = [REDIS_SERVER, *conf, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--daemonize", "no",
                "--logfile", "", "--protected-mode", "no"]
        if self.kind == "roaringd":
            # the stand-in for roaringd must be durable like roaringd
            args += ["--appendonly", "yes"]
        else:
            args += ["--appendonly", "no"]
        return args + self.extra_args

    def start(self, timeout: float = 30.0):
        """Start and wait until this process answers PING. With an automatically
        chosen port, a port taken by someone else in the meantime is retried on a
        new one (several test sessions share the machine)."""
        for attempt in range(4):
            try:
                return self._start_once(timeout)
            except PortTaken:
                if self.port_fixed or attempt == 3:
                    raise
                self.port = free_port()
                self.log_path = os.path.join(self.dir, f"{self.kind}-{self.port}.log")
        return self

    def _start_once(self, timeout: float):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.dir)
        log.close()
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_tail()
                self.proc = None
                if "in use" in tail.lower():
                    raise PortTaken(tail)
                raise RuntimeError(f"{self.kind} exited at start:\n{tail}")
            try:
                c = RespClient(self.port, timeout=2)
                try:
                    r = c.call("PING")
                    if r is not None and self._is_mine(c):
                        return self
                finally:
                    c.close()
            except (OSError, ValueError) as e:
                last = e
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"{self.kind} did not answer PING within {timeout}s ({last}):\n{self.log_tail()}")

    def _is_mine(self, c) -> bool:
        """The server answering on our port is our process (not another session's)."""
        if self.password:
            c.call("AUTH", self.password)
        info = c.call("INFO", "server")
        if isinstance(info, Err) or info is None:
            return self.proc.poll() is None
        text = info.value if hasattr(info, "value") else info
        for line in text.decode(errors="replace").splitlines():
            if line.startswith("process_id:"):
                return int(line.split(":", 1)[1]) == self.proc.pid
        return self.proc.poll() is None

    def log_tail(self, n: int = 4000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self, protocol: int = 2, auth: bool = True, timeout: float = 15.0) -> RespClient:
        c = RespClient(self.port, protocol=2, timeout=timeout)
        if auth and self.password:
            r = c.call("AUTH", self.password)
            assert not isinstance(r, Err), r
        if protocol == 3:
            r = c.call("HELLO", "3")
            assert not isinstance(r, Err), r
            c.protocol = 3
        return c

    def redis_py(self, **kw):
        import redis
        kw.setdefault("socket_timeout", 15)
        if self.password and "password" not in kw:
            kw["password"] = self.password
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def wait_exit(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self, timeout: float = 20.0):
        """SIGTERM, wait, then SIGKILL."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            if self.wait_exit(timeout) is None:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def kill(self):
        """SIGKILL (crash)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.proc = None

    def restart(self):
        self.terminate()
        return self.start()

    def cleanup(self):
        self.terminate()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
