"""Differential tests: MULTI / EXEC / DISCARD / WATCH / UNWATCH."""

import time

import pytest

from diff import run_script, sleep
from resp_client import NIL_ARRAY

SCENARIOS = {
    "basic": ["MULTI", "SET a 1", "INCR a", "GET a", "SADD s x", "SMEMBERS s", "HSET h f v", "HGETALL h", "EXEC",
              "GET a"],
    "empty_exec": ["MULTI", "EXEC"],
    "discard": ["SET a 1", "MULTI", "SET a 2", "INCR a", "DISCARD", "GET a", "DISCARD", "EXEC"],
    "exec_without_multi": ["EXEC", "DISCARD"],
    "nested_multi": ["MULTI", "SET a 1", "MULTI", "GET a", "EXEC", "GET a"],
    "runtime_error_inside": ["SET s str", "MULTI", "SET a 1", "SADD s x", "INCR a", "INCR s", "EXEC", "GET a"],
    "queue_error_aborts": ["MULTI", "SET a 1", "NOSUCHCOMMAND x", "SET b 2", "EXEC", "EXISTS a b"],
    "arity_error_aborts": ["MULTI", "SET a 1", "GET", "EXEC", "EXISTS a"],
    "arity_error_then_discard": ["MULTI", "SET a 1", "SET a", "DISCARD", "EXISTS a", "PING"],
    "exec_with_args": ["MULTI", "SET a 1", "EXEC x", "GET a", "EXEC", "MULTI", "SET b 1", "DISCARD x", "EXEC",
                       "GET b", "MULTI x", "EXEC"],
    "watch_inside_multi": ["MULTI", "WATCH a", "SET a 1", "EXEC", "GET a"],
    "watch_own_change_aborts": ["WATCH a", "SET a 1", "MULTI", "SET a 2", "EXEC", "GET a"],
    "watch_no_change": ["SET a 1", "WATCH a", "MULTI", "INCR a", "EXEC", "GET a"],
    "watch_missing_key_created": ["WATCH nokey", "SET nokey 1", "MULTI", "PING", "EXEC"],
    "unwatch": ["WATCH a", "SET a 1", "UNWATCH", "MULTI", "SET a 2", "EXEC", "GET a", "UNWATCH"],
    "watch_cleared_by_exec": ["WATCH a", "MULTI", "EXEC", "SET a 5", "MULTI", "GET a", "EXEC"],
    "watch_cleared_by_discard": ["WATCH a", "MULTI", "DISCARD", "SET a 5", "MULTI", "GET a", "EXEC"],
    "watch_arity": ["WATCH", "UNWATCH x"],
    "multi_select": ["MULTI", "SELECT 1", "SET a db1", "SELECT 0", "GET a", "EXEC", "SELECT 1", "GET a",
                     "SELECT 0"],
    "multi_expire_ttl": ["MULTI", "SET a 1", "EXPIRE a 100", "TTL a", "PERSIST a", "TTL a", "EXEC"],
    "multi_flushall": ["SET a 1", "MULTI", "FLUSHALL", "SET b 2", "DBSIZE", "EXEC", "DBSIZE"],
    "multi_unordered_replies": ["SADD s a b c", "HSET h x 1 y 2", "MULTI", "SMEMBERS s", "HGETALL h", "KEYS *",
                                "SRANDMEMBER s 2", "HKEYS h", "EXEC"],
    "multi_ping_echo": ["MULTI", "PING", "PING hi", "ECHO x", "EXEC"],
    "multi_wrongtype_keeps_going": ["SET s v", "MULTI", "SADD s a", "SET t 1", "HSET s f v", "INCRBY t 2", "EXEC",
                                    "GET t"],
    "watch_expired_key": ["SET a 1 PX 600", "WATCH a", sleep(0.9), "MULTI", "GET a", "EXEC"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


def test_watch_other_client_aborts(ppair):
    p2 = ppair.other()
    ppair("SET", "k", "1")
    ppair("WATCH", "k")
    p2("SET", "k", "2")
    ppair("MULTI")
    ppair("SET", "k", "3")
    r = ppair("EXEC")
    assert r is NIL_ARRAY or r is None
    ppair("GET", "k")


def test_watch_other_client_other_key(ppair):
    p2 = ppair.other()
    ppair("WATCH", "k")
    p2("SET", "other", "2")
    ppair("MULTI")
    ppair("SET", "k", "3")
    ppair("EXEC")
    ppair("GET", "k")


@pytest.mark.parametrize("change", [("DEL", "k"), ("EXPIRE", "k", "100"), ("SADD", "s", "z"), ("HSET", "h", "f", "v2"),
                                    ("RENAME", "k", "k2"), ("FLUSHDB",), ("FLUSHALL",), ("INCR", "k"),
                                    ("APPEND", "k", "x"), ("SREM", "s", "a"), ("PERSIST", "k"), ("SPOP", "s"),
                                    ("SMOVE", "s", "s2", "a"), ("HDEL", "h", "f"), ("SETRANGE", "k", "0", "9"),
                                    ("SUNIONSTORE", "k", "s")],
                         ids=lambda c: "_".join(c))
def test_watch_touched_by(pair, change):
    p2 = pair.other()
    pair.seq([("SET", "k", "1"), ("SADD", "s", "a"), ("HSET", "h", "f", "v")])
    pair("WATCH", "k", "s", "h")
    p2(*change)
    pair("MULTI")
    pair("PING")
    pair("EXEC")


@pytest.mark.parametrize("change", [("GET", "k"), ("SET", "k2", "x"), ("PERSIST", "k"), ("SREM", "s", "nope"),
                                    ("HDEL", "h", "nope"), ("EXPIRE", "nokey", "10"), ("DEL", "nokey")],
                         ids=lambda c: "_".join(c))
def test_watch_not_touched_by(pair, change):
    p2 = pair.other()
    pair.seq([("SET", "k", "1"), ("SADD", "s", "a"), ("HSET", "h", "f", "v")])
    pair("WATCH", "k", "s", "h", "nokey")
    p2(*change)
    pair("MULTI")
    pair("PING")
    pair("EXEC")


def test_watch_other_db(pair):
    p2 = pair.other()
    pair("WATCH", "k")
    p2("SELECT", "1")
    p2("SET", "k", "x")
    pair("MULTI")
    pair("PING")
    pair("EXEC")


def test_multi_is_atomic_to_other_clients(pair):
    """Another client never sees a half-applied transaction (checked on each server)."""
    import threading
    for side, c in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        c.call("MSET", "x", "0", "y", "0")
        stop = threading.Event()
        bad = []

        errors = []

        def reader():
            try:
                rc = srv.client()
            except Exception as e:  # noqa: BLE001
                errors.append(e)
                return
            try:
                while not stop.is_set():
                    r = rc.call("MGET", "x", "y")
                    assert isinstance(r, list) and len(r) == 2, r
                    if r[0] != r[1]:
                        bad.append(tuple(r))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            finally:
                rc.close()

        t = threading.Thread(target=reader)
        t.start()
        try:
            for i in range(300):
                c.call("MULTI")
                c.call("INCR", "x")
                c.call("INCR", "y")
                r = c.call("EXEC")
                assert r == [i + 1, i + 1], (side, r)
        finally:
            stop.set()
            t.join()
        assert not errors, f"{side}: reader failed: {errors[0]!r}"
        assert not bad, f"{side}: saw non-atomic states {bad[:5]}"


def test_pipelined_transaction(pair):
    pair.pipeline([("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("EXEC",), ("GET", "a")])
