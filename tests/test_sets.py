"""Differential tests: set commands."""

import pytest

from diff import members, run_script

BIN = b"\x00\xff\xfe\r\n"

SCENARIOS = {
    "sadd_srem": ["SADD s a b c", "SADD s a d", "SCARD s", "SMEMBERS s", "SREM s a x", "SREM s x", "SMEMBERS s",
                  "SREM nokey a", "SADD s", "SREM s", "SET str v", "SADD str a", "SREM str a", "SCARD str",
                  "SREM s b c d", "EXISTS s", "SCARD s", ("SADD", "s", BIN, b"", b"\x80"), "SMEMBERS s",
                  ("SISMEMBER", "s", b""), ("SREM", "s", BIN), "SCARD s"],
    "sadd_duplicates_in_one_call": ["SADD s a a a b", "SCARD s", "SREM s a a", "SCARD s"],
    "sismember_smismember": ["SADD s a b", "SISMEMBER s a", "SISMEMBER s z", "SISMEMBER nokey a",
                             "SMISMEMBER s a z b", "SMISMEMBER nokey a b", "SMISMEMBER s", "SET str v",
                             "SISMEMBER str a", "SMISMEMBER str a", "SISMEMBER s"],
    "scard_smembers": ["SCARD nokey", "SMEMBERS nokey", "SADD s 1 2 3 10 20", "SMEMBERS s", "SCARD s",
                       "SET str v", "SMEMBERS str", "SCARD str"],
    "intset_like": [lambda p: p("SADD", "n", *[str(i) for i in range(0, 600, 3)]), "SCARD n", "SISMEMBER n 597",
                    "SADD n x", "SCARD n", "SMEMBERS n"],
    "smove": ["SADD a x y", "SADD b z", "SMOVE a b x", "SMEMBERS a", "SMEMBERS b", "SMOVE a b nope",
              "SMOVE a c y", "EXISTS a", "SMEMBERS c", "SMOVE nokey b x", "SMOVE b b z", "SMEMBERS b",
              "SET str v", "SMOVE str b x", "SMOVE b str z", "SMOVE nokey str x", "SMEMBERS b", "SMOVE b", "SADD d z", "SMOVE b d z",
              "SMEMBERS b", "SMEMBERS d", "SADD e q", "EXPIRE e 100", "SMOVE e f q", "EXISTS e", "TTL f"],
    "sinter_sunion_sdiff": ["SADD a 1 2 3 4", "SADD b 3 4 5", "SADD c 4 5 6", "SINTER a b", "SINTER a b c",
                            "SINTER a nokey", "SINTER nokey", "SUNION a b c", "SUNION a nokey", "SUNION nokey",
                            "SDIFF a b", "SDIFF a b c", "SDIFF nokey a", "SDIFF a nokey", "SDIFF a a", "SINTER a",
                            "SUNION", "SET str v", "SINTER a str", "SUNION a str", "SDIFF a str", "SDIFF str a",
                            "SINTER nokey str", "SDIFF nokey str"],
    "store_variants": ["SADD a 1 2 3 4", "SADD b 3 4 5", "SINTERSTORE d a b", "SMEMBERS d", "SUNIONSTORE d a b",
                       "SMEMBERS d", "SDIFFSTORE d a b", "SMEMBERS d", "SINTERSTORE d a nokey", "EXISTS d",
                       "SET d str", "SUNIONSTORE d a", "TYPE d", "SET str v", "SINTERSTORE d a str", "SMEMBERS d",
                       "SDIFFSTORE a a b", "SMEMBERS a", "SUNIONSTORE a a b", "SMEMBERS a", "EXPIRE d 100",
                       "SUNIONSTORE d a", "TTL d", "SDIFFSTORE d nokey", "EXISTS d", "SINTERSTORE d",
                       "HSET h f v", "SUNIONSTORE h a", "TYPE h"],
    "sintercard": ["SADD a 1 2 3 4", "SADD b 3 4 5", "SINTERCARD 2 a b", "SINTERCARD 1 a", "SINTERCARD 2 a nokey",
                   "SINTERCARD 2 a b LIMIT 1", "SINTERCARD 2 a b LIMIT 0", "SINTERCARD 2 a b LIMIT 10",
                   "SINTERCARD 0 a", "SINTERCARD 3 a b", "SINTERCARD 2 a b LIMIT -1", "SINTERCARD abc a",
                   "SINTERCARD 1 a FOO 1", "SET str v", "SINTERCARD 2 a str", "SINTERCARD 2 nokey str",
                   "SINTERCARD -1 a", "SINTERCARD 2 a b LIMIT"],
    "spop_deterministic": ["SPOP nokey", "SPOP nokey 3", "SADD one x", "SPOP one", "EXISTS one", "SADD s a b c",
                           "SPOP s 10", "EXISTS s", "SADD s a b", "SPOP s 0", "SCARD s", "SPOP s -1", "SPOP s abc",
                           "SET str v", "SPOP str", "SPOP str 1", "SPOP s 1 2"],
    "srandmember_deterministic": ["SRANDMEMBER nokey", "SRANDMEMBER nokey 5", "SRANDMEMBER nokey -5",
                                  "SADD one x", "SRANDMEMBER one", "SRANDMEMBER one 3", "SRANDMEMBER one -3",
                                  "SRANDMEMBER one 0", "SADD s a b c", "SRANDMEMBER s 10", "SRANDMEMBER s -10",
                                  "SRANDMEMBER s 2", "SRANDMEMBER s abc", "SET str v", "SRANDMEMBER str",
                                  "SRANDMEMBER s 1 2"],
    "sscan_check_order": ["SET str v", "SADD s a", "SSCAN nokey 0 FOO", "SSCAN str 0 FOO", "SSCAN nokey 0 COUNT 0",
                          "SSCAN str 0 COUNT x", "SSCAN nokey abc", "SSCAN s 0 FOO", "SSCAN s '' COUNT 100",
                          ("SSCAN", "s", b"\x00", "COUNT", "100")],
    # (no huge negative counts that Redis would really try to answer)
    "random_counts_extreme": ["SADD s a b c", "SRANDMEMBER s -5000", "SRANDMEMBER s -9223372036854775808",
                              "SRANDMEMBER s 9223372036854775807", "SPOP s 9223372036854775807", "EXISTS s",
                              "SADD s a", "SPOP s -9223372036854775808"],
    "wrong_arity": ["SADD", "SADD s", "SREM s", "SCARD", "SMEMBERS", "SISMEMBER s", "SMOVE a b", "SINTER",
                    "SINTERSTORE d", "SDIFFSTORE", "SINTERCARD", "SINTERCARD 1", "SPOP", "SRANDMEMBER",
                    "SSCAN s", "SMISMEMBER s"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


def _fill(pair, key, n):
    pair("SADD", key, *[f"m{i}" for i in range(n)])


@pytest.mark.parametrize("n", [5, 200])
def test_spop_invariants(pair, n):
    _fill(pair, "s", n)
    for side, c in pair.each():
        before = members(c, "s")
        one = c.call("SPOP", "s")
        assert one in before, (side, one)
        some = c.call("SPOP", "s", "3")
        assert len(some) == 3 and len(set(some)) == 3 and set(some) <= before - {one}, (side, some)
        assert members(c, "s") == before - {one} - set(some), side
        assert c.call("SCARD", "s") == n - 4


@pytest.mark.parametrize("n", [5, 200])
def test_srandmember_invariants(pair, n):
    _fill(pair, "s", n)
    for side, c in pair.each():
        full = members(c, "s")
        for _ in range(5):
            assert c.call("SRANDMEMBER", "s") in full
        pos = c.call("SRANDMEMBER", "s", "3")
        assert len(pos) == 3 and len(set(pos)) == 3 and set(pos) <= full, (side, pos)
        allm = c.call("SRANDMEMBER", "s", str(n + 5))
        assert len(allm) == n and set(allm) == full
        neg = c.call("SRANDMEMBER", "s", "-20")
        assert len(neg) == 20 and set(neg) <= full, (side, neg)
        assert members(c, "s") == full, f"{side}: SRANDMEMBER modified the set"
    # replies' shapes agree
    pair("SRANDMEMBER", "s", "3")
    pair("SRANDMEMBER", "s", "-7")
    pair("SPOP", "s", "2")


@pytest.mark.parametrize("opts", [{}, {"match": "m1*"}, {"count": 2}, {"count": 500}, {"match": "*9", "count": 3}])
@pytest.mark.parametrize("n", [10, 600])
def test_sscan(pair, n, opts):
    _fill(pair, "s", n)
    pair.scan_all("SSCAN", "s", **opts)


def test_sscan_edge(pair):
    pair.scan_all("SSCAN", "nokey")
    pair("SET", "str", "v")
    pair.scan_all("SSCAN", "str")
    pair("SADD", "s", b"\x00", b"\xff", b"")
    pair.scan_all("SSCAN", "s")
    pair.seq([("SSCAN", "s", "abc"), ("SSCAN", "s", "0", "COUNT", "0"), ("SSCAN", "s", "0", "TYPE", "set"),
              ("SSCAN", "s", "0", "MATCH")])


def test_large_set_algebra(pair):
    pair("SADD", "a", *[str(i) for i in range(0, 3000, 2)])
    pair("SADD", "b", *[str(i) for i in range(0, 3000, 3)])
    pair("SADD", "c", *[f"x{i}" for i in range(100)] + [str(i) for i in range(0, 3000, 5)])
    pair.seq([("SINTER", "a", "b", "c"), ("SUNION", "a", "b", "c"), ("SDIFF", "a", "b", "c"),
              ("SINTERCARD", "3", "a", "b", "c"), ("SINTERCARD", "2", "a", "b", "LIMIT", "17"),
              ("SUNIONSTORE", "u", "a", "b", "c"), ("SCARD", "u"), ("SDIFFSTORE", "d", "c", "a"), ("SMEMBERS", "d")])


def test_big_set(pair):
    """50,000 members: SMEMBERS / SSCAN / set algebra / SRANDMEMBER agree with Redis."""
    for side, c in pair.each():
        c.pipeline([("SADD", "big", *[str(i) for i in range(j, j + 1000)]) for j in range(0, 50000, 1000)])
        c.pipeline([("SADD", "odd", *[str(i) for i in range(j, j + 1000, 2)]) for j in range(1, 50000, 1000)])
    pair("SCARD", "big")
    pair("SMEMBERS", "big")
    pair("SINTERCARD", "2", "big", "odd")
    pair("SDIFFSTORE", "even", "big", "odd")
    pair("SCARD", "even")
    pair("SISMEMBER", "even", "49998")
    pair.scan_all("SSCAN", "big", count=500)
    pair("SRANDMEMBER", "big", "-20000")
    pair("SRANDMEMBER", "big", "20000")


def test_random_members_big_set(pair):
    """SPOP/SRANDMEMBER on a 20,000-member set (the big-set sampling paths)."""
    for side, c in pair.each():
        c.pipeline([("SADD", "s", *[str(i) for i in range(j, j + 1000)]) for j in range(0, 20000, 1000)])
        popped = c.call("SPOP", "s", "500")
        popped = popped.items if hasattr(popped, "items") else popped
        assert len(popped) == 500 and len(set(popped)) == 500, side
        assert all(0 <= int(x) < 20000 for x in popped), side
        assert c.call("SCARD", "s") == 19500, side
        assert c.call("SMISMEMBER", "s", *popped) == [0] * 500, side
        pos = c.call("SRANDMEMBER", "s", "3000")
        assert len(pos) == 3000 and len(set(pos)) == 3000 and set(pos).isdisjoint(popped), side
        neg = c.call("SRANDMEMBER", "s", "-3000")
        assert len(neg) == 3000 and set(neg).isdisjoint(popped), side
        assert all(x in set(pos) or c.call("SISMEMBER", "s", x) == 1 for x in neg[:50]), side
        singles = {c.call("SRANDMEMBER", "s") for _ in range(300)}
        assert len(singles) > 250 and singles.isdisjoint(popped), (side, len(singles))
        one = c.call("SPOP", "s")
        assert c.call("SISMEMBER", "s", one) == 0 and c.call("SCARD", "s") == 19499, side
