"""Differential tests: generic keyspace commands."""

import time

import pytest

from diff import members, run_script, sleep
from resp_client import Err

BIN = b"\x00\xff\x80bin\r\nkey"


def _now():
    return int(time.time())


def populate(p):
    p.seq([("SET", "str", "v"), ("SET", "num", "12"), ("SADD", "set", "a", "b", "c"),
           ("HSET", "hash", "f1", "v1", "f2", "v2"), ("SET", BIN, b"\xff\xfe"), ("SET", "tmp", "x", "EX", "500")])


SCENARIOS = {
    "del_unlink": [populate, "DEL str", "DEL str", "DEL set hash nokey", "UNLINK num nokey", "DEL", "UNLINK",
                   ("DEL", BIN, BIN), "DBSIZE", "KEYS *"],
    "exists": [populate, "EXISTS str", "EXISTS nokey", "EXISTS str str set nokey", ("EXISTS", BIN), "EXISTS"],
    "type": [populate, "TYPE str", "TYPE num", "TYPE set", "TYPE hash", "TYPE nokey", "TYPE", "TYPE a b"],
    "expire_basic": [populate, "EXPIRE str 100", "TTL str", "PTTL str", "EXPIRE nokey 100", "TTL nokey",
                     "PTTL nokey", "TTL num", "PTTL num", "PEXPIRE num 100000", "PTTL num", "TTL num",
                     "EXPIRE set 100", "TTL set", "EXPIRE hash 100", "TTL hash", "EXPIRE str abc", "EXPIRE str",
                     "EXPIRE str 10 FOO", "PEXPIRE str 1.5"],
    "expire_overflow": [populate, "EXPIRE str 9223372036854775807", "PEXPIRE str 9223372036854775807",
                        "EXPIREAT str 9223372036854775807", "PEXPIREAT str 9223372036854775807",
                        "EXPIRE str 9223372036854775", "EXPIRE str -9223372036854775808", "EXISTS str",
                        "PEXPIRE num -9223372036854775808", "EXISTS num", "EXPIRE set 99999999999999999999",
                        "SET k v EX 9223372036854775807", "SET k v PX 9223372036854775807", "SETEX k 9223372036854775807 v",
                        "PSETEX k 9223372036854775807 v", "GETEX hash EX 9223372036854775807",
                        "SET k v EX 4611686018427387", "SET k v EXAT 9223372036854775807", "TTL k", "EXISTS k"],
    "expireat": [populate, lambda p: p("EXPIREAT", "str", str(_now() + 100)), "TTL str",
                 lambda p: p("PEXPIREAT", "num", str(_now() * 1000 + 100000)), "PTTL num",
                 "EXPIRETIME str", "PEXPIRETIME num", "EXPIRETIME set", "EXPIRETIME nokey", "PEXPIRETIME nokey",
                 "PEXPIRETIME set", "EXPIREAT set 1", "EXISTS set", "PEXPIREAT hash 1000", "EXISTS hash",
                 "EXPIREAT nokey 1", "EXPIREAT str abc"],
    "expire_nonpositive_deletes": [populate, "EXPIRE str 0", "EXISTS str", "EXPIRE num -1", "EXISTS num",
                                   "PEXPIRE set 0", "EXISTS set", "PEXPIRE hash -100", "EXISTS hash", "DBSIZE"],
    "expire_nx_xx_gt_lt": [populate, "EXPIRE str 100 XX", "TTL str", "EXPIRE str 100 NX", "TTL str",
                           "EXPIRE str 200 NX", "TTL str", "EXPIRE str 300 XX", "TTL str",
                           "EXPIRE str 100 GT", "TTL str", "EXPIRE str 400 GT", "TTL str",
                           "EXPIRE str 500 LT", "TTL str", "EXPIRE str 50 LT", "TTL str",
                           "EXPIRE num 100 GT", "TTL num", "EXPIRE num 100 LT", "TTL num",
                           "EXPIRE str 10 NX XX", "EXPIRE str 10 GT LT", "EXPIRE str 10 NX GT", "EXPIRE str 10 XX GT",
                           "PEXPIRE set 100000 NX", "PEXPIRE set 200000 NX", "PTTL set",
                           lambda p: p("EXPIREAT", "hash", str(_now() + 100), "NX"), "TTL hash",
                           lambda p: p("PEXPIREAT", "hash", str(_now() * 1000 + 50000), "LT"), "TTL hash",
                           "EXPIRE nokey 10 NX", "EXPIRE str 10 FOO"],
    "persist": [populate, "PERSIST str", "PERSIST nokey", "PERSIST tmp", "TTL tmp", "PERSIST tmp", "GET tmp",
                "PERSIST", "EXPIRE set 100", "PERSIST set", "TTL set"],
    "rename": [populate, "RENAME str str2", "GET str2", "EXISTS str", "RENAME nokey x", "RENAME tmp tmp2",
               "TTL tmp2", "EXISTS tmp", "RENAME set hash", "TYPE hash", "SMEMBERS hash", "RENAME num num",
               "GET num", "RENAME str2", ("RENAME", BIN, "plain"), "GET plain", "RENAME plain tmp2", "TTL tmp2",
               "GET tmp2", "DBSIZE"],
    "rename_large_set": [lambda p: p("SADD", "big", *[str(i) for i in range(2000)]), "RENAME big big2",
                         "SCARD big2", "SCARD big", "SISMEMBER big2 1999"],
    "renamenx": [populate, "RENAMENX str num", "GET str", "RENAMENX str str3", "GET str3", "EXISTS str",
                 "RENAMENX nokey x", "RENAMENX num num", "RENAMENX tmp tmp9", "TTL tmp9"],
    "keys": [populate, "KEYS *", "KEYS s*", "KEYS *a*", "KEYS ?um", "KEYS [sh]*", "KEYS [^s]*", "KEYS nomatch*",
             "KEYS h\\ash", "KEYS *\\*", ("SET", "a*b", "1"), "KEYS a\\*b", "KEYS a*", "KEYS [a-c]*",
             "KEYS", "KEYS a b", ("KEYS", b"\x00*")],
    "dbsize_flushdb": [populate, "DBSIZE", "FLUSHDB", "DBSIZE", "KEYS *", populate, "FLUSHDB ASYNC", "DBSIZE",
                       populate, "FLUSHDB SYNC", "DBSIZE", "FLUSHDB FOO", "DBSIZE x"],
    "flushall": [populate, "SELECT 3", "SET x y", "FLUSHALL", "DBSIZE", "SELECT 0", "DBSIZE", populate,
                 "FLUSHALL SYNC", "DBSIZE", "FLUSHALL ASYNC", "FLUSHALL FOO"],
    "select_isolation": ["SET k db0", "SELECT 1", "GET k", "SET k db1", "SELECT 0", "GET k", "SELECT 15", "DBSIZE",
                         "SELECT 16", "SELECT -1", "SELECT abc", "SELECT", "SELECT 1", "FLUSHDB", "SELECT 0",
                         "GET k", "DBSIZE"],
    "randomkey_empty": ["RANDOMKEY", "SET a 1", "RANDOMKEY", "DEL a", "RANDOMKEY"],
    "object_encoding": [populate, "OBJECT ENCODING str", "OBJECT ENCODING num", "OBJECT ENCODING set",
                        "OBJECT ENCODING hash", "OBJECT ENCODING nokey", "OBJECT ENCODING"],
    "object_other": [populate, "OBJECT IDLETIME str", "OBJECT IDLETIME nokey", "OBJECT REFCOUNT str",
                     "OBJECT REFCOUNT nokey", "OBJECT FREQ str", "OBJECT NOSUCH str", "OBJECT"],
    "memory_usage": [populate, "MEMORY USAGE str", "MEMORY USAGE set", "MEMORY USAGE hash",
                     "MEMORY USAGE nokey", "MEMORY USAGE str SAMPLES 5"],
    "expired_key_invisible": ["SET k v PX 50", "SADD s a", "PEXPIRE s 50", "HSET h f v", "PEXPIRE h 50",
                              sleep(0.3), "GET k", "EXISTS k s h", "TYPE s", "SMEMBERS s", "HGETALL h", "TTL k",
                              "KEYS *", "DBSIZE", "SADD s b", "SMEMBERS s", "TTL s"],
    "expire_then_persist_then_wait": ["SET k v PX 1000", "PERSIST k", sleep(1.2), "GET k", "TTL k"],
    "overwrite_clears_ttl": ["SET k v EX 100", "SET k w", "TTL k", "SADD s a", "EXPIRE s 100", "DEL s",
                             "SADD s b", "TTL s", "HSET h f v", "EXPIRE h 100", "HSET h g w", "TTL h"],
    "writes_after_expiry": ["SET s1 5 PX 100", "SET s2 abc PX 100", "SADD set a b PX", "SADD set a b",
                            "PEXPIRE set 100", "HSET h f 1 g 2", "PEXPIRE h 100", "SET r v PX 100",
                            "SET t 1 PX 100", "SADD u x", "PEXPIRE u 100", "SET w v PX 100", sleep(0.4),
                            "INCR s1", "APPEND s2 x", "GET s2", "SADD set c", "SMEMBERS set", "HINCRBY h f 5",
                            "HGETALL h", "RENAME r r2", "EXISTS r2", "EXPIRE t 100", "TTL t", "SMOVE u v x",
                            "EXISTS v", "SETRANGE w 2 z", "GET w", "SET s1 new NX", "GET s1", "DBSIZE"],
    "reads_after_expiry": ["SADD a 1 2 3", "SADD b 2 3 4", "PEXPIRE b 100", "HSET h f 1", "PEXPIRE h 100",
                           "SET k v PX 100", sleep(0.4), "SINTER a b", "SUNION a b", "SDIFF a b", "SINTERCARD 2 a b",
                           "SUNIONSTORE d a b", "SMEMBERS d", "HLEN h", "HGET h f", "STRLEN k", "GETRANGE k 0 -1",
                           "MGET k a", "SISMEMBER b 2", "SCARD b", "HRANDFIELD h", "SRANDMEMBER b", "SPOP b",
                           "EXPIRETIME k", "PERSIST k", "OBJECT ENCODING k", "MEMORY USAGE k", "RANDOMKEY"],
    "collection_emptied_is_deleted": ["SADD s a", "EXPIRE s 100", "SREM s a", "EXISTS s", "TTL s", "SADD s b",
                                      "TTL s", "HSET h f v", "HDEL h f", "EXISTS h", "TYPE h"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


@pytest.mark.parametrize("opts", [{}, {"match": "k1*"}, {"count": 3}, {"count": 1000}, {"type_": "set"},
                                  {"type_": "string"}, {"type_": "hash"}, {"match": "*5", "count": 7, "type_": "hash"},
                                  {"type_": "nosuchtype"}],
                         ids=["plain", "match", "count3", "count1000", "type_set", "type_string", "type_hash",
                              "all", "type_unknown"])
def test_scan(pair, opts):
    for i in range(300):
        if i % 3 == 0:
            pair.r.call("SET", f"k{i}", "v"); pair.s.call("SET", f"k{i}", "v")
        elif i % 3 == 1:
            pair.r.call("SADD", f"k{i}", "m"); pair.s.call("SADD", f"k{i}", "m")
        else:
            pair.r.call("HSET", f"k{i}", "f", "v"); pair.s.call("HSET", f"k{i}", "f", "v")
    pair("DBSIZE")
    pair.scan_all("SCAN", **opts)


def test_scan_errors(pair):
    pair("SET", "a", "1")
    pair.seq([("SCAN", "abc"), ("SCAN", "0", "COUNT", "0"), ("SCAN", "0", "COUNT", "-1"), ("SCAN", "0", "COUNT", "x"),
              ("SCAN", "0", "MATCH"), ("SCAN", "0", "FOO", "bar"), ("SCAN",), ("SCAN", "-1")])


def test_scan_binary_keys(pair):
    keys = [bytes([i, 255 - i, 0]) for i in range(0, 256, 7)]
    for k in keys:
        pair("SET", k, b"\x00")
    pair.scan_all("SCAN")
    pair.scan_all("SCAN", match=b"\x07*")
    pair("KEYS", "*")


def test_scan_survives_concurrent_writes(pair):
    """SCAN guarantee: every key present for the whole iteration is returned."""
    for side, c in pair.each():
        for i in range(200):
            c.call("SET", f"stable{i}", "v")
        cursor, seen, n = b"0", set(), 0
        while True:
            cursor, items = c.call("SCAN", cursor, "COUNT", "10")
            seen.update(items)
            c.call("SET", f"new{n}", "v")
            c.call("DEL", f"new{n - 3}")
            n += 1
            if cursor == b"0":
                break
        missing = {f"stable{i}".encode() for i in range(200)} - seen
        assert not missing, f"{side}: SCAN missed {sorted(missing)[:10]}"


def test_randomkey_is_a_key(pair):
    for i in range(20):
        pair("SET", f"k{i}", "v")
    for side, c in pair.each():
        for _ in range(20):
            k = c.call("RANDOMKEY")
            assert isinstance(k, bytes) and c.call("EXISTS", k) == 1, (side, k)


def test_randomkey_skips_expired(pair):
    pair("SET", "gone", "v", "PX", "30")
    pair("SET", "stay", "v")
    time.sleep(0.2)
    for side, c in pair.each():
        for _ in range(10):
            assert c.call("RANDOMKEY") == b"stay", side


def test_expiry_poll(pair):
    """A key with a short TTL disappears once the TTL has passed (polled, generous bound)."""
    pair("SET", "k", "v", "PX", "150")
    pair("SADD", "s", "a")
    pair("PEXPIRE", "s", "150")
    deadline = time.monotonic() + 10
    for side, c in pair.each():
        while c.call("EXISTS", "k", "s") != 0:
            assert time.monotonic() < deadline, f"{side}: keys still there long after their TTL"
            time.sleep(0.05)
    pair("DBSIZE")


def test_active_expiry_removes_unread_keys(pair):
    """Keys that are never read again are removed by the active cycle: DBSIZE drops to 0."""
    for i in range(50):
        pair("SET", f"k{i}", "v", "PX", "100")
    deadline = time.monotonic() + 20
    for side, c in pair.each():
        while c.call("DBSIZE") != 0:
            assert time.monotonic() < deadline, f"{side}: DBSIZE {c.call('DBSIZE')} long after every key expired"
            time.sleep(0.1)


def test_object_encoding_values_are_strings(pair):
    pair("SET", "k", "v")
    pair("SADD", "s", "a")
    for side, c in pair.each():
        for k in ("k", "s"):
            r = c.call("OBJECT", "ENCODING", k)
            assert isinstance(r, bytes) and r, (side, r)


def test_memory_usage_positive(pair):
    pair("SET", "k", "v" * 100)
    pair("HSET", "h", "f", "v")
    for side, c in pair.each():
        for k in ("k", "h"):
            r = c.call("MEMORY", "USAGE", k)
            assert isinstance(r, int) and r > 0, (side, k, r)
        assert c.call("MEMORY", "USAGE", "nokey") is None


def test_scan_large_keyspace(pair):
    """5,000 keys of three types in two databases, some volatile: SCAN variants agree."""
    for side, c in pair.each():
        cmds = []
        for i in range(5000):
            k = f"key:{i:05d}"
            cmds.append(("SET", k, "v") if i % 3 == 0 else ("SADD", k, "m") if i % 3 == 1 else ("HSET", k, "f", "v"))
            if i % 7 == 0:
                cmds.append(("EXPIRE", k, "1000"))
        cmds += [("SELECT", "1")] + [("SET", f"other:{i}", "v") for i in range(500)] + [("SELECT", "0")]
        c.pipeline(cmds)
    pair("DBSIZE")
    pair.scan_all("SCAN", count=100)
    pair.scan_all("SCAN", match="key:01*", count=50)
    pair.scan_all("SCAN", type_="hash", count=1000)
    pair("SELECT", "1")
    pair.scan_all("SCAN")
    pair("DBSIZE")
    pair("SELECT", "0")


def test_randomkey_big_db_spread(pair):
    """RANDOMKEY over 20,000 keys: 300 draws give (almost) 300 different keys."""
    for side, c in pair.each():
        c.pipeline([("MSET", *[x for i in range(j, j + 1000) for x in (str(i), "v")]) for j in range(0, 20000, 1000)])
        keys = {c.call("RANDOMKEY") for _ in range(300)}
        assert all(k is not None and 0 <= int(k) < 20000 for k in keys), side
        assert len(keys) > 250, (side, len(keys))
