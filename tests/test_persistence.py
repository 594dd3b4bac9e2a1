"""Durability: clean restart (SHUTDOWN, SIGTERM) and crash (kill -9 under load,
--appendfsync always): every acknowledged write survives.

These run against the roaringd side only (with ROARINGD_TEST_AGAINST_REDIS=1, a
redis-server with appendonly yes stands in for it)."""

import random
import signal
import threading
import time

import pytest

from resp_client import ConnectionClosed, Err, Map, RSet, RespClient, Status

BIN_KEY = b"\x00bin\xff"


def write_dataset(c):
    assert c.call("SET", "str", "hello") == Status(b"OK")
    c.call("SET", BIN_KEY, bytes(range(256)))
    c.call("SET", "num", "41")
    c.call("INCR", "num")
    c.call("SADD", "set", "a", "b", b"\xff")
    c.call("SADD", "bigset", *[str(i) for i in range(5000)])
    c.call("HSET", "hash", "f1", "v1", "f2", b"\x00")
    c.call("SET", "ttl_long", "x", "EX", "1000")
    c.call("SET", "ttl_short", "x", "PX", "1500")
    c.call("SADD", "set_ttl", "m")
    c.call("EXPIRE", "set_ttl", "1000")
    c.call("SET", "deleted", "x")
    c.call("DEL", "deleted")
    c.call("SET", "overwritten", "old")
    c.call("SADD", "overwritten2", "old")
    c.call("SET", "overwritten2", "new")
    c.call("SET", "overwritten", "new")
    c.call("SELECT", "5")
    c.call("SET", "db5key", "v5")
    c.call("SELECT", "0")
    c.call("MULTI")
    c.call("SET", "tx1", "1")
    c.call("SADD", "tx2", "x")
    c.call("EXEC")


def _members(c, k):
    r = c.call("SMEMBERS", k)
    return set(r.items if isinstance(r, RSet) else r)


def check_dataset(c, short_expired=False):
    assert c.call("GET", "str") == b"hello"
    assert c.call("GET", BIN_KEY) == bytes(range(256))
    assert c.call("GET", "num") == b"42"
    assert _members(c, "set") == {b"a", b"b", b"\xff"}
    assert c.call("SCARD", "bigset") == 5000 and c.call("SISMEMBER", "bigset", "4999") == 1
    h = c.call("HGETALL", "hash")
    assert dict(zip(h[0::2], h[1::2])) == {b"f1": b"v1", b"f2": b"\x00"}
    assert 0 < c.call("TTL", "ttl_long") <= 1000
    assert 0 < c.call("TTL", "set_ttl") <= 1000
    assert c.call("EXISTS", "deleted") == 0
    assert c.call("GET", "overwritten") == b"new" and c.call("GET", "overwritten2") == b"new"
    assert c.call("TYPE", "overwritten2") == Status(b"string")
    assert c.call("GET", "tx1") == b"1" and _members(c, "tx2") == {b"x"}
    if short_expired:
        assert c.call("EXISTS", "ttl_short") == 0
    c.call("SELECT", "5")
    assert c.call("GET", "db5key") == b"v5"
    c.call("SELECT", "0")


def _wait_exit(srv):
    rc = srv.wait_exit(30)
    assert rc is not None, f"{srv.kind} did not exit:\n{srv.log_tail()}"
    srv.proc = None
    return rc


def test_restart_after_shutdown(roaringd_server):
    srv = roaringd_server().start()
    c = srv.client()
    write_dataset(c)
    try:
        c.send_raw(b"*1\r\n$8\r\nSHUTDOWN\r\n")
        data = c.read_until_close(timeout=30)
        assert data == b"", f"SHUTDOWN replied {data!r}"
    finally:
        c.close()
    _wait_exit(srv)
    srv.start()
    c = srv.client()
    check_dataset(c)
    assert c.call("DBSIZE") in (13, 12)  # ttl_short may have expired by now
    c.close()


def test_restart_after_sigterm(roaringd_server):
    srv = roaringd_server().start()
    c = srv.client()
    write_dataset(c)
    c.close()
    srv.proc.send_signal(signal.SIGTERM)
    _wait_exit(srv)
    srv.start()
    c = srv.client()
    check_dataset(c)
    c.close()


def test_expiry_survives_restart(roaringd_server):
    srv = roaringd_server().start()
    c = srv.client()
    write_dataset(c)
    c.close()
    srv.restart()
    c = srv.client()
    # the short TTL keeps running across the restart: it is gone soon after
    deadline = time.monotonic() + 30
    while c.call("EXISTS", "ttl_short"):
        assert time.monotonic() < deadline, "ttl_short never expired after restart"
        time.sleep(0.05)
    check_dataset(c, short_expired=True)
    assert 900 < c.call("TTL", "ttl_long") <= 1000
    c.close()
    # an expired key is not resurrected by another restart
    srv.restart()
    c = srv.client()
    assert c.call("EXISTS", "ttl_short") == 0 and c.call("GET", "ttl_short") is None
    check_dataset(c, short_expired=True)
    c.close()


def test_restart_after_flushall_and_rename(roaringd_server):
    srv = roaringd_server().start()
    c = srv.client()
    write_dataset(c)
    c.call("FLUSHALL")
    c.call("SADD", "s", "1", "2")
    c.call("RENAME", "s", "t")
    c.call("HSET", "h", "f", "v")
    c.call("HDEL", "h", "f")
    c.close()
    srv.restart()
    c = srv.client()
    assert sorted(c.call("KEYS", "*")) == [b"t"] and _members(c, "t") == {b"1", b"2"}
    c.call("SELECT", "5")
    assert c.call("DBSIZE") == 0
    c.close()


def test_save_then_kill(roaringd_server):
    """SAVE makes everything written so far durable, whatever appendfsync says."""
    srv = roaringd_server(["--appendfsync", "no"]).start()
    c = srv.client()
    write_dataset(c)
    assert c.call("SAVE") == Status(b"OK")
    c.close()
    srv.kill()
    srv.start()
    c = srv.client()
    check_dataset(c)
    c.close()


class Writer(threading.Thread):
    """Writes until its connection breaks, recording what was acknowledged."""

    def __init__(self, port, tid):
        super().__init__(daemon=True)
        self.port, self.tid = port, tid
        self.acked_set = {}
        self.acked_sadd = set()
        self.acked_hset = {}
        self.acked_incr = 0
        self.sent_incr = 0
        self.acked_tx = set()
        self.error = None
        self.stop = False

    def run(self):
        rnd = random.Random(self.tid)
        try:
            c = RespClient(self.port, timeout=30)
        except OSError as e:
            self.error = e
            return
        t = self.tid
        i = 0
        try:
            while not self.stop:
                i += 1
                op = i % 5
                if op == 0:
                    k, v = f"w{t}:s:{i}".encode(), f"val{i}-{rnd.random()}".encode()
                    r = c.call("SET", k, v)
                    assert r == Status(b"OK"), r
                    self.acked_set[k] = v
                elif op == 1:
                    r = c.call("SADD", f"w{t}:set", str(i))
                    assert r == 1, r
                    self.acked_sadd.add(str(i).encode())
                elif op == 2:
                    r = c.call("HSET", f"w{t}:hash", f"f{i}", f"v{i}")
                    assert r == 1, r
                    self.acked_hset[f"f{i}".encode()] = f"v{i}".encode()
                elif op == 3:
                    self.sent_incr += 1
                    r = c.call("INCR", f"w{t}:ctr")
                    assert r == self.sent_incr, (r, self.sent_incr)
                    self.acked_incr = r
                else:
                    c.send_raw(b"".join(__import__("resp_client").encode_command(*x) for x in
                                        [("MULTI",), ("SET", f"w{t}:txa:{i}", "1"), ("SET", f"w{t}:txb:{i}", "1"),
                                         ("EXEC",)]))
                    replies = [c.read_reply() for _ in range(4)]
                    assert replies[3] == [Status(b"OK"), Status(b"OK")], replies
                    self.acked_tx.add(i)
        except (ConnectionClosed, OSError, ValueError):
            pass
        except AssertionError as e:
            self.error = e
        finally:
            c.close()


def verify_writers(c, writers):
    lost = []
    for w in writers:
        assert w.error is None, f"writer {w.tid}: {w.error!r}"
        t = w.tid
        if w.acked_set:
            keys = list(w.acked_set)
            vals = c.call("MGET", *keys)
            lost += [(k, "SET") for k, v in zip(keys, vals) if v != w.acked_set[k]]
        m = _members(c, f"w{t}:set")
        lost += [(f"w{t}:set", x) for x in w.acked_sadd - m]
        h = c.call("HGETALL", f"w{t}:hash")
        h = dict(h.items) if isinstance(h, Map) else dict(zip(h[0::2], h[1::2]))
        lost += [(f"w{t}:hash", f) for f, v in w.acked_hset.items() if h.get(f) != v]
        ctr = int(c.call("GET", f"w{t}:ctr") or 0)
        assert w.acked_incr <= ctr <= w.sent_incr, (t, w.acked_incr, ctr, w.sent_incr)
        txa = {int(k.rsplit(b":", 1)[1]) for k in c.call("KEYS", f"w{t}:txa:*")}
        txb = {int(k.rsplit(b":", 1)[1]) for k in c.call("KEYS", f"w{t}:txb:*")}
        assert txa == txb, f"writer {t}: half-applied transactions {sorted(txa ^ txb)[:10]}"
        lost += [("tx", i) for i in w.acked_tx - txa]
    assert not lost, f"{len(lost)} acknowledged writes lost after kill -9, e.g. {lost[:10]}"


@pytest.mark.parametrize("rounds", [2])
@pytest.mark.parametrize("fsync", ["always", "everysec", "no"])
def test_crash_under_load(roaringd_server, rounds, fsync):
    """kill -9 under load loses no acknowledged write: under `always` by the
    fsync, under `everysec` and `no` with `write-before-reply yes` because
    each write reaches the OS before its reply (as Redis writes its AOF)."""
    srv = roaringd_server(["--appendfsync", fsync, "--write-before-reply", "yes"]).start()
    all_writers = []
    for rnd in range(rounds):
        writers = [Writer(srv.port, rnd * 10 + t) for t in range(4)]
        for w in writers:
            w.start()
        # let the load run until each writer has some acknowledged writes (bounded wait)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(len(w.acked_sadd) >= 20 for w in writers):
            if any(not w.is_alive() for w in writers):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        srv.kill()
        for w in writers:
            w.join(30)
        assert all(len(w.acked_sadd) > 0 for w in writers), [w.error for w in writers]
        all_writers += writers
        srv.start()
        c = srv.client()
        verify_writers(c, all_writers)
        c.close()


def test_crash_during_large_batches(roaringd_server):
    """Large SADDs/MSETs acknowledged before the kill survive; none is half-applied."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    acked = []
    errors = []
    stop = threading.Event()

    def load():
        c = srv.client()
        i = 0
        try:
            while not stop.is_set():
                r = c.call("SADD", f"big{i}", *[str(x) for x in range(2000)])
                if r != 2000:
                    errors.append(r)
                    return
                acked.append(i)
                i += 1
        except (ConnectionClosed, OSError):
            pass
        finally:
            c.close()

    t = threading.Thread(target=load, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while len(acked) < 5 and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.02)
    srv.kill()
    stop.set()
    t.join(30)
    assert not errors and acked, errors
    srv.start()
    c = srv.client()
    for i in acked:
        assert c.call("SCARD", f"big{i}") == 2000, i
    nxt = c.call("SCARD", f"big{acked[-1] + 1}")
    assert nxt in (0, 2000), f"half-applied SADD: {nxt} members"
    c.close()


@pytest.mark.parametrize("how,fsync", [("sigterm", "always"), ("kill9", "always"), ("sigterm", "everysec"),
                                       ("shutdown", "no")])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_state_survives_restart(fresh, how, fsync, seed):
    """A random command sequence, then a restart of the roaringd side only: clean
    (SIGTERM / SHUTDOWN, any appendfsync: everything must be flushed on the way
    out), or kill -9 under appendfsync always. The whole database must still
    equal Redis's (which was not restarted)."""
    from diff import Pair
    from test_random import compare_state, run_random, run_random_pipelined
    r, s = fresh(roaringd_args=["--appendfsync", fsync], redis_args=[])
    p = Pair(r, s)
    try:
        if seed == 2:
            run_random_pipelined(p, seed + 500, 400)
        else:
            run_random(p, seed + 500, "mixed", 250)
        p.close()
        if how == "kill9":
            r.kill()
        elif how == "sigterm":
            r.terminate()
        else:
            c = RespClient(r.port)
            c.send_raw(b"*1\r\n$8\r\nSHUTDOWN\r\n")
            c.read_until_close(timeout=30)
            c.close()
            _wait_exit(r)
        r.start()
        p = Pair(r, s)
        compare_state(p, seed, "restart")
    finally:
        p.close()


def test_shutdown_arguments(fresh):
    """SHUTDOWN argument errors (differential), then SHUTDOWN NOSAVE stops both."""
    from diff import Pair
    r, s = fresh()
    p = Pair(r, s)
    try:
        p.seq([("SHUTDOWN", "FOO"), ("SHUTDOWN", "ABORT"), ("SHUTDOWN", "NOSAVE", "SAVE"), ("PING",)])
        for srv, c in ((r, p.r), (s, p.s)):
            c.send_raw(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
            assert c.read_until_close(timeout=30) == b"", srv.kind
            assert srv.wait_exit(30) is not None, f"{srv.kind} still running after SHUTDOWN NOSAVE"
            srv.proc = None
    finally:
        p.close()


def test_shutdown_needs_auth(fresh):
    r, s = fresh(["--requirepass", "pw"])
    for srv in (r, s):
        c = RespClient(srv.port)
        assert c.call("SHUTDOWN").value.startswith(b"NOAUTH"), srv.kind
        c.close()
        assert srv.alive(), srv.kind


def test_config_set_appendfsync_always_then_crash(roaringd_server):
    """appendfsync switched to always at run time (CONFIG SET) takes effect:
    writes acknowledged after the switch survive kill -9."""
    srv = roaringd_server(["--appendfsync", "no"]).start()
    c = srv.client()
    assert c.call("CONFIG", "SET", "appendfsync", "always") == Status(b"OK")
    assert c.call("CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    c.close()
    writers = [Writer(srv.port, 100 + t) for t in range(2)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(len(w.acked_sadd) >= 20 for w in writers):
        if any(not w.is_alive() for w in writers):
            break
        time.sleep(0.05)
    srv.kill()
    for w in writers:
        w.join(30)
    srv.start()
    c = srv.client()
    verify_writers(c, writers)
    c.close()


class PipelineWriter(threading.Thread):
    """Sends batches of pipelined writes (SET / SADD / HSET / INCR and a MULTI block);
    records every write whose reply arrived."""

    def __init__(self, port, tid):
        super().__init__(daemon=True)
        self.port, self.tid = port, tid
        self.acked_set, self.acked_sadd, self.acked_hset = {}, set(), {}
        self.acked_incr = self.sent_incr = 0
        self.acked_tx = set()
        self.error = None

    def run(self):
        from resp_client import encode_command
        try:
            c = RespClient(self.port, timeout=30)
        except OSError as e:
            self.error = e
            return
        t, i = self.tid, 0
        try:
            while True:
                batch, kinds = [], []
                for _ in range(20):
                    i += 1
                    k = i % 4
                    if k == 0:
                        batch.append(("SET", f"w{t}:s:{i}", f"v{i}")); kinds.append(("set", f"w{t}:s:{i}".encode(), f"v{i}".encode()))
                    elif k == 1:
                        batch.append(("SADD", f"w{t}:set", str(i))); kinds.append(("sadd", str(i).encode()))
                    elif k == 2:
                        batch.append(("HSET", f"w{t}:hash", f"f{i}", f"v{i}")); kinds.append(("hset", f"f{i}".encode(), f"v{i}".encode()))
                    else:
                        batch.append(("INCR", f"w{t}:ctr")); kinds.append(("incr",))
                batch += [("MULTI",), ("SET", f"w{t}:txa:{i}", "1"), ("SET", f"w{t}:txb:{i}", "1"), ("EXEC",)]
                self.sent_incr += sum(1 for k in kinds if k[0] == "incr")
                c.send_raw(b"".join(encode_command(*x) for x in batch))
                for kind in kinds:
                    r = c.read_reply()
                    if kind[0] == "set":
                        assert r == Status(b"OK"), r
                        self.acked_set[kind[1]] = kind[2]
                    elif kind[0] == "sadd":
                        assert r == 1, r
                        self.acked_sadd.add(kind[1])
                    elif kind[0] == "hset":
                        assert r == 1, r
                        self.acked_hset[kind[1]] = kind[2]
                    else:
                        assert isinstance(r, int), r
                        self.acked_incr = r
                replies = [c.read_reply() for _ in range(4)]
                assert replies[3] == [Status(b"OK"), Status(b"OK")], replies
                self.acked_tx.add(i)
        except (ConnectionClosed, OSError, ValueError):
            pass
        except AssertionError as e:
            self.error = e
        finally:
            c.close()


def test_crash_under_pipelined_load(roaringd_server):
    """kill -9 while clients pipeline writes (appendfsync always): every write whose
    reply arrived survives; no MULTI block is half-applied."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    writers = [PipelineWriter(srv.port, 200 + t) for t in range(3)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(len(w.acked_sadd) >= 100 for w in writers):
        if any(not w.is_alive() for w in writers):
            break
        time.sleep(0.05)
    srv.kill()
    for w in writers:
        w.join(30)
    assert all(w.acked_sadd for w in writers), [w.error for w in writers]
    srv.start()
    c = srv.client()
    verify_writers(c, writers)
    c.close()


@pytest.mark.roaringd_only
def test_second_server_on_same_dir_refused(roaringd_server):
    """A second roaringd on a --dir in use exits with an error; the first is unaffected."""
    first = roaringd_server().start()
    c = first.client()
    c.call("SET", "k", "v")
    second = roaringd_server(dir=first.dir)
    with pytest.raises(RuntimeError):
        second.start(timeout=20)
    assert first.alive()
    assert c.call("GET", "k") == b"v"
    c.close()


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_large_data_survives_restart(roaringd_server, how):
    """Large values (MBs), 20,000 keys and a 20,000-member set survive a restart;
    SCAN still returns every key."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    c = srv.client()
    big = bytes(range(256)) * 12000  # ~3 MB
    assert c.call("SET", "big", big) == Status(b"OK")
    assert c.call("HSET", "bighash", "f", big[:1_000_000]) == 1
    c.pipeline([("MSET", *[x for i in range(j, j + 500) for x in (f"key:{i}", f"v{i}")]) for j in range(0, 20000, 500)])
    c.pipeline([("SADD", "bigset", *[str(i) for i in range(j, j + 1000)]) for j in range(0, 20000, 1000)])
    c.close()
    if how == "kill9":
        srv.kill()
    else:
        srv.terminate()
    srv.start()
    c = srv.client()
    assert c.call("GET", "big") == big
    assert c.call("HGET", "bighash", "f") == big[:1_000_000]
    assert c.call("DBSIZE") == 20003
    assert c.call("SCARD", "bigset") == 20000
    assert c.call("MGET", "key:0", "key:19999") == [b"v0", b"v19999"]
    from diff import scan_full
    keys = scan_full(c, "SCAN", count=1000)
    assert len(keys) == 20003 and b"key:12345" in keys
    c.close()


def test_keys_expired_while_down_are_removed(roaringd_server):
    """Keys whose TTL passed while the server was down are invisible after the
    restart and are removed by the active cycle (DBSIZE reaches 0, polled)."""
    srv = roaringd_server().start()
    c = srv.client()
    for i in range(100):
        c.call("SET", f"t{i}", "v", "PX", "300")
    c.call("SADD", "tset", "a")
    c.call("PEXPIRE", "tset", "300")
    c.close()
    srv.terminate()
    time.sleep(0.6)
    srv.start()
    c = srv.client()
    assert c.call("GET", "t5") is None and c.call("EXISTS", "tset") == 0
    deadline = time.monotonic() + 30
    while c.call("DBSIZE") != 0:
        assert time.monotonic() < deadline, f"DBSIZE still {c.call('DBSIZE')} long after every key expired"
        time.sleep(0.1)
    assert c.call("KEYS", "*") == []
    c.close()


@pytest.mark.parametrize("how", ["shutdown", "sigterm"])
@pytest.mark.parametrize("fsync", ["everysec", "no"])
def test_shutdown_under_load_keeps_acknowledged_writes(roaringd_server, fsync, how):
    """SHUTDOWN while clients write (appendfsync everysec / no): a clean shutdown
    flushes everything, so every acknowledged write survives the restart."""
    srv = roaringd_server(["--appendfsync", fsync]).start()
    writers = [Writer(srv.port, 300 + t) for t in range(2)] + [PipelineWriter(srv.port, 310)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(len(w.acked_sadd) >= 50 for w in writers):
        if any(not w.is_alive() for w in writers):
            break
        time.sleep(0.05)
    if how == "shutdown":
        admin = RespClient(srv.port)
        admin.send_raw(b"*1\r\n$8\r\nSHUTDOWN\r\n")
        admin.read_until_close(timeout=30)
        admin.close()
    else:
        srv.proc.send_signal(signal.SIGTERM)
    _wait_exit(srv)
    for w in writers:
        w.join(30)
    srv.start()
    c = srv.client()
    verify_writers(c, writers)
    c.close()


def _write_until_stopped(srv, offsets0, step):
    """Starts a thread per `offsets0` entry, each calling `step(client,
    offset0, i)` for i = 0, 1, ... on its own connection until `step`
    returns False, the connection fails (a kill) or the returned event is
    set. Returns (threads, stop event)."""
    stop = threading.Event()

    def run(offset0):
        k = srv.client()
        try:
            i = 0
            while not stop.is_set() and step(k, offset0, i):
                i += 1
        except (ConnectionClosed, OSError):
            pass
        finally:
            k.close()

    threads = [threading.Thread(target=run, args=(o,), daemon=True) for o in offsets0]
    for t in threads:
        t.start()
    return threads, stop


def _crash_once_dirty(srv, c, done, writers):
    """Waits (30 s at most) until `done()` holds and INFO has shown the
    write-back tier holding a dirty key, then kills the server (kill -9),
    joins the writer threads (`writers`: `_write_until_stopped`'s result)
    and starts the server again. Returns whether a dirty key was seen, and
    a client of the restarted server."""
    threads, stop = writers
    saw_dirty = False
    deadline = time.monotonic() + 30
    while (not done() or not saw_dirty) and time.monotonic() < deadline:
        info = c.call("INFO", "stats").decode()
        dirty = [int(l.split(":")[1]) for l in info.split("\r\n") if l.startswith("write_back_dirty_keys:")]
        saw_dirty = saw_dirty or (dirty and dirty[0] > 0)
        time.sleep(0.02)
    c.close()
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    srv.start()
    return saw_dirty, srv.client()


def test_crash_keeps_acknowledged_tier_edits_under_everysec(roaringd_server):
    """TR.SETBIT edits kept by the write-back tier are in its operation log
    before their replies under everysec with `write-before-reply yes`: a
    kill -9 loses none of them."""
    srv = roaringd_server(["--appendfsync", "everysec", "--write-before-reply", "yes"]).start()
    c = srv.client()
    # containers big enough for the tier to take single-bit edits
    assert c.call("TR.SETRANGE", "bm", "0", "999999") == 1000000
    assert c.call("SAVE") == Status(b"OK")
    acked = []

    def step(k, offset0, i):
        off = offset0 + i * 2
        if k.call("TR.SETBIT", "bm", str(off), "0") != 1:
            return False
        acked.append(off)
        return True

    threads, stop = _write_until_stopped(srv, [t * 200000 for t in range(3)], step)
    deadline = time.monotonic() + 30
    while len(acked) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    assert len(acked) > 0
    srv.start()
    c = srv.client()
    got = c.call("TR.GETBITS", "bm", *[str(o) for o in acked])
    lost = [o for o, b in zip(acked, got) if b != 0]
    assert not lost, f"{len(lost)} acknowledged TR.SETBIT lost after kill -9, e.g. {lost[:10]}"
    # the key itself survived (at most one unacknowledged edit per client more)
    assert 1000000 - len(acked) - 3 <= c.call("TR.BITCOUNT", "bm") <= 1000000 - len(acked)
    c.close()


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_crash_keeps_acknowledged_listed_bit_edits(roaringd_server, fsync):
    """TR.CLEARBITS and TR.SETBITS edits of existing containers are kept by
    the write-back tier, each one record of its operation log: under
    `always`, and under everysec with `write-before-reply yes`, a kill -9
    loses none that was acknowledged, and the key's cardinality matches."""
    srv = roaringd_server(["--appendfsync", fsync, "--write-before-reply", "yes"]).start()
    c = srv.client()
    assert c.call("TR.SETRANGE", "bm", "0", "999999") == 1000000
    assert c.call("SAVE") == Status(b"OK")
    cleared, reset, sent = [], [], []

    def step(k, offset0, i):
        offs = [offset0 + i * 10 + j for j in range(5)]
        if k.call("TR.CLEARBITS", "bm", *map(str, offs)) != 5:
            return False
        cleared.append(offs)
        # every third call sets its first two bits again
        if i % 3 == 0:
            sent.append(offs[:2])
            if k.call("TR.SETBITS", "bm", *map(str, offs[:2])) <= 0:
                return False
            reset.append(offs[:2])
        return True

    writers = _write_until_stopped(srv, [1000 + t * 300000 for t in range(3)], step)
    saw_dirty, c = _crash_once_dirty(srv, c, lambda: len(cleared) >= 300, writers)
    assert cleared and saw_dirty
    # bits a SETBITS was sent for (acknowledged or not) are not zeros
    again = {o for offs in sent for o in offs}
    zeros = [o for offs in cleared for o in offs if o not in again]
    ones = [o for offs in reset for o in offs]
    got = c.call("TR.GETBITS", "bm", *map(str, zeros + ones))
    lost = [o for o, b in zip(zeros, got) if b != 0] + [o for o, b in zip(ones, got[len(zeros):]) if b != 1]
    assert not lost, f"{len(lost)} acknowledged edits lost after kill -9, e.g. {lost[:10]}"
    # at most one unacknowledged call per client more: 5 bits cleared, or
    # 2 set again
    want = 1000000 - len(zeros) - sum(1 for offs in sent if offs not in reset for _ in offs)
    assert want - 3 * 5 <= c.call("TR.BITCOUNT", "bm") <= want + 3 * 2
    c.close()


def test_crash_keeps_acknowledged_range_writes_under_always(roaringd_server):
    """TR.FLIPRANGE and TR.SETRANGE on a hot key are one record each of the
    write-back tier's log: under `always` a kill -9 loses none that was
    acknowledged."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    c = srv.client()
    assert c.call("TR.SETRANGE", "bm", "0", "999999") == 1000000
    assert c.call("SAVE") == Status(b"OK")
    flipped, sent = [], []

    def step(k, offset0, i):
        lo = offset0 + i * 10
        # clear 3 bits by a flip; every fourth call sets the first again
        if k.call("TR.FLIPRANGE", "bm", str(lo), str(lo + 2)) <= 0:
            return False
        flipped.append(lo)
        if i % 4 == 0:
            sent.append(lo)
            if k.call("TR.SETRANGE", "bm", str(lo), str(lo)) <= 0:
                return False
        return True

    writers = _write_until_stopped(srv, [1000 + t * 300000 for t in range(3)], step)
    saw_dirty, c = _crash_once_dirty(srv, c, lambda: len(flipped) >= 300, writers)
    assert flipped and saw_dirty
    again = set(sent)
    zeros = [lo + j for lo in flipped for j in range(3) if not (j == 0 and lo in again)]
    got = c.call("TR.GETBITS", "bm", *map(str, zeros))
    lost = [o for o, b in zip(zeros, got) if b != 0]
    assert not lost, f"{len(lost)} acknowledged range writes lost after kill -9, e.g. {lost[:10]}"
    c.close()


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_crash_keeps_acknowledged_bitop_results_and_their_edits(roaringd_server, fsync):
    """TR.BITOP results into existing keys from clean sources are value
    records of the write-back tier's log, held until the log's next flush
    and replaced by the next result into the same key; edits of a result
    follow it. Under `always`, and under everysec with `write-before-reply
    yes`, a kill -9 loses no acknowledged result or edit, and a result
    replaces the edits before it."""
    srv = roaringd_server(["--appendfsync", fsync, "--write-before-reply", "yes"]).start()
    c = srv.client()
    assert c.call("TR.SETRANGE", "base", "0", "99999") == 100000
    for t in range(3):
        # two fixed sources, told apart by bit 300000 or 300001; the
        # destination exists, so the tier takes the results
        assert c.call("TR.SETBITS", f"a{t}", "300000") == 1
        assert c.call("TR.SETBITS", f"b{t}", "300001") == 1
        assert c.call("TR.SETBIT", f"d{t}", "1", "1") == 0
    assert c.call("SAVE") == Status(b"OK")
    # per writer: [kind, argument, acknowledged] in the order sent
    log = {t: [] for t in range(3)}

    def step(k, t, i):
        src = "ab"[i % 2]
        for kind, arg, cmd in [("bitop", src, ("TR.BITOP", f"d{t}", "OR", f"{src}{t}", "base")),
                               ("edit", 110000 + i, ("TR.SETBIT", f"d{t}", str(110000 + i), "1"))]:
            log[t].append([kind, arg, False])
            if not isinstance(k.call(*cmd), int):
                return False
            log[t][-1][2] = True
        return True

    writers = _write_until_stopped(srv, range(3), step)
    saw_dirty, c = _crash_once_dirty(
        srv, c, lambda: all(sum(1 for e in log[t] if e[0] == "bitop") >= 50 for t in range(3)), writers)
    assert saw_dirty
    for t in range(3):
        ops = log[t]
        last = max(i for i, e in enumerate(ops) if e[0] == "bitop" and e[2])
        inflight = ops[-1] if not ops[-1][2] else None
        # the state of the last acknowledged result, with its acknowledged
        # edits; or, when the call in flight was a result, maybe that one
        states = [(ops[last][1], [e[1] for e in ops[last + 1:] if e[0] == "edit" and e[2]])]
        if inflight and inflight[0] == "bitop":
            states.append((inflight[1], []))
        edits = [e[1] for e in ops if e[0] == "edit"]
        got = c.call("TR.GETBITS", f"d{t}", "300000", "300001", *map(str, edits))
        have = {"a": got[0], "b": got[1]}
        ones = {o for o, b in zip(edits, got[2:]) if b == 1}
        assert any(have == {"a": int(src == "a"), "b": int(src == "b")} and ones - {inflight and inflight[1]} <= set(kept) <= ones
                   for src, kept in states), (f"d{t} after kill -9: result bits {have}, edits {sorted(ones)[-5:]}; "
                                              f"expected one of {[(s, k[-5:]) for s, k in states]}")
    c.close()


def _dirty_keys(c):
    info = c.call("INFO", "stats").decode()
    return next(int(l.split(":")[1]) for l in info.split("\r\n") if l.startswith("write_back_dirty_keys:"))


def _always_with_saved_bm(roaringd_server):
    """A server under `appendfsync always` whose key `bm` holds bits
    0..999999, saved; and a client of it."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    c = srv.client()
    assert c.call("TR.SETRANGE", "bm", "0", "999999") == 1000000
    assert c.call("SAVE") == Status(b"OK")
    return srv, c


def _killed_keeps_cleared(srv, c, key, acked, card):
    """Kills the server (kill -9) and starts it again; every offset of
    `acked` in `key` must read 0 and the key hold `card` bits. Returns a
    client of the restarted server."""
    c.close()
    srv.kill()
    srv.start()
    c = srv.client()
    assert c.call("TR.GETBITS", key, *map(str, acked)) == [0] * len(acked)
    assert c.call("TR.BITCOUNT", key) == card
    return c


def test_tier_edits_of_a_key_with_a_ttl_survive_kill_and_expire_whole(roaringd_server):
    """The write-back tier keeps TR.SETBIT edits of a key with a TTL like
    any other: under `always` a kill -9 loses none that was acknowledged
    and the TTL stays. A key that expires while dirty is gone for good:
    no checkpoint and no restart writes it back."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    c = srv.client()
    for key in ("bm", "short"):
        assert c.call("TR.SETRANGE", key, "0", "99999") == 100000
    assert c.call("EXPIRE", "bm", "100000") == 1
    assert c.call("SAVE") == Status(b"OK")
    acked = list(range(10, 5000, 7))
    for off in acked:
        assert c.call("TR.SETBIT", "bm", str(off), "0") == 1
    assert _dirty_keys(c) == 1
    c = _killed_keeps_cleared(srv, c, "bm", acked, 100000 - len(acked))
    assert 0 < c.call("TTL", "bm") <= 100000
    # expires while dirty: read by the tier's own commands (or removed by
    # the active expiry) until it is gone, then a checkpoint and a crash
    assert c.call("PEXPIRE", "short", "2000") == 1
    assert c.call("TR.SETBIT", "short", "5", "0") == 1
    assert _dirty_keys(c) == 1
    deadline = time.monotonic() + 30
    while c.call("TR.BITCOUNT", "short") != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert c.call("TR.GETBIT", "short", "6") == 0
    assert _dirty_keys(c) == 0
    assert c.call("SAVE") == Status(b"OK")
    assert c.call("EXISTS", "short") == 0
    c.close()
    srv.kill()
    srv.start()
    c = srv.client()
    assert c.call("EXISTS", "short") == 0
    assert c.call("DBSIZE") == 1
    assert c.call("TR.BITCOUNT", "bm") == 100000 - len(acked)
    c.close()


def test_exec_keeps_tier_edits_and_survives_kill(roaringd_server):
    """An EXEC of the write-back tier's commands leaves its edits dirty,
    as a pipeline group does: its records go into its commit's batch. A
    TR.GETBIT in it sees the edits before it, a command that reads more of
    the key (TR.RANGE) writes it back first and sees them too, and under
    `always` a kill -9 loses no acknowledged EXEC."""
    srv, c = _always_with_saved_bm(roaringd_server)
    acked = []
    for i in range(20):
        assert c.call("TR.SETBIT", "bm", str(500000 + i), "0") == 1
        acked.append(500000 + i)
        offs = [1000 + i * 100 + j * 3 for j in range(10)]
        assert c.call("MULTI") == Status(b"OK")
        for o in offs:
            assert c.call("TR.SETBIT", "bm", str(o), "0") == Status(b"QUEUED")
        assert c.call("TR.GETBIT", "bm", str(500000 + i)) == Status(b"QUEUED")
        assert c.call("TR.GETBIT", "bm", str(offs[0])) == Status(b"QUEUED")
        assert c.call("EXEC") == [1] * 10 + [0, 0]
        acked += offs
        assert _dirty_keys(c) == 1
    assert c.call("MULTI") == Status(b"OK")
    assert c.call("TR.SETBIT", "bm", "999", "0") == Status(b"QUEUED")
    assert c.call("TR.RANGE", "bm", "995", "999") == Status(b"QUEUED")
    assert c.call("EXEC") == [1, [995, 996, 997, 998]]
    acked.append(999)
    assert _dirty_keys(c) == 0
    _killed_keeps_cleared(srv, c, "bm", acked, 1000000 - len(acked)).close()


def _until_killed(srv, errors, body):
    """Runs `body(client)` on a new client of `srv` until the server dies:
    a closed connection ends it, a failed assertion goes to `errors`."""
    c = srv.client()
    try:
        body(c)
    except (ConnectionClosed, OSError):
        pass
    except AssertionError as e:
        errors.append(e)
    finally:
        c.close()


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_exec_of_tier_edits_survives_kill_whole(roaringd_server, fsync):
    """EXECs that each clear the same bits of two dirty keys (their
    records in their own commits' batches) run while another client's
    writes make the server sync or hand its log to the OS at any moment,
    and a kill -9 comes in the middle of them: afterwards the two keys
    agree bit for bit (no EXEC survives in part), and under `always` every
    acknowledged EXEC survives."""
    srv = roaringd_server(["--appendfsync", fsync]).start()
    c = srv.client()
    for key in ("a", "b"):
        assert c.call("TR.SETRANGE", key, "0", "199999") == 200000
    assert c.call("SAVE") == Status(b"OK")
    c.close()
    for rnd in range(5):
        stop = threading.Event()
        acked, errors = [], []

        def sets(o):
            i = 0
            while not stop.is_set():
                i += 1
                assert o.call("SET", f"s{i % 100}", str(i)) == Status(b"OK")

        def execs(e):
            bit = 1 + rnd * 40000
            while not stop.is_set() and bit < (rnd + 1) * 40000 - 30:
                offs = [bit + 3 * j for j in range(8)]
                cmds = [("MULTI",)] + [("TR.SETBIT", k, str(o), "0") for o in offs for k in ("a", "b")] + [("EXEC",)]
                got = e.pipeline(cmds)
                assert got[-1] == [1] * (2 * len(offs)), got[-1]
                acked.extend(offs)
                bit = offs[-1] + 3

        threads = [threading.Thread(target=_until_killed, args=(srv, errors, f), daemon=True) for f in (sets, execs)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acked) < 4000 + 1500 * rnd and time.monotonic() < deadline and not errors:
            time.sleep(0.01)
        srv.kill()
        stop.set()
        for t in threads:
            t.join(30)
        assert not errors and acked, errors
        srv.start()
        c = srv.client()
        assert c.call("TR.BITOP", "x", "XOR", "a", "b") == 0, "an EXEC survived in part"
        if fsync == "always":
            assert c.call("TR.GETBITS", "a", *map(str, acked)) == [0] * len(acked)
        c.close()


def test_mixed_pipelines_keep_tier_edits_and_survive_kill(roaringd_server):
    """A pipeline that mixes the write-back tier's commands with others
    keeps the tier's edits dirty; a command that reads more of
    a dirty key (TR.RANGE) sees the edits before it and writes the key
    back first. Under `always` a kill -9 loses nothing acknowledged."""
    srv, c = _always_with_saved_bm(roaringd_server)
    acked = []
    for i in range(30):
        offs = [1000 + i * 100 + j for j in range(0, 30, 3)]
        cmds = [("TR.SETBIT", "bm", str(o), "0") for o in offs]
        got = c.pipeline(cmds + [("SET", f"s{i}", str(i)), ("INCR", "n"), ("TR.GETBIT", "bm", str(offs[0]))])
        assert got == [1] * len(offs) + [Status(b"OK"), i + 1, 0]
        acked += offs
        assert _dirty_keys(c) == 1
    # TR.RANGE in the same pipeline sees the edit before it
    got = c.pipeline([("TR.SETBIT", "bm", "999", "0"), ("TR.RANGE", "bm", "995", "999")])
    assert got == [1, [995, 996, 997, 998]]
    acked.append(999)
    assert _dirty_keys(c) == 0
    assert c.call("TR.SETBIT", "bm", "500", "0") == 1
    acked.append(500)
    assert c.call("SET", "x", "1") == Status(b"OK")
    assert _dirty_keys(c) == 1
    c = _killed_keeps_cleared(srv, c, "bm", acked, 1000000 - len(acked))
    assert c.call("GET", "n") == b"30"
    assert c.call("GET", "x") == b"1"
    c.close()


def test_expire_of_a_dirty_key_keeps_it_dirty_and_survives_kill(roaringd_server):
    """EXPIRE, PEXPIRE, PERSIST, TTL and TYPE work on a key the write-back
    tier holds dirty without writing it back, pipelined with TR.SETBIT
    (the idiom of a bitmap whose TTL each write renews) or alone; under
    `always` a kill -9 loses no acknowledged edit and keeps the last
    acknowledged expire time. An EXPIRE in the past deletes the key for
    good."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    c = srv.client()
    for key in ("bm", "gone"):
        assert c.call("TR.SETRANGE", key, "0", "99999") == 100000
    assert c.call("SAVE") == Status(b"OK")
    acked = []
    for i in range(20):
        offs = [10 + i * 50 + j * 5 for j in range(5)]
        cmds = [cmd for o in offs for cmd in (("TR.SETBIT", "bm", str(o), "0"), ("EXPIRE", "bm", str(1000 + i)))]
        got = c.pipeline(cmds + [("TTL", "bm"), ("TYPE", "bm")])
        assert got[:-2] == [1, 1] * len(offs)
        assert got[-2] == 1000 + i and got[-1] == c.call("TYPE", "gone")
        acked += offs
        assert _dirty_keys(c) == 1
    assert c.call("PERSIST", "bm") == 1
    assert c.call("TTL", "bm") == -1
    assert c.call("PEXPIRE", "bm", "5000000") == 1
    assert _dirty_keys(c) == 1
    # an EXPIRE in the past deletes a dirty key, dirty state and all
    assert c.call("TR.SETBIT", "gone", "3", "0") == 1
    assert c.call("EXPIRE", "gone", "-1") == 1
    assert c.call("EXISTS", "gone") == 0
    assert c.call("SAVE") == Status(b"OK")
    assert c.call("TR.SETBIT", "bm", "7", "0") == 1
    acked.append(7)
    assert _dirty_keys(c) == 1
    c = _killed_keeps_cleared(srv, c, "bm", acked, 100000 - len(acked))
    assert 4990 <= c.call("TTL", "bm") <= 5000
    assert c.call("EXISTS", "gone") == 0
    assert c.call("DBSIZE") == 1
    c.close()


def _tier(c):
    info = c.call("INFO", "memory").decode()
    return {k: int(v) for k, v in (l.split(":", 1) for l in info.split("\r\n") if l.startswith("tier_"))}


def test_crash_while_the_memory_tier_evicts(roaringd_server):
    """kill -9 under load while the memory tier evicts on almost every write
    (`maxmemory 1mb`: the tier keeps its 1 MiB floor), `appendfsync always`:
    no acknowledged write is lost, and the restarted server, under the same
    bound, serves a store far larger than its tier."""
    srv = roaringd_server(["--appendfsync", "always", "--maxmemory", "1mb"]).start()
    writers = [Writer(srv.port, t) for t in range(4)]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 60
    c = srv.client()
    while time.monotonic() < deadline and _tier(c)["tier_evicted_keys"] < 200:
        time.sleep(0.05)
    assert _tier(c)["tier_evicted_keys"] > 0
    c.close()
    srv.kill()
    for w in writers:
        w.join(30)
    srv.start()
    c = srv.client()
    verify_writers(c, writers)
    c.close()


def test_restart_with_a_store_many_times_the_tier(roaringd_server):
    """About 6 MB of strings, sets and hashes behind a 1 MiB tier: every key
    reads back right after a restart (cold) and again (warm)."""
    srv = roaringd_server(["--maxmemory", "1mb"]).start()
    c = srv.client()
    for i in range(300):
        c.call("SET", f"s{i}", f"{i}" * 1000)
        c.call("SADD", f"set{i}", *[f"m{j}" for j in range(50)])
        c.call("HSET", f"h{i}", *[x for j in range(20) for x in (f"f{j}", f"v{i}.{j}")])
    assert _tier(c)["tier_evicted_keys"] > 0
    c.close()
    srv.restart()
    c = srv.client()
    for _ in range(2):
        for i in range(300):
            assert c.call("GET", f"s{i}") == (f"{i}" * 1000).encode()
            assert len(_members(c, f"set{i}")) == 50
            assert c.call("HGET", f"h{i}", "f7") == f"v{i}.7".encode()
    assert _tier(c)["tier_resident_bytes"] <= _tier(c)["tier_budget_bytes"] + 64 * 1024
    c.close()


@pytest.mark.roaringd_only
def test_pipelined_commands_on_cold_keys_from_many_clients(roaringd_server):
    """After a restart behind a 1 MiB tier, every key is cold: each request
    has its keys read in off the connection worker before it runs
    (`Store::warm`). Four clients pipeline reads and writes over strings,
    sets and bitmaps at once; every reply is the one its place in the
    pipeline asks for, and the writes read back."""
    srv = roaringd_server(["--maxmemory", "1mb"]).start()
    c = srv.client()
    rnd = random.Random(5)
    bits = {}
    for i in range(400):
        c.call("SET", f"s{i}", f"{i}" * 500)
        c.call("SADD", f"set{i}", *[f"m{j}" for j in range(i % 40 + 1)])
        bits[i] = sorted({rnd.randrange(10_000_000) for _ in range(100)})
        c.call("TR.SETBITS", f"bm{i}", *map(str, bits[i]))
    c.close()
    srv.restart()
    errors = []

    def client(t):
        try:
            cc = srv.client()
            r = random.Random(t)
            for _ in range(10):
                cmds, want = [], []
                for _ in range(40):
                    i = r.randrange(400)
                    kind = r.randrange(4)
                    if kind == 0:
                        cmds.append(("GET", f"s{i}"))
                        want.append(None)  # written by other clients too
                    elif kind == 1:
                        cmds.append(("SCARD", f"set{i}"))
                        want.append(i % 40 + 1)
                    elif kind == 2:
                        cmds.append(("TR.GETBIT", f"bm{i}", str(bits[i][r.randrange(100)])))
                        want.append(1)
                    else:
                        v = f"t{t}-{i}"
                        cmds += [("SET", f"x{t}-{i}", v), ("GET", f"x{t}-{i}")]
                        want += [Status(b"OK"), v.encode()]
                for got, exp, cmd in zip(cc.pipeline(cmds), want, cmds):
                    if exp is None:
                        ok = got == (cmd[1][1:] * 500).encode()
                    else:
                        ok = got == exp
                    if not ok:
                        errors.append((cmd, got, exp))
            cc.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors[:5]
    c = srv.client()
    assert _tier(c)["tier_misses"] > 0
    assert c.call("GET", "s7") == b"7" * 500
    c.close()


def _portable_bytes(bits):
    """Size of the portable Roaring serialization of `bits` (array and bitset
    containers, no runs: the layout CRoaring writes for random ids)."""
    blocks = {}
    for b in bits:
        blocks[b >> 16] = blocks.get(b >> 16, 0) + 1
    payload = sum(8192 if n > 4096 else 2 * n for n in blocks.values())
    return 8 + 8 * len(blocks) + payload


@pytest.mark.roaringd_only
def test_packed_bitmap_pages_survive_edits_restart_compaction_and_kill(roaringd_server):
    """Sparse bitmaps (small containers in packed pages) edited bit by bit,
    by ranges and by TR.BITOP into existing keys read back exactly after a
    clean restart, a full compaction and a kill -9 under `appendfsync
    always`; their tables on disk stay within twice the portable
    serialization's size."""
    srv = roaringd_server(["--appendfsync", "always", "--enable-debug-command", "local"]).start()
    c = srv.client()
    rnd = random.Random(21)
    model = {}
    for i in range(400):
        bits = {rnd.randrange(10_000_000) for _ in range(100)}
        model[f"k{i}"] = bits
        c.call("TR.SETBITS", f"k{i}", *map(str, bits))
    for _ in range(3000):
        k = f"k{rnd.randrange(400)}"
        r = rnd.random()
        if r < 0.5:
            off = rnd.randrange(10_000_000)
            on = rnd.random() < 0.7
            c.call("TR.SETBIT", k, str(off), "1" if on else "0")
            (model[k].add if on else model[k].discard)(off)
        elif r < 0.8 and model[k]:
            off = rnd.choice(sorted(model[k]))
            c.call("TR.CLEARBITS", k, str(off))
            model[k].discard(off)
        elif r < 0.9:
            start = rnd.randrange(10_000_000)
            c.call("TR.SETRANGE", k, str(start), str(start + 700))
            model[k].update(range(start, start + 701))
        else:
            a, b = f"k{rnd.randrange(400)}", f"k{rnd.randrange(400)}"
            c.call("TR.BITOP", k, "OR", a, b)
            model[k] = model[a] | model[b]

    def verify():
        for k, bits in model.items():
            assert c.call("TR.RANGE", k, "0", "4294967295") == sorted(bits), k
            assert c.call("TR.BITCOUNT", k) == len(bits), k

    verify()
    c.close()
    srv.restart()
    c = srv.client()
    verify()
    assert c.call("DEBUG", "COMPACT") == Status(b"OK")
    verify()
    info = dict(l.split(":", 1) for l in c.call("INFO", "storage").decode().split("\r\n") if ":" in l)
    tables = int(info["lsm_disk_bytes"])
    portable = sum(_portable_bytes(b) for b in model.values())
    assert 0 < tables < 2 * portable, (tables, portable)
    for i in range(200):
        k = f"k{i}"
        off = rnd.randrange(10_000_000)
        c.call("TR.SETBIT", k, str(off), "1")
        model[k].add(off)
    c.close()
    srv.kill()
    srv.start()
    c = srv.client()
    verify()
    c.close()
