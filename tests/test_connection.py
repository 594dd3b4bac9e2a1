"""Connection commands: PING ECHO QUIT RESET HELLO AUTH SELECT CLIENT, unknown commands."""

import pytest

from diff import run_script
from resp_client import Err, Map, RespClient, Status, encode_command

SCENARIOS = {
    "ping": ["PING", "PING hello", ("PING", b"\x00\xff"), "PING a b", "ping"],
    "echo": ["ECHO x", ("ECHO", b""), ("ECHO", b"\x00\xff\r\n"), "ECHO", "ECHO a b"],
    "unknown_command": ["NOSUCHCMD", "NOSUCHCMD a b c", ("NOSUCHCMD", "a" * 200), ("FOO", b"\xff"),
                        "GET a b c", "SET"],
    "select": ["SELECT 0", "SELECT 15", "SELECT 16", "SELECT -1", "SELECT x", "SELECT 1 2", "SELECT",
               "SET k v", "SELECT 0", "GET k"],
    "client_name": ["CLIENT GETNAME", "CLIENT SETNAME myname", "CLIENT GETNAME", "CLIENT SETNAME ''",
                    ("CLIENT", "SETNAME", "has space"), ("CLIENT", "SETNAME", "new\nline"),
                    ("CLIENT", "SETNAME", ""), "CLIENT GETNAME", "CLIENT SETNAME", "CLIENT SETNAME a b",
                    "CLIENT GETNAME x"],
    "client_errors": ["CLIENT", "CLIENT NOSUCH", "CLIENT KILL ID abc", "CLIENT KILL ID 999999999",
                      "CLIENT KILL 1.2.3.4:5", "CLIENT KILL FOO bar", "CLIENT LIST TYPE foo",
                      "CLIENT LIST ID abc", "CLIENT LIST ID 999999999", "CLIENT ID x"],
    "client_shapes": ["CLIENT ID", "CLIENT INFO", "CLIENT LIST", "CLIENT LIST TYPE normal"],
    "hello_versions": ["HELLO 2", "HELLO 4", "HELLO 1", "HELLO abc", "HELLO 3", "PING", "HELLO 2", "PING",
                       "HELLO 3 SETNAME hn", "CLIENT GETNAME", "HELLO 2 SETNAME", "HELLO 2 FOO",
                       "HELLO 3 AUTH default anything", "HELLO 3 AUTH", "HELLO 2"],
    "hello_noargs": ["HELLO"],
    "hello_bad_setname": [("HELLO", "3", "SETNAME", "a b"), "PING", "CLIENT GETNAME", ("HELLO", "3", "SETNAME", ""),
                          "CLIENT GETNAME", "HGETALL nokey", "HELLO 2 AUTH", "HELLO 2 AUTH default", "HELLO 3 SETNAME x AUTH"],
    "auth_without_password": ["AUTH x", "AUTH default x", "AUTH a b c", "AUTH"],
    "errors_echo_raw_bytes": ["SADD s a", ("EXPIRE", "s", "10", b"\xff"), ("EXPIRE", "s", "10", b"a\x00b"), ("CLIENT", b"\x00"), ("CLIENT", b"\xfe"),
                              ("NOSUCH", b"a\x00b"), ("OBJECT", b"\xff\xfe"), ("SET", "k", "v", b"\xff"),
                              ("NOSUCH\xff",), (b"\xff\x00x",)],
    "reset_basic": ["SELECT 2", "CLIENT SETNAME n", "RESET", "CLIENT GETNAME", "SET k v", "SELECT 2", "GET k",
                    "SELECT 0", "GET k"],
    "reset_in_multi": ["MULTI", "SET k v", "RESET", "EXEC", "GET k"],
    "reset_clears_watch": ["WATCH k", "SET k 1", "RESET", "MULTI", "SET k 2", "EXEC", "GET k"],
    "reset_arity": ["RESET x"],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])


def test_reset_returns_to_resp2(pair):
    pair("HELLO", "3")
    pair.r.protocol = pair.s.protocol = 3
    pair("RESET")
    pair("HGETALL", "nokey")
    pair("HSET", "h", "f", "v")
    r = pair("HGETALL", "h")
    assert r == [b"f", b"v"], "after RESET the connection speaks RESP2 (flat array)"


def test_quit(servers):
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        assert c.call("QUIT") == Status(b"OK"), srv.kind
        assert c.is_closed(), f"{srv.kind}: connection still open after QUIT"
        c.close()


def test_quit_pipelined_drops_rest(servers):
    """Replies before QUIT are delivered, QUIT answers +OK, later commands are not run."""
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        c.call("DEL", "qk")
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$2\r\nqk\r\n$1\r\n1\r\n*1\r\n$4\r\nQUIT\r\n*3\r\n$3\r\nSET\r\n$2\r\nqk\r\n$1\r\n2\r\n")
        data = c.read_until_close()
        assert data == b"+OK\r\n+OK\r\n", (srv.kind, data)
        c2 = srv.client()
        assert c2.call("GET", "qk") == b"1", srv.kind
        c2.close()


def _info_fields(text: bytes) -> dict:
    out = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def _client_fields(line: bytes) -> dict:
    out = {}
    for part in line.decode().strip().split(" "):
        k, _, v = part.partition("=")
        out[k] = v
    return out


CLIENT_LIST_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "multi",
                      "qbuf", "qbuf-free", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "resp"]


def test_client_list_fields(pair):
    pair("CLIENT", "SETNAME", "me")
    pair("SELECT", "3")
    for side, c in pair.each():
        cid = c.call("CLIENT", "ID")
        assert isinstance(cid, int) and cid > 0
        lines = [l for l in c.call("CLIENT", "LIST").splitlines() if l.strip()]
        mine = [_client_fields(l) for l in lines if _client_fields(l).get("id") == str(cid)]
        assert len(mine) == 1, (side, lines)
        f = mine[0]
        missing = [k for k in CLIENT_LIST_FIELDS if k not in f]
        assert not missing, f"{side}: CLIENT LIST lacks {missing}"
        assert f["name"] == "me" and f["db"] == "3" and f["cmd"] == "client|list", (side, f)
        assert f["addr"].startswith("127.0.0.1:") and f["laddr"] == f"127.0.0.1:{c.port}", (side, f)
        info = _client_fields(c.call("CLIENT", "INFO"))
        assert info["id"] == str(cid) and info["name"] == "me" and info["cmd"] == "client|info", (side, info)
        assert not [k for k in CLIENT_LIST_FIELDS if k not in info], (side, info)
        byid = c.call("CLIENT", "LIST", "ID", str(cid))
        assert _client_fields(byid)["id"] == str(cid)


def test_client_list_shows_multi(pair):
    for side, c in pair.each():
        c.call("MULTI")
        c.call("PING")
        c.call("PING")
        other = (pair.rs if side == "roaringd" else pair.ss).client()
        lines = [_client_fields(l) for l in other.call("CLIENT", "LIST").splitlines() if l.strip()]
        other.close()
        c.call("DISCARD")
        assert any(l.get("multi") == "2" for l in lines), (side, lines)


def test_client_ids_increase(pair):
    for side, _ in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        a, b = srv.client(), srv.client()
        ia, ib = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        a.close(); b.close()
        assert ib > ia, (side, ia, ib)


def test_client_kill_id(pair):
    for side, c in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        victim = srv.client()
        vid = victim.call("CLIENT", "ID")
        assert c.call("CLIENT", "KILL", "ID", str(vid)) == 1, side
        assert victim.is_closed(), f"{side}: killed client still connected"
        assert c.call("CLIENT", "KILL", "ID", str(vid)) == 0, side
        assert c.call("PING") == Status(b"PONG")
        victim.close()


def test_client_kill_addr(pair):
    for side, c in pair.each():
        srv = pair.rs if side == "roaringd" else pair.ss
        victim = srv.client()
        vid = victim.call("CLIENT", "ID")
        addr = _client_fields(c.call("CLIENT", "LIST", "ID", str(vid)))["addr"]
        assert c.call("CLIENT", "KILL", addr) == Status(b"OK"), side
        assert victim.is_closed(), side
        assert c.call("CLIENT", "KILL", addr) == Err(b"ERR No such client"), side
        victim.close()


def test_client_kill_skipme(pair):
    for side, c in pair.each():
        cid = c.call("CLIENT", "ID")
        assert c.call("CLIENT", "KILL", "ID", str(cid), "SKIPME", "yes") == 0, side
        assert c.call("PING") == Status(b"PONG")


def test_client_kill_self(servers):
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        cid = c.call("CLIENT", "ID")
        c.send_raw(encode_command("CLIENT", "KILL", "ID", str(cid), "SKIPME", "no"))
        data = c.read_until_close()
        assert data in (b":1\r\n", b""), (srv.kind, data)
        c.close()


@pytest.mark.roaringd_only
def test_client_setinfo(servers):
    """CLIENT SETINFO (Redis 7.2; redis-py sends it on connect). Not in Redis 7.0."""
    c = servers.roaringd.client()
    try:
        assert c.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == Status(b"OK")
        assert c.call("CLIENT", "SETINFO", "LIB-VER", "1.2.3") == Status(b"OK")
        info = _client_fields(c.call("CLIENT", "INFO"))
        assert info.get("lib-name") == "mylib" and info.get("lib-ver") == "1.2.3", info
        assert isinstance(c.call("CLIENT", "SETINFO", "LIB-NAME", "has space"), Err)
        assert isinstance(c.call("CLIENT", "SETINFO", "NOSUCH", "x"), Err)
    finally:
        c.close()


def test_hello_map_fields(servers):
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        r = c.call("HELLO", "3")
        assert isinstance(r, Map), (srv.kind, r)
        d = dict(r.items)
        for k in (b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"):
            assert k in d, (srv.kind, k, d)
        assert d[b"proto"] == 3 and d[b"id"] == c.call("CLIENT", "ID")
        r2 = c.call("HELLO", "2")
        assert isinstance(r2, list) and len(r2) == 14, (srv.kind, r2)
        c.close()


# --- AUTH (per-test servers with requirepass) ---------------------------------------------

AUTH_SCENARIOS = {
    "noauth": ["PING", "GET k", "SET k v", "CLIENT ID", "SELECT 1", "MULTI", "EXEC"],
    "auth_wrong_then_right": ["AUTH wrong", "GET k", "AUTH secret", "GET k", "SET k v", "GET k"],
    "auth_user": ["AUTH default wrong", "AUTH nouser secret", "AUTH default secret", "PING"],
    "auth_arity": ["AUTH", "AUTH a b c"],
    "hello_needs_auth": ["HELLO 3", "HELLO 2", "HELLO 3 AUTH default wrong", "PING", "HELLO 3 AUTH default secret",
                         "PING", "HELLO 2"],
    "hello_auth_setname": ["HELLO 2 AUTH default secret SETNAME nm", "CLIENT GETNAME"],
    "reset_deauth": ["AUTH secret", "PING", "RESET", "PING", "AUTH secret", "PING"],
    "quit_allowed": ["QUIT"],
}


@pytest.mark.parametrize("name", sorted(AUTH_SCENARIOS))
def test_auth_scenario(fresh, name):
    from diff import Pair
    r, s = fresh(["--requirepass", "secret"])
    r.password = s.password = None  # connect unauthenticated
    p = Pair(r, s)
    try:
        if name == "quit_allowed":
            for c in (p.r, p.s):
                assert c.call("QUIT") == Status(b"OK")
        else:
            run_script(p, AUTH_SCENARIOS[name])
    finally:
        p.close()


def test_auth_per_connection(fresh):
    r, s = fresh(["--requirepass", "secret"])
    for srv in (r, s):
        a = RespClient(srv.port)
        b = RespClient(srv.port)
        assert a.call("AUTH", "secret") == Status(b"OK")
        assert a.call("SET", "k", "v") == Status(b"OK")
        assert isinstance(b.call("GET", "k"), Err) and b.call("GET", "k").value.startswith(b"NOAUTH"), srv.kind
        a.close(); b.close()


def test_config_set_requirepass(fresh):
    r, s = fresh()
    for srv in (r, s):
        a = RespClient(srv.port)
        assert a.call("CONFIG", "SET", "requirepass", "pw") == Status(b"OK"), srv.kind
        assert a.call("PING") == Status(b"PONG"), f"{srv.kind}: existing connection keeps its authentication"
        b = RespClient(srv.port)
        assert b.call("PING") == Err(b"NOAUTH Authentication required."), srv.kind
        assert b.call("AUTH", "pw") == Status(b"OK")
        assert a.call("CONFIG", "SET", "requirepass", "") == Status(b"OK")
        c = RespClient(srv.port)
        assert c.call("PING") == Status(b"PONG"), srv.kind
        a.close(); b.close(); c.close()


def test_quit_inside_multi(servers):
    """QUIT inside MULTI answers +OK, closes, and the queued commands never run."""
    servers.reset()
    outs = []
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        c.send_raw(encode_command("MULTI") + encode_command("SET", "qm", "1") + encode_command("QUIT") +
                   encode_command("EXEC"))
        data = c.read_until_close()
        c.close()
        c2 = srv.client()
        outs.append((data, c2.call("EXISTS", "qm")))
        c2.close()
    assert outs[0] == outs[1], outs


def test_client_info_tracks_state(servers):
    """CLIENT INFO reflects the connection's protocol, database, name, MULTI and last command."""
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        c.call("HELLO", "3", "SETNAME", "tracked")
        c.protocol = 3
        c.call("SELECT", "4")
        info = _client_fields(_as_bytes(c.call("CLIENT", "INFO")))
        assert info["resp"] == "3" and info["db"] == "4" and info["name"] == "tracked", (srv.kind, info)
        c.call("RESET")
        info = _client_fields(_as_bytes(c.call("CLIENT", "INFO")))
        assert info["resp"] == "2" and info["db"] == "0" and info["name"] == "", (srv.kind, info)
        c.close()


def _as_bytes(r):
    from resp_client import Verbatim
    return r.value if isinstance(r, Verbatim) else r
