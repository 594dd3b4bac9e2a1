"""Concurrency invariants, checked on each server (Redis validates the checks):
multi-key commands are atomic with respect to other clients, read-modify-write
commands lose no update, and keys moved between clients never duplicate or vanish."""

import random
import threading

import pytest

from conftest import ServerPairState
from resp_client import Err, RSet, Status


@pytest.fixture(scope="module")
def servers():
    """The pair for this module: roaringd with more workers than the machine
    has cores (its default is half the cores, one on 2 cores), so that the
    clients' commands really run in parallel."""
    st = ServerPairState(roaringd_args=["--io-threads", "4"])
    st.ensure()
    yield st
    st.close()


def run_threads(fns, seconds_of_work=None):
    errors = []

    def wrap(f):
        def g():
            try:
                f()
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        return g

    ts = [threading.Thread(target=wrap(f)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors[0]


def servers_of(servers):
    servers.reset()
    return [servers.roaringd, servers.redis]


def test_concurrent_incr(servers):
    for srv in servers_of(servers):
        def work():
            c = srv.client()
            for _ in range(300):
                c.call("INCR", "n")
                c.call("HINCRBY", "h", "f", "2")
                c.call("INCRBYFLOAT", "fl", "0.5")
            c.close()
        run_threads([work] * 4)
        c = srv.client()
        assert c.call("GET", "n") == b"1200", srv.kind
        assert c.call("HGET", "h", "f") == b"2400", srv.kind
        assert c.call("GET", "fl") == b"600", srv.kind
        c.close()


def test_concurrent_append_and_sadd(servers):
    for srv in servers_of(servers):
        def work(t):
            def f():
                c = srv.client()
                for i in range(200):
                    c.call("APPEND", "log", "x")
                    c.call("SADD", "set", f"{t}:{i}")
                    c.call("HSET", "hash", f"{t}:{i}", "v")
                c.close()
            return f
        run_threads([work(t) for t in range(4)])
        c = srv.client()
        assert c.call("STRLEN", "log") == 800 and c.call("SCARD", "set") == 800 and c.call("HLEN", "hash") == 800
        c.close()


def test_mset_is_atomic(servers):
    """A reader's MGET never sees half of another client's MSET."""
    for srv in servers_of(servers):
        stop = threading.Event()
        bad = []

        def writer():
            c = srv.client()
            for i in range(500):
                v = str(i)
                assert c.call("MSET", "a", v, "b", v, "c", v) == Status(b"OK")
            stop.set()
            c.close()

        def reader():
            c = srv.client()
            while not stop.is_set():
                r = c.call("MGET", "a", "b", "c")
                if len(set(r)) != 1:
                    bad.append(r)
            c.close()

        run_threads([writer, reader, reader])
        assert not bad, (srv.kind, bad[:3])


def test_rename_is_atomic(servers):
    """While a key is renamed back and forth, EXISTS over both names is always 1."""
    for srv in servers_of(servers):
        c = srv.client()
        c.call("SADD", "x", *range(50))
        c.close()
        stop = threading.Event()
        bad = []

        def writer():
            c = srv.client()
            for _ in range(300):
                assert c.call("RENAME", "x", "y") == Status(b"OK")
                assert c.call("RENAME", "y", "x") == Status(b"OK")
            stop.set()
            c.close()

        def reader():
            c = srv.client()
            while not stop.is_set():
                n = c.call("EXISTS", "x", "y")
                if n != 1:
                    bad.append(n)
            c.close()

        run_threads([writer, reader])
        assert not bad, (srv.kind, bad[:5])


def test_smove_conserves_members(servers):
    """Members moved concurrently between sets are never lost or duplicated."""
    for srv in servers_of(servers):
        c = srv.client()
        members = [str(i) for i in range(60)]
        c.call("SADD", "s0", *members)
        c.close()
        stop = threading.Event()
        bad = []

        def mover(seed):
            def f():
                r = random.Random(seed)
                c = srv.client()
                for _ in range(400):
                    a, b = r.sample(["s0", "s1", "s2"], 2)
                    c.call("SMOVE", a, b, r.choice(members))
                c.close()
            return f

        def checker():
            c = srv.client()
            while not stop.is_set():
                c.call("MULTI")
                c.call("SCARD", "s0")
                c.call("SCARD", "s1")
                c.call("SCARD", "s2")
                r = c.call("EXEC")
                if sum(r) != 60:
                    bad.append(r)
                n = c.call("SINTERCARD", "2", "s0", "s1")
                if n != 0:
                    bad.append(("overlap", n))
            c.close()

        def movers():
            run_threads([mover(s) for s in range(3)])
            stop.set()

        run_threads([movers, checker])
        c = srv.client()
        u = c.call("SUNION", "s0", "s1", "s2")
        u = u.items if isinstance(u, RSet) else u
        assert sorted(u) == sorted(m.encode() for m in members), srv.kind
        assert c.call("SCARD", "s0") + c.call("SCARD", "s1") + c.call("SCARD", "s2") == 60
        assert not bad, (srv.kind, bad[:5])
        c.close()


def test_setnx_lock_has_one_winner(servers):
    for srv in servers_of(servers):
        for round_ in range(20):
            wins = []

            def contender(t):
                def f():
                    c = srv.client()
                    if c.call("SET", f"lock{round_}", str(t), "NX", "EX", "100") == Status(b"OK"):
                        wins.append(t)
                    c.close()
                return f

            run_threads([contender(t) for t in range(6)])
            assert len(wins) == 1, (srv.kind, round_, wins)


def test_transactions_serialise(servers):
    """Concurrent MULTI/EXEC blocks touching the same keys never interleave."""
    for srv in servers_of(servers):
        c = srv.client()
        c.call("MSET", "p", "0", "q", "0")
        c.close()

        def worker():
            c = srv.client()
            for _ in range(150):
                c.call("MULTI")
                c.call("INCR", "p")
                c.call("INCR", "q")
                c.call("GET", "p")
                c.call("GET", "q")
                r = c.call("EXEC")
                assert r[2] == r[3], (srv.kind, r)
            c.close()

        run_threads([worker] * 4)
        c = srv.client()
        assert c.call("MGET", "p", "q") == [b"600", b"600"], srv.kind
        c.close()


def test_big_transaction(pair):
    cmds = [("MULTI",)] + [("INCR", "ctr") for _ in range(2000)] + [("SADD", "s", str(i)) for i in range(500)] + [("EXEC",)]
    pair.pipeline(cmds)
    pair("GET", "ctr")
    pair("SCARD", "s")
