"""Server commands: INFO, CONFIG, DBSIZE, TIME, SLOWLOG, SAVE/BGSAVE/LASTSAVE."""

import time

import pytest

from diff import Pair, run_script
from resp_client import Err, Map, Status, Verbatim

# Fields each INFO section must have (values are not compared: they differ by design).
INFO_FIELDS = {
    "server": ["redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id", "tcp_port",
               "server_time_usec", "uptime_in_seconds", "uptime_in_days"],
    "clients": ["connected_clients", "maxclients", "blocked_clients"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak", "maxmemory",
               "maxmemory_policy"],
    "persistence": ["loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
                    "rdb_last_bgsave_status", "aof_enabled", "aof_rewrite_in_progress", "aof_last_write_status"],
    "stats": ["total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
              "total_net_input_bytes", "total_net_output_bytes", "rejected_connections", "expired_keys",
              "evicted_keys", "keyspace_hits", "keyspace_misses", "total_error_replies"],
    "replication": ["role", "connected_slaves", "master_replid", "master_repl_offset"],
}


def info_text(reply) -> str:
    if isinstance(reply, Verbatim):
        return reply.value.decode()
    assert isinstance(reply, bytes), f"INFO reply is {reply!r}"
    return reply.decode()


def parse_info(text: str) -> dict:
    sections, cur = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("# "):
            cur = line[2:].strip().lower()
            sections[cur] = {}
        elif ":" in line:
            k, v = line.split(":", 1)
            sections.setdefault(cur, {})[k] = v
    return sections


@pytest.mark.parametrize("section", sorted(INFO_FIELDS))
def test_info_section_fields(ppair, section):
    ppair("INFO", section)
    for side, c in ppair.each():
        info = parse_info(info_text(c.call("INFO", section)))
        assert section in info, f"{side}: INFO {section} has no '# {section.capitalize()}' header: {list(info)}"
        missing = [f for f in INFO_FIELDS[section] if f not in info[section]]
        assert not missing, f"{side}: INFO {section} lacks {missing}"


def test_info_default_and_all(pair):
    pair("SET", "k", "v")
    for side, c in pair.each():
        default = parse_info(info_text(c.call("INFO")))
        for s in INFO_FIELDS:
            assert s in default, f"{side}: plain INFO lacks section {s}"
        assert "keyspace" in default, side
        full = parse_info(info_text(c.call("INFO", "all")))
        assert "commandstats" in full, f"{side}: INFO all lacks commandstats"
        everything = parse_info(info_text(c.call("INFO", "everything")))
        assert "commandstats" in everything
        multi = parse_info(info_text(c.call("INFO", "server", "clients")))
        assert "server" in multi and "clients" in multi, (side, list(multi))
        assert parse_info(info_text(c.call("INFO", "nosuchsection"))) == {}, side


def test_info_server_values(pair):
    for side, c in pair.each():
        s = parse_info(info_text(c.call("INFO", "server")))["server"]
        assert s["tcp_port"] == str(c.port), (side, s["tcp_port"])
        assert s["redis_mode"] == "standalone"
        assert int(s["uptime_in_seconds"]) >= 0 and int(s["process_id"]) > 0
        r = parse_info(info_text(c.call("INFO", "replication")))["replication"]
        assert r["role"] == "master", side


def test_info_keyspace(pair):
    pair.seq([("SET", "a", "1"), ("SET", "b", "2", "EX", "100"), ("SADD", "s", "x"), ("SELECT", "2"),
              ("SET", "c", "3"), ("SELECT", "0")])
    for side, c in pair.each():
        ks = parse_info(info_text(c.call("INFO", "keyspace")))
        assert "keyspace" in ks, side
        db0 = dict(kv.split("=") for kv in ks["keyspace"]["db0"].split(","))
        db2 = dict(kv.split("=") for kv in ks["keyspace"]["db2"].split(","))
        assert db0["keys"] == "3" and db0["expires"] == "1" and "avg_ttl" in db0, (side, db0)
        assert db2["keys"] == "1" and db2["expires"] == "0", (side, db2)
        assert "db1" not in ks["keyspace"], side


def test_info_commandstats(pair):
    pair("CONFIG", "RESETSTAT")
    for _ in range(3):
        pair("SET", "k", "v")
    pair("GET", "k")
    for side, c in pair.each():
        cs = parse_info(info_text(c.call("INFO", "commandstats")))["commandstats"]
        assert "cmdstat_set" in cs, (side, cs)
        fields = dict(kv.split("=") for kv in cs["cmdstat_set"].split(","))
        for f in ("calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"):
            assert f in fields, (side, fields)
        assert fields["calls"] == "3", (side, fields)
        assert dict(kv.split("=") for kv in cs["cmdstat_get"].split(","))["calls"] == "1", side


def test_info_stats_counters(pair):
    pair("CONFIG", "RESETSTAT")
    pair("SET", "k", "v")
    pair("GET", "k")
    pair("GET", "k")
    pair("GET", "nokey")
    for side, c in pair.each():
        st = parse_info(info_text(c.call("INFO", "stats")))["stats"]
        assert st["keyspace_hits"] == "2" and st["keyspace_misses"] == "1", (side, st)
        assert int(st["total_commands_processed"]) >= 4


def test_info_clients_count(pair):
    """connected_clients counts open connections: +3 while three more are open,
    back down (eventually: closes are asynchronous) once they are closed."""
    def count(c):
        return int(parse_info(info_text(c.call("INFO", "clients")))["clients"]["connected_clients"])

    for side, c in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        extra = [srv.client() for _ in range(3)]
        deadline = time.monotonic() + 10
        while count(c) < 4:  # accepting is asynchronous too
            assert time.monotonic() < deadline, f"{side}: connected_clients {count(c)} with 4 connections open"
            time.sleep(0.05)
        n1 = count(c)
        for e in extra:
            e.close()
        deadline = time.monotonic() + 10
        while count(c) > n1 - 3:
            assert time.monotonic() < deadline, f"{side}: connected_clients stays {count(c)} after closing 3 of {n1}"
            time.sleep(0.05)


def test_info_resp3_is_verbatim_or_bulk(servers):
    servers.reset()
    p = Pair(servers.roaringd, servers.redis, protocol=3)
    try:
        p("INFO", "server")
    finally:
        p.close()


SCENARIOS = {
    "dbsize": ["DBSIZE", "SET a 1", "SADD s x", "HSET h f v", "DBSIZE", "DEL a", "DBSIZE", "DBSIZE x"],
    "time": ["TIME", "TIME x"],
    "lastsave_save": ["LASTSAVE", "SAVE", "LASTSAVE", "SAVE x", "LASTSAVE x"],
    "config_get": ["CONFIG GET databases", "CONFIG GET timeout", "CONFIG GET proto-max-bulk-len",
                   "CONFIG GET requirepass", "CONFIG GET appendfsync", "CONFIG GET slowlog-log-slower-than",
                   "CONFIG GET slowlog-max-len", "CONFIG GET nosuchparam", "CONFIG GET databases timeout",
                   "CONFIG GET DATABASES", "CONFIG GET", "CONFIG", "CONFIG NOSUCH"],
    "config_set_errors": ["CONFIG SET nosuchparam 1", "CONFIG SET slowlog-max-len abc", "CONFIG SET timeout",
                          "CONFIG SET databases 4", "CONFIG SET appendfsync sometimes"],
    "slowlog_arity": ["SLOWLOG GET 1 2", "SLOWLOG GET -1", "SLOWLOG GET -2", "SLOWLOG GET 0", "SLOWLOG LEN 1"],
    "config_resetstat": ["CONFIG RESETSTAT", "CONFIG RESETSTAT x"],
    "slowlog_basic": ["SLOWLOG LEN", "SLOWLOG GET", "SLOWLOG GET 1", "SLOWLOG RESET", "SLOWLOG GET abc",
                      "SLOWLOG NOSUCH", "SLOWLOG"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


def _config_get(c, name):
    r = c.call("CONFIG", "GET", name)
    if isinstance(r, Map):
        return dict(r.items)
    return dict(zip(r[0::2], r[1::2]))


def test_config_get_port_dir(pair):
    for side, c in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        assert _config_get(c, "port") == {b"port": str(srv.port).encode()}, side
        assert _config_get(c, "bind")[b"bind"].startswith(b"127.0.0.1"), side
        d = _config_get(c, "dir")[b"dir"]
        import os
        assert os.path.realpath(d.decode()) == os.path.realpath(srv.dir), (side, d, srv.dir)


def test_config_get_glob(pair):
    for side, c in pair.each():
        allc = _config_get(c, "*")
        assert b"port" in allc and b"databases" in allc and b"appendfsync" in allc, side
        sl = _config_get(c, "slowlog-*")
        assert set(sl) >= {b"slowlog-log-slower-than", b"slowlog-max-len"}, (side, sl)
        assert all(k.startswith(b"slowlog-") for k in sl), side


@pytest.mark.parametrize("param,value", [("slowlog-log-slower-than", "12345"), ("slowlog-max-len", "7"),
                                         ("timeout", "300"), ("appendfsync", "always"), ("maxclients", "500"),
                                         ("proto-max-bulk-len", "2097152"), ("maxmemory", "1000000000")])
def test_config_set_roundtrip(fresh_pair, param, value):
    p = fresh_pair()
    p("CONFIG", "SET", param, value)
    p("CONFIG", "GET", param)


def test_config_set_multiple(fresh_pair):
    p = fresh_pair()
    p("CONFIG", "SET", "slowlog-max-len", "9", "timeout", "12")
    p("CONFIG", "GET", "slowlog-max-len", "timeout")
    p("CONFIG", "SET", "slowlog-max-len", "10", "nosuch", "1")
    p("CONFIG", "GET", "slowlog-max-len")


def test_config_resetstat_clears_counters(pair):
    pair("SET", "k", "v")
    pair("GET", "k")
    pair("CONFIG", "RESETSTAT")
    for side, c in pair.each():
        info = parse_info(info_text(c.call("INFO", "all")))
        assert "cmdstat_get" not in info.get("commandstats", {}), (side, info.get("commandstats"))
        assert info["stats"]["keyspace_hits"] == "0", side


def test_slowlog_records(fresh_pair):
    p = fresh_pair()
    p("CONFIG", "SET", "slowlog-log-slower-than", "0")
    p("SLOWLOG", "RESET")
    p("CLIENT", "SETNAME", "slowclient")
    p("SET", "slowkey", "slowvalue")
    for side, c in p.each():
        entries = c.call("SLOWLOG", "GET", "100")
        assert isinstance(entries, list) and entries, side
        for e in entries:
            assert len(e) == 6, (side, e)
            eid, ts, dur, args, addr, name = e
            assert isinstance(eid, int) and isinstance(ts, int) and isinstance(dur, int), (side, e)
            assert isinstance(args, list) and all(isinstance(a, bytes) for a in args), (side, e)
            assert isinstance(addr, bytes) and isinstance(name, bytes)
        sets = [e for e in entries if e[3] == [b"SET", b"slowkey", b"slowvalue"]]
        assert sets and sets[0][5] == b"slowclient" and sets[0][4].startswith(b"127.0.0.1:"), (side, entries)
        assert abs(sets[0][1] - time.time()) < 600
        n = c.call("SLOWLOG", "LEN")
        assert isinstance(n, int) and n >= 1
        assert len(c.call("SLOWLOG", "GET", "1")) == 1
        assert c.call("SLOWLOG", "RESET") == Status(b"OK")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        c.call("SLOWLOG", "RESET")
        c.call("SET", "x", "y")
        assert c.call("SLOWLOG", "LEN") == 0, side


def test_slowlog_max_len(fresh_pair):
    p = fresh_pair()
    p("CONFIG", "SET", "slowlog-log-slower-than", "0")
    p("CONFIG", "SET", "slowlog-max-len", "3")
    for i in range(10):
        p("SET", f"k{i}", "v")
    for side, c in p.each():
        assert c.call("SLOWLOG", "LEN") == 3, side
        assert len(c.call("SLOWLOG", "GET", "-1")) == 3, side


def test_time_is_now(pair):
    for side, c in pair.each():
        sec, usec = c.call("TIME")
        assert sec.isdigit() and usec.isdigit() and int(usec) < 1_000_000, (side, sec, usec)
        assert abs(int(sec) - time.time()) < 60, side


def test_lastsave_advances(pair):
    for side, c in pair.each():
        before = c.call("LASTSAVE")
        assert isinstance(before, int)
        time.sleep(1.1)
        assert c.call("SAVE") == Status(b"OK")
        after = c.call("LASTSAVE")
        assert after > before and abs(after - time.time()) < 60, (side, before, after)


def test_bgsave(pair):
    pair("SET", "k", "v")
    pair("BGSAVE")
    for side, c in pair.each():
        deadline = time.monotonic() + 30
        while True:
            p = parse_info(info_text(c.call("INFO", "persistence")))["persistence"]
            if p.get("rdb_bgsave_in_progress") == "0":
                break
            assert time.monotonic() < deadline, side
            time.sleep(0.05)
        assert p["rdb_last_bgsave_status"] == "ok", side


def test_info_expired_keys_counter(pair):
    """expired_keys counts keys removed by expiry (lazy or active)."""
    pair("CONFIG", "RESETSTAT")
    for i in range(10):
        pair("SET", f"e{i}", "v", "PX", "50")
    time.sleep(0.2)
    for i in range(10):
        pair("GET", f"e{i}")  # lazy expiry, if the active cycle has not run yet
    for side, c in pair.each():
        st = parse_info(info_text(c.call("INFO", "stats")))["stats"]
        assert int(st["expired_keys"]) == 10, (side, st["expired_keys"])
        ks = parse_info(info_text(c.call("INFO", "keyspace"))).get("keyspace", {})
        assert "db0" not in ks, (side, ks)


def test_config_timeout_closes_idle_clients(fresh):
    """timeout N: a client idle for more than N seconds is disconnected (polled, generous bound)."""
    for srv in fresh():
        admin = srv.client()
        assert admin.call("CONFIG", "SET", "timeout", "1") == Status(b"OK")
        admin.close()
        idle = srv.client()
        assert idle.call("PING") == Status(b"PONG")
        assert idle.is_closed(timeout=15), f"{srv.kind}: idle client still connected 15 s after timeout 1"
        idle.close()


def test_client_output_buffer_limit_config_and_hard_limit(fresh_pair):
    """CONFIG GET/SET of client-output-buffer-limit as Redis words them, and a
    normal client whose reply passes the hard limit is disconnected (no
    reply) on both servers; others are unaffected."""
    pair = fresh_pair()
    pair("CONFIG", "GET", "client-output-buffer-limit")
    for bad in ["normal 1 2", "bogus 1 2 3", "normal x 2 3", "master 1 2 3", ""]:
        pair("CONFIG", "SET", "client-output-buffer-limit", bad)
    pair("CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 2 3 pubsub 0 0 0")
    pair("CONFIG", "GET", "client-output-buffer-limit")
    pair("CONFIG", "SET", "client-output-buffer-limit", "normal 64kb 0 0")
    pair("CONFIG", "GET", "client-output-buffer-limit")
    pair("SADD", "big", *[f"member-{i}" for i in range(20000)])
    from resp_client import encode_command
    for name, c in pair.each():
        c.send_raw(encode_command("SMEMBERS", "big"))  # about 300 KB: over the hard limit
        assert len(c.read_until_close()) < 64 * 1024, name
    for name, srv in (("roaringd", pair.rs), ("redis", pair.ss)):
        c = srv.client()
        assert c.call("SCARD", "big") == 20000, name
        assert len(c.call("SRANDMEMBER", "big", "100")) == 100, name
        c.close()
