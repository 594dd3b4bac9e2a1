"""Wire tests with redis-py (RESP2 and protocol=3): each test runs the same client code
against roaringd and Redis and compares what redis-py returns."""

import threading

import pytest
import redis

PROTOS = [2, 3]


def run_both(servers, fn, **kw):
    servers.reset()
    out = []
    for srv in (servers.roaringd, servers.redis):
        r = srv.redis_py(**kw)
        try:
            out.append(fn(r))
        finally:
            r.close()
    assert out[0] == out[1], f"roaringd {out[0]!r}\n!= Redis {out[1]!r}"
    return out[1]


@pytest.mark.parametrize("proto", PROTOS)
def test_basic_types(servers, proto):
    def fn(r):
        res = [r.ping(), r.set("k", "v"), r.get("k"), r.set("k", "w", nx=True), r.set("n", 5), r.incr("n"),
               r.incrby("n", 10), r.decr("n"), r.incrbyfloat("f", 1.5), r.append("k", "x"), r.strlen("k"),
               r.getrange("k", 0, 0), r.mset({"a": 1, "b": 2}), r.mget("a", "b", "c"), r.getdel("a"),
               r.getset("b", 3), r.exists("a", "b"), r.type("b"), r.delete("b", "zz")]
        res += [r.sadd("s", "a", "b", "c"), sorted(r.smembers("s")), r.sismember("s", "a"), r.smismember("s", ["a", "z"]),
                r.scard("s"), r.srem("s", "a"), sorted(r.sinter("s", "s")), r.sintercard(1, ["s"]),
                r.smove("s", "s2", "b"), sorted(r.sunion("s", "s2")), sorted(r.sdiff("s", "s2"))]
        res += [r.hset("h", mapping={"f1": "v1", "f2": "2"}), r.hget("h", "f1"), r.hgetall("h"), r.hlen("h"),
                r.hincrby("h", "f2", 3), r.hincrbyfloat("h", "f3", 0.5), sorted(r.hkeys("h")), sorted(r.hvals("h")),
                r.hexists("h", "f1"), r.hdel("h", "f1"), r.hmget("h", ["f2", "nope"]), r.hstrlen("h", "f2"),
                r.hsetnx("h", "f2", "x")]
        res += [r.expire("k", 100), r.ttl("k") in (99, 100), r.persist("k"), r.ttl("k"), r.pexpire("k", 100000),
                r.pttl("k") > 90000, r.rename("k", "k2"), r.renamenx("k2", "h"), sorted(r.keys("*")), r.dbsize()]
        try:
            r.incr("h")
        except redis.ResponseError as e:
            res.append(str(e))
        return res
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_decode_responses(servers, proto):
    def fn(r):
        r.set("ключ", "значение")
        r.hset("h", mapping={"поле": "1"})
        return [r.get("ключ"), r.hgetall("h"), r.keys("*") and sorted(r.keys("*"))]
    run_both(servers, fn, protocol=proto, decode_responses=True)


@pytest.mark.parametrize("proto", PROTOS)
def test_binary_keys_values(servers, proto):
    key, val = b"\x00\xff\xfe\x80", bytes(range(256))

    def fn(r):
        r.set(key, val)
        r.sadd(b"s\xff", b"\x00", b"\xff")
        r.hset(b"h\x00", b"\xff", b"\x00")
        return [r.get(key), sorted(r.smembers(b"s\xff")), r.hgetall(b"h\x00"), r.exists(key), sorted(r.keys())]
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_pipeline_no_transaction(servers, proto):
    def fn(r):
        p = r.pipeline(transaction=False)
        for i in range(2000):
            p.set(f"k{i}", i)
            p.incr("ctr")
        p.get("k1999")
        p.sadd("s", *range(100))
        p.scard("s")
        res = p.execute()
        return [res[-3:], res[:4], r.dbsize()]
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_pipeline_transaction(servers, proto):
    def fn(r):
        p = r.pipeline(transaction=True)
        p.set("a", 1).incr("a").sadd("s", "x").hset("h", "f", "v").get("a")
        res = p.execute()
        p = r.pipeline(transaction=True)
        p.set("str", "x").incr("str").set("b", 2)
        try:
            p.execute()
        except redis.ResponseError as e:
            err = str(e)
        return [res, err, r.get("b")]
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_watch_two_clients(servers, proto):
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        a = srv.redis_py(protocol=proto)
        b = srv.redis_py(protocol=proto)
        a.set("w", 1)
        with a.pipeline() as p:
            p.watch("w")
            assert p.get("w") == b"1"
            b.set("w", 2)
            p.multi()
            p.set("w", 3)
            with pytest.raises(redis.WatchError):
                p.execute()
        assert a.get("w") == b"2", srv.kind
        with a.pipeline() as p:
            p.watch("w")
            p.multi()
            p.set("w", 4)
            assert p.execute() == [True]
        assert b.get("w") == b"4"
        a.close(); b.close()


def test_optimistic_locking_counter(servers):
    """Threads increment one counter with WATCH/MULTI/EXEC retries: no lost update."""
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        pool = redis.ConnectionPool(host="127.0.0.1", port=srv.port, password=srv.password, socket_timeout=30)
        r0 = redis.Redis(connection_pool=pool)
        r0.set("cnt", 0)

        errors = []

        def work():
            r = redis.Redis(connection_pool=pool)
            try:
                for _ in range(40):
                    def inc(pipe):
                        v = int(pipe.get("cnt"))
                        pipe.multi()
                        pipe.set("cnt", v + 1)
                    r.transaction(inc, "cnt")
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        assert not errors, (srv.kind, errors[0])
        assert int(r0.get("cnt")) == 160, srv.kind
        pool.disconnect()


@pytest.mark.parametrize("proto", PROTOS)
def test_scan_iters(servers, proto):
    def fn(r):
        r.mset({f"key:{i}": i for i in range(300)})
        r.sadd("s", *range(300))
        r.hset("h", mapping={f"f{i}": i for i in range(300)})
        return [sorted(r.scan_iter(match="key:1*", count=17)), len(set(r.scan_iter(_type="set"))),
                sorted(r.sscan_iter("s", match="2*")), sorted(r.hscan_iter("h", match="f29*"))]
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_server_helpers(servers, proto):
    def fn(r):
        r.client_setname("pyclient")
        info = r.info()
        allinfo = r.info("all")
        cl = r.client_list()
        me = [c for c in cl if c["name"] == "pyclient"]
        t = r.time()
        return [r.client_getname(), "redis_version" in info, "connected_clients" in info, bool(allinfo),
                len(me), isinstance(r.client_id(), int), isinstance(r.client_info(), dict),
                r.config_get("databases"), r.config_set("slowlog-max-len", 128), isinstance(t[0], int),
                r.echo("hi"), r.dbsize(), r.flushdb(), r.select(0) if hasattr(r, "select") else True,
                r.slowlog_len() >= 0, isinstance(r.lastsave(), object)]
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_expiry_options(servers, proto):
    def fn(r):
        r.set("k", "v", ex=100)
        out = [r.ttl("k"), r.expire("k", 50, gt=True), r.expire("k", 50, lt=True), r.ttl("k") <= 50,
               r.set("k", "x", keepttl=True), 0 < r.ttl("k") <= 50, r.set("k", "y", get=True),
               r.getex("k", persist=True), r.ttl("k"), r.set("p", "v", px=100000), r.pttl("p") > 90000,
               r.expiretime("p") > 0, r.pexpiretime("p") > 0, r.setex("se", 100, "v"), r.psetex("pse", 100000, "v"),
               r.setnx("se", "w")]
        out[0] = 99 <= out[0] <= 100
        return out
    run_both(servers, fn, protocol=proto)


@pytest.mark.parametrize("proto", PROTOS)
def test_random_members_types(servers, proto):
    def fn(r):
        r.sadd("s", *range(10))
        r.hset("h", mapping={f"f{i}": i for i in range(10)})
        return [len(r.srandmember("s", 3)), r.srandmember("s") is not None, len(r.spop("s", 2)),
                r.scard("s"), r.hrandfield("h") is not None, len(r.hrandfield("h", 4)),
                len(r.hrandfield("h", 3, withvalues=True)), r.randomkey() in (b"s", b"h")]
    run_both(servers, fn, protocol=proto)


def test_auth_and_hello(fresh):
    r, s = fresh(["--requirepass", "pw"])
    outs = []
    for srv in (r, s):
        res = []
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=srv.port, socket_timeout=10).ping()
        for proto in PROTOS:
            c = redis.Redis(host="127.0.0.1", port=srv.port, password="pw", protocol=proto, socket_timeout=10)
            res.append(c.ping())
            c.close()
            c = redis.Redis(host="127.0.0.1", port=srv.port, username="default", password="pw", protocol=proto, socket_timeout=10)
            res.append(c.set("a", "b"))
            c.close()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=srv.port, password="nope", socket_timeout=10).ping()
        outs.append(res)
    assert outs[0] == outs[1]


def test_many_pooled_threads(servers):
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        pool = redis.BlockingConnectionPool(host="127.0.0.1", port=srv.port, max_connections=16, socket_timeout=30)

        errors = []

        def work(t):
            r = redis.Redis(connection_pool=pool)
            try:
                for i in range(100):
                    r.sadd(f"set{t}", i)
                    r.hset("shared", f"t{t}:{i}", i)
                    r.incr("total")
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        assert not errors, (srv.kind, errors[0])
        r = redis.Redis(connection_pool=pool)
        assert int(r.get("total")) == 800 and r.hlen("shared") == 800, srv.kind
        assert all(r.scard(f"set{t}") == 100 for t in range(8))
        pool.disconnect()
