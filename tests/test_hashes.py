"""Differential tests: hash commands."""

import pytest

from diff import hash_items, run_script

BIN = b"\x00\xff\xfe\r\n"

SCENARIOS = {
    "hset_hget": ["HSET h f v", "HSET h f v2 g w", "HGET h f", "HGET h g", "HGET h nofield", "HGET nokey f",
                  "HSET h f", "HSET h", "HSET h f v g", ("HSET", "h", BIN, BIN), ("HGET", "h", BIN),
                  ("HSET", "h", b"", b""), ("HGET", "h", b""), "HLEN h", "SET str v", "HSET str f v", "HGET str f"],
    "hsetnx": ["HSETNX h f v", "HSETNX h f v2", "HGET h f", "HSETNX h g w", "HGETALL h", "SET str v",
               "HSETNX str f v", "HSETNX h f"],
    "hmset_hmget": ["HMSET h a 1 b 2", "HMGET h a b c", "HMGET nokey a b", "HMSET h a", "HMSET h", "HMGET h",
                    "SET str v", "HMGET str a", "HMSET str a 1"],
    "hgetall_hkeys_hvals": ["HGETALL nokey", "HKEYS nokey", "HVALS nokey", "HSET h a 1 b 2 c 3", "HGETALL h",
                            "HKEYS h", "HVALS h", "SET str v", "HGETALL str", "HKEYS str", "HVALS str"],
    "hdel_hlen_hexists": ["HSET h a 1 b 2 c 3", "HDEL h a", "HDEL h a", "HDEL h b x c", "EXISTS h", "HLEN h",
                          "HDEL nokey a", "HSET h a 1", "HEXISTS h a", "HEXISTS h z", "HEXISTS nokey a",
                          "HLEN nokey", "SET str v", "HDEL str a", "HLEN str", "HEXISTS str a", "HDEL h",
                          "HEXISTS h"],
    "hincrby": ["HINCRBY h n 1", "HINCRBY h n 10", "HINCRBY h n -20", "HGET h n", "HSET h s abc", "HINCRBY h s 1",
                "HINCRBY h n abc", "HINCRBY h n 1.5", "HSET h big 9223372036854775807", "HINCRBY h big 1",
                "HSET h small -9223372036854775808", "HINCRBY h small -1", "HSET h sp ' 1'", "HINCRBY h sp 1",
                "SET str v", "HINCRBY str n 1", "HINCRBY h n"],
    "hincrbyfloat": ["HINCRBYFLOAT h f 1.5", "HINCRBYFLOAT h f 0.1", "HINCRBYFLOAT h f -2", "HGET h f",
                     "HINCRBYFLOAT h f 1e2", "HINCRBYFLOAT h f abc", "HINCRBYFLOAT h f inf", "HSET h i 10",
                     "HINCRBYFLOAT h i 0.5", "HSET h s abc", "HINCRBYFLOAT h s 1", "HINCRBYFLOAT h z 0",
                     "HGET h z", "HINCRBYFLOAT h w 3.0", "HINCRBYFLOAT h w 1.0000000000000001", "SET str v",
                     "HINCRBYFLOAT str f 1", "HINCRBYFLOAT h f"],
    "hincrbyfloat_long_double_range": ["HINCRBYFLOAT h b 1e308", "HINCRBYFLOAT h b 1e308", "HGET h b",
                                       "HINCRBYFLOAT h c 3e400", "HGET h c", "HINCRBYFLOAT h d 1e5000"],
    "hstrlen": ["HSET h f hello g ''", "HSTRLEN h f", "HSTRLEN h g", "HSTRLEN h z", "HSTRLEN nokey f",
                "HSET h n 12345", "HSTRLEN h n", "SET str v", "HSTRLEN str f", "HSTRLEN h"],
    "hrandfield_deterministic": ["HRANDFIELD nokey", "HRANDFIELD nokey 3", "HRANDFIELD nokey 3 WITHVALUES",
                                 "HSET one f v", "HRANDFIELD one", "HRANDFIELD one 1", "HRANDFIELD one -2",
                                 "HRANDFIELD one 1 WITHVALUES", "HRANDFIELD one -2 WITHVALUES", "HRANDFIELD one 0",
                                 "HSET h a 1 b 2 c 3", "HRANDFIELD h 10", "HRANDFIELD h 10 WITHVALUES",
                                 "HRANDFIELD h -5", "HRANDFIELD h 2", "HRANDFIELD h abc", "HRANDFIELD h 1 FOO",
                                 "SET str v", "HRANDFIELD str", "HRANDFIELD h WITHVALUES"],
    "many_fields": [lambda p: p("HSET", "h", *[x for i in range(700) for x in (f"f{i}", f"v{i}")]), "HLEN h",
                    "HGET h f699", "HGETALL h", "HDEL h f0 f1 f2", "HLEN h", "HKEYS h"],
    "hscan_check_order": ["SET str v", "HSET h f v", "HSCAN nokey 0 FOO", "HSCAN str 0 FOO", "HSCAN nokey 0 COUNT 0",
                          "HSCAN str 0 COUNT x", "HSCAN nokey abc", "HSCAN h 0 FOO", ("HSCAN", "h", "", "COUNT", "100")],
    "random_counts_extreme": ["HSET h a 1 b 2", "HRANDFIELD h -5000", "HRANDFIELD h -5000 WITHVALUES",
                              "HRANDFIELD h -9223372036854775808", "HRANDFIELD h 9223372036854775807 WITHVALUES"],
    "wrong_arity": ["HSET", "HGET h", "HGET h f g", "HSETNX h f", "HMGET h", "HGETALL", "HDEL h", "HLEN",
                    "HEXISTS h", "HKEYS", "HVALS h x", "HINCRBY h f", "HINCRBYFLOAT h", "HSTRLEN h", "HSCAN h",
                    "HRANDFIELD"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


def _fill(pair, key, n):
    pair("HSET", key, *[x for i in range(n) for x in (f"f{i}", f"v{i}")])


@pytest.mark.parametrize("n", [5, 200])
def test_hrandfield_invariants(pair, n):
    _fill(pair, "h", n)
    for side, c in pair.each():
        full = hash_items(c, "h")
        assert c.call("HRANDFIELD", "h") in full
        pos = c.call("HRANDFIELD", "h", "3")
        assert len(pos) == 3 and len(set(pos)) == 3 and set(pos) <= set(full), (side, pos)
        wv = c.call("HRANDFIELD", "h", "3", "WITHVALUES")
        assert len(wv) == 6, (side, wv)
        for f, v in zip(wv[0::2], wv[1::2]):
            assert full[f] == v, (side, f, v)
        neg = c.call("HRANDFIELD", "h", "-12")
        assert len(neg) == 12 and set(neg) <= set(full)
        negv = c.call("HRANDFIELD", "h", "-4", "WITHVALUES")
        assert len(negv) == 8
        everything = c.call("HRANDFIELD", "h", str(n + 1))
        assert sorted(everything) == sorted(full)
    pair("HRANDFIELD", "h", "3", "WITHVALUES")
    pair("HRANDFIELD", "h", "-3", "WITHVALUES")


def test_hrandfield_resp3_pairs(servers):
    servers.reset()
    from diff import Pair
    p = Pair(servers.roaringd, servers.redis, protocol=3)
    try:
        _fill(p, "h", 10)
        p("HRANDFIELD", "h", "4", "WITHVALUES")
        for side, c in p.each():
            r = c.call("HRANDFIELD", "h", "4", "WITHVALUES")
            assert len(r) == 4 and all(isinstance(x, list) and len(x) == 2 for x in r), (side, r)
    finally:
        p.close()


@pytest.mark.parametrize("opts", [{}, {"match": "f1*"}, {"count": 2}, {"count": 1000}, {"match": "*7", "count": 5}])
@pytest.mark.parametrize("n", [8, 600])
def test_hscan(pair, n, opts):
    _fill(pair, "h", n)
    pair.scan_all("HSCAN", "h", **opts)


def test_hscan_edge(pair):
    pair.scan_all("HSCAN", "nokey")
    pair("SET", "str", "v")
    pair.scan_all("HSCAN", "str")
    pair("HSET", "h", b"\x00", b"\xff", b"", b"")
    pair.scan_all("HSCAN", "h")
    pair.seq([("HSCAN", "h", "abc"), ("HSCAN", "h", "0", "COUNT", "0"), ("HSCAN", "h", "0", "MATCH")])


def test_hrandfield_big_hash(pair):
    for side, c in pair.each():
        c.pipeline([("HSET", "h", *[x for i in range(j, j + 500) for x in (f"f{i}", f"v{i}")]) for j in range(0, 10000, 500)])
        wv = c.call("HRANDFIELD", "h", "2000", "WITHVALUES")
        assert len(wv) == 4000, side
        fields = wv[0::2]
        assert len(set(fields)) == 2000, side
        assert all(v == b"v" + f[1:] for f, v in zip(fields, wv[1::2])), side
        neg = c.call("HRANDFIELD", "h", "-3000")
        assert len(neg) == 3000 and all(f.startswith(b"f") for f in neg), side
        singles = {c.call("HRANDFIELD", "h") for _ in range(200)}
        assert len(singles) > 150, (side, len(singles))
