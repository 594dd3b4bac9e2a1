"""COMMAND: the command table as clients see it (cluster-aware clients and
redis-cli use arity, flags and key positions). Compared with Redis 7.0 for every
command of issue 2."""

import pytest

from resp_client import Err, Map, RSet

ISSUE2_COMMANDS = """
ping echo quit reset hello auth select client info config dbsize time flushdb flushall slowlog save bgsave lastsave
del unlink exists type expire pexpire expireat pexpireat ttl pttl expiretime pexpiretime persist rename renamenx keys
scan randomkey object memory get set setnx setex psetex getset getdel getex mget mset msetnx incr decr incrby decrby
incrbyfloat append strlen getrange setrange sadd srem sismember smismember scard smembers sscan spop srandmember smove
sinter sunion sdiff sinterstore sunionstore sdiffstore sintercard hset hsetnx hget hmset hmget hgetall hdel hexists
hlen hkeys hvals hincrby hincrbyfloat hstrlen hscan hrandfield multi exec discard watch unwatch command shutdown
""".split()


def _items(x):
    if isinstance(x, RSet):
        return x.items
    return x


def table_row(c, name):
    r = c.call("COMMAND", "INFO", name)
    assert isinstance(r, list) and len(r) == 1, r
    row = r[0]
    if row is None:
        return None
    # [name, arity, flags, first, last, step, acl categories, tips, key specs, subcommands]
    return {"name": row[0], "arity": row[1], "flags": sorted(_items(row[2]), key=repr), "first": row[3],
            "last": row[4], "step": row[5], "acl": sorted(_items(row[6]), key=repr) if len(row) > 6 else None,
            "subcommands": sorted(s[0] for s in row[9]) if len(row) > 9 else None}


@pytest.mark.parametrize("name", ISSUE2_COMMANDS)
def test_command_info(pair, name):
    got, want = table_row(pair.r, name), table_row(pair.s, name)
    assert want is not None
    assert got is not None, f"COMMAND INFO {name}: roaringd has no such command"
    for field in ("name", "arity", "first", "last", "step", "flags", "acl"):
        assert got[field] == want[field], f"COMMAND INFO {name}: {field} roaringd {got[field]!r} != Redis {want[field]!r}"
    if want["subcommands"]:
        missing = set(want["subcommands"]) - set(got["subcommands"] or [])
        # only the subcommands issue 2 asks for must exist
        needed = {b"client|id", b"client|setname", b"client|getname", b"client|list", b"client|info",
                  b"client|kill", b"config|get", b"config|set", b"config|resetstat", b"slowlog|get",
                  b"slowlog|len", b"slowlog|reset", b"object|encoding", b"memory|usage"}
        assert not (missing & needed), f"{name}: missing subcommands {sorted(missing & needed)}"


def test_command_shapes(pair):
    pair("COMMAND", "COUNT")
    pair("COMMAND", "INFO", "nosuchcommand")
    pair("COMMAND", "GETKEYS", "SET", "a", "b")
    pair("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2")
    pair("COMMAND", "GETKEYS", "SINTERCARD", "2", "x", "y", "LIMIT", "1")
    pair("COMMAND", "GETKEYS", "GET")
    pair("COMMAND", "GETKEYS", "PING")
    pair("COMMAND", "NOSUCH")
    for side, c in pair.each():
        allc = c.call("COMMAND")
        assert isinstance(allc, list) and len(allc) == c.call("COMMAND", "COUNT"), side
        names = {row[0] for row in allc}
        missing = {n.encode() for n in ISSUE2_COMMANDS} - names
        assert not missing, (side, sorted(missing))


def test_command_docs_shape(pair):
    pair("COMMAND", "DOCS", "get")
    for side, c in pair.each():
        r = c.call("COMMAND", "DOCS", "get")
        items = r.items if isinstance(r, Map) else list(zip(r[0::2], r[1::2]))
        assert items and items[0][0] == b"get", (side, r)
