"""Start-up configuration: config file, --databases, --maxclients, --requirepass."""

import os
import tempfile

import pytest

from diff import Pair, run_script
from resp_client import RespClient, Status
from servers import ServerProcess


@pytest.fixture
def started():
    made = []

    def start(kind, **kw):
        s = ServerProcess(kind, **kw)
        made.append(s)
        return s.start()

    yield start
    for s in made:
        s.cleanup()


def test_config_file(started, tmp_path):
    conf = tmp_path / "test.conf"
    conf.write_text("# a comment\n\nrequirepass filepw\ndatabases 4\nslowlog-max-len 77\n")
    r = started("roaringd", config_file=str(conf))
    s = started("redis", config_file=str(conf))
    r.password = s.password = "filepw"
    p = Pair(r, s)
    try:
        run_script(p, ["CONFIG GET databases", "CONFIG GET slowlog-max-len", "SELECT 3", "SELECT 4",
                       "CONFIG GET requirepass"])
        for srv in (r, s):
            c = RespClient(srv.port)
            assert c.call("PING").value.startswith(b"NOAUTH"), srv.kind
            c.close()
    finally:
        p.close()


def test_command_line_overrides_config_file(started, tmp_path):
    conf = tmp_path / "test.conf"
    conf.write_text("databases 4\n")
    outs = []
    for kind in ("roaringd", "redis"):
        srv = started(kind, config_file=str(conf), extra_args=["--databases", "6"])
        c = srv.client()
        outs.append((c.call("SELECT", "5"), c.call("SELECT", "6")))
        c.close()
    assert outs[0] == outs[1], outs


@pytest.mark.parametrize("n", ["1", "3"])
def test_databases_option(started, n):
    outs = []
    for kind in ("roaringd", "redis"):
        srv = started(kind, extra_args=["--databases", n])
        c = srv.client()
        outs.append([c.call("SELECT", str(int(n) - 1)), c.call("SELECT", n), c.call("CONFIG", "GET", "databases")])
        c.close()
    assert outs[0] == outs[1], outs


def _connect_with_retry(srv, tries=100):
    import time
    for _ in range(tries):
        c = RespClient(srv.port)
        try:
            if c.call("PING") == Status(b"PONG"):
                return c
        except Exception:  # noqa: BLE001
            pass
        c.close()
        time.sleep(0.05)
    return None


def test_maxclients(started):
    outs = []
    for kind in ("roaringd", "redis"):
        srv = started(kind, extra_args=["--maxclients", "4"])
        # earlier connections (the start-up probe) may take a moment to be released: retry
        conns = [_connect_with_retry(srv) for _ in range(4)]
        assert all(c is not None for c in conns), kind
        extra = RespClient(srv.port)
        try:
            data = extra.read_until_close(timeout=10)
        finally:
            extra.close()
        conns[0].close()
        # a slot frees up once a client leaves
        import time
        ok = None
        for _ in range(100):
            c = RespClient(srv.port)
            try:
                r = c.call("PING")
            except Exception:  # noqa: BLE001
                r = None
            c.close()
            if r == Status(b"PONG"):
                ok = r
                break
            time.sleep(0.05)
        for c in conns[1:]:
            c.close()
        outs.append((data, ok))
    assert outs[0] == outs[1], outs


def test_config_set_maxclients_applies(started):
    outs = []
    for kind in ("roaringd", "redis"):
        srv = started(kind)
        admin = _connect_with_retry(srv)
        assert admin.call("CONFIG", "SET", "maxclients", "3") == Status(b"OK")
        others = [_connect_with_retry(srv) for _ in range(2)]
        assert all(o is not None for o in others), kind
        extra = RespClient(srv.port)
        try:
            data = extra.read_until_close(timeout=10)
        finally:
            extra.close()
        for o in others + [admin]:
            o.close()
        outs.append(data)
    assert outs[0] == outs[1], outs


@pytest.mark.parametrize("args,needle", [(["--nosuchoption", "1"], "Bad directive or wrong number of arguments"),
                                         (["--port", "notanumber"], None),
                                         (["--appendfsync", "sometimes"], None),
                                         (["--databases", "0"], None)])
def test_bad_command_line_exits(args, needle, tmp_path):
    """A bad directive stops the server at start with a non-zero status (like redis-server)."""
    import subprocess
    from servers import AGAINST_REDIS, REDIS_SERVER, free_port, roaringd_bin
    outs = []
    for kind in ("roaringd", "redis"):
        exe = REDIS_SERVER if (kind == "redis" or AGAINST_REDIS) else roaringd_bin()
        d = tmp_path / kind
        d.mkdir()
        p = subprocess.run([exe, "--port", str(free_port()), "--bind", "127.0.0.1", "--dir", str(d), *args],
                           capture_output=True, timeout=30, cwd=d)
        out = (p.stdout + p.stderr).decode(errors="replace")
        outs.append((p.returncode != 0, needle is None or needle in out))
        assert p.returncode != 0, (kind, out)
        if needle:
            assert needle in out, (kind, out)
    assert outs[0] == outs[1]


def test_config_file_quoting(started, tmp_path):
    """redis.conf syntax: quoted values, escapes, case-insensitive directive names."""
    conf = tmp_path / "q.conf"
    conf.write_text('REQUIREPASS "pass word\\x21"\n  slowlog-max-len   33  \n')
    outs = []
    for kind in ("roaringd", "redis"):
        srv = started(kind, config_file=str(conf))
        c = RespClient(srv.port)
        outs.append((c.call("AUTH", "pass word!"), c.call("CONFIG", "GET", "slowlog-max-len")))
        c.close()
    assert outs[0] == outs[1], outs
