"""Wire-level tests with raw sockets: inline commands, pipelining, protocol errors and
request limits. Compared byte for byte with Redis."""

import socket
import time

import pytest

from resp_client import RespClient, Status, encode_command


SENTINEL = encode_command("ECHO", "__end-of-test__")
SENTINEL_REPLY = b"$15\r\n__end-of-test__\r\n"


def raw_exchange(port, data: bytes, expect_close: bool, chunked: bool = False) -> bytes:
    """Send `data`, then collect everything the server answers: until it closes
    (expect_close), or else until the reply to a trailing ECHO sentinel (not included)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if not expect_close:
        data = data + SENTINEL
    try:
        if chunked:
            for i in range(len(data)):
                s.sendall(data[i:i + 1])
        else:
            s.sendall(data)
        out = b""
        s.settimeout(5)
        while True:
            if not expect_close and out.endswith(SENTINEL_REPLY):
                return out[:-len(SENTINEL_REPLY)]
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                raise AssertionError(f"server did not close the connection / answer; got {out[:300]!r}")
            except ConnectionResetError:
                break
            if not chunk:
                if not expect_close:
                    raise AssertionError(f"server closed the connection unexpectedly; got {out[:300]!r}")
                break
            out += chunk
        return out
    finally:
        s.close()


# (name, bytes sent, whether the server closes the connection)
CASES = [
    ("inline_ping", b"PING\r\n", False),
    ("inline_lf_only", b"PING\n", False),
    ("inline_args", b"SET ik hello\r\nGET ik\r\n", False),
    ("inline_quotes", b'SET "i k" "a b\\x41\\n"\r\nGET "i k"\r\n', False),
    ("inline_single_quotes", b"SET 'q' 'x y'\r\nGET q\r\nECHO 'a\\'b'\r\n", False),
    ("inline_empty_lines", b"\r\n\r\n  \r\nPING\r\n", False),
    ("inline_extra_spaces", b"  ECHO    x   \r\n", False),
    ("inline_unknown", b"NOSUCH a b\r\n", False),
    ("inline_unbalanced_quotes", b'ECHO "abc\r\nPING\r\n', True),
    ("inline_bad_quote_end", b'ECHO "abc"def\r\n', True),
    ("inline_tabs", b"ECHO\tx\ty\r\nECHO\tz\r\n", False),
    ("inline_escapes", b'ECHO "\\x4g\\t\\r\\a\\b\\\\\\""\r\nECHO "\\xff\\x00"\r\n', False),
    ("inline_high_bytes", b"ECHO \xff\xfe\r\nSET \xc3\xa9 \xff\r\nGET \xc3\xa9\r\n", False),
    ("multibulk_zero", b"*0\r\nPING\r\n", False),
    ("multibulk_negative", b"*-1\r\nPING\r\n", False),
    ("multibulk_invalid_len", b"*abc\r\n", True),
    ("multibulk_too_long_count", b"*2147483648\r\n", True),
    ("multibulk_huge_count", b"*99999999999999999999\r\n", True),
    ("bulk_invalid_len", b"*1\r\n$abc\r\n", True),
    ("bulk_negative_len", b"*1\r\n$-5\r\n", True),
    ("bulk_over_proto_max", b"*2\r\n$4\r\nECHO\r\n$536870913\r\n", True),
    ("bulk_expected_dollar", b"*1\r\n+PING\r\n", True),
    ("bulk_expected_dollar_colon", b"*2\r\n$4\r\nECHO\r\n:12\r\n", True),
    ("replies_before_error_are_sent", b"PING\r\n*1\r\n$4\r\nPING\r\n*abc\r\n", True),
    ("too_big_inline", b"A" * (70 * 1024), True),
    ("too_big_mbulk_count", b"*" + b"1" * (70 * 1024), True),
    ("too_big_bulk_count", b"*1\r\n$" + b"1" * (70 * 1024), True),
    ("pipeline_mixed_inline_multibulk", b"PING\r\n" + encode_command("ECHO", "x") + b"ECHO y\r\n", False),
    ("binary_bulk", encode_command("SET", b"\x00\r\n", b"\r\n\x00") + encode_command("GET", b"\x00\r\n"), False),
    ("pipeline_100", b"".join(encode_command("INCR", "pc") for _ in range(100)), False),
]


@pytest.mark.parametrize("name,data,closes", CASES, ids=[c[0] for c in CASES])
def test_raw(servers, name, data, closes):
    servers.reset()
    got = raw_exchange(servers.roaringd.port, data, closes)
    want = raw_exchange(servers.redis.port, data, closes)
    assert got == want, f"{name}: roaringd {got[:500]!r} != Redis {want[:500]!r}"


def test_byte_by_byte(servers):
    servers.reset()
    data = encode_command("SET", "bk", "v" * 50) + b"GET bk\r\n" + encode_command("STRLEN", "bk")
    got = raw_exchange(servers.roaringd.port, data, False, chunked=True)
    want = raw_exchange(servers.redis.port, data, False, chunked=True)
    assert got == want


@pytest.mark.parametrize("name,data", [("invalid_mbulk", b"*abc\r\n"), ("too_big_bulk", b"*1\r\n$999999999999\r\n"),
                                       ("too_big_inline", b"B" * (70 * 1024))])
def test_protocol_error_isolated(servers, name, data):
    """A protocol error closes that client only; other clients (incl. one mid-MULTI) are unaffected."""
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        other = srv.client()
        other.call("SET", "iso", "1")
        other.call("MULTI")
        other.call("INCR", "iso")
        raw_exchange(srv.port, data, True)
        assert other.call("EXEC") == [2], srv.kind
        assert other.call("GET", "iso") == b"2"
        fresh = srv.client()
        assert fresh.call("PING") == Status(b"PONG")
        other.close(); fresh.close()


def test_big_pipeline(servers):
    """10,000 pipelined commands in one write: every reply, in order."""
    servers.reset()
    cmds = []
    for i in range(10000):
        cmds.append(("SET", f"p{i % 97}", str(i)) if i % 3 else ("INCR", "ctr"))
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        replies = c.pipeline(cmds)
        incrs = [r for cmd, r in zip(cmds, replies) if cmd[0] == "INCR"]
        assert incrs == list(range(1, len(incrs) + 1)), srv.kind
        assert all(r == Status(b"OK") for cmd, r in zip(cmds, replies) if cmd[0] == "SET"), srv.kind
        c.close()


def test_large_bulk_value(servers):
    servers.reset()
    big = bytes(range(256)) * 40000  # ~10 MB
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        assert c.call("SET", "big", big) == Status(b"OK")
        assert c.call("GET", "big") == big, srv.kind
        c.close()


def test_proto_max_bulk_len_config(fresh):
    r, s = fresh()
    outs = []
    for srv in (r, s):
        c = srv.client()
        assert c.call("CONFIG", "SET", "proto-max-bulk-len", "1048576") == Status(b"OK"), srv.kind
        ok = c.call("SET", "k", b"x" * 1048576)
        c.close()
        outs.append((ok, raw_exchange(srv.port, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n", True)))
    assert outs[0] == outs[1], outs


def test_unauthenticated_limits(fresh):
    """Under requirepass, Redis refuses long multibulk counts / big bulks before AUTH."""
    r, s = fresh(["--requirepass", "pw"])
    for data in (b"*11\r\n", b"*2\r\n$4\r\nAUTH\r\n$20000\r\n"):
        got = raw_exchange(r.port, data, True)
        want = raw_exchange(s.port, data, True)
        assert got == want, (data, got, want)


def test_many_connections(servers):
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        conns = [srv.client() for _ in range(200)]
        for i, c in enumerate(conns):
            c.send_raw(encode_command("INCR", "mc"))
        vals = sorted(c.read_reply() for c in conns)
        assert vals == list(range(1, 201)), srv.kind
        for c in conns:
            c.close()


def test_client_disconnect_mid_command(servers):
    """A client that disconnects half-way through a request leaves the server fine."""
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
        s.close()
        c = srv.client()
        assert c.call("PING") == Status(b"PONG")
        assert c.call("EXISTS", "k") == 0
        c.close()


def test_unread_replies_do_not_block_others(servers):
    """A client that pipelines many large replies and does not read them does not
    stall other clients; when it finally reads, every reply is complete."""
    servers.reset()
    big = b"z" * 1_000_000
    for srv in (servers.roaringd, servers.redis):
        setup = srv.client()
        assert setup.call("SET", "big", big) == Status(b"OK")
        hog = srv.client(timeout=60)
        hog.send_raw(encode_command("GET", "big") * 200)
        other = srv.client(timeout=30)
        for i in range(20):
            assert other.call("INCR", "other") == i + 1, srv.kind
        other.close()
        for _ in range(200):
            assert hog.read_reply() == big, srv.kind
        hog.close()
        setup.close()


def test_too_long_key_keeps_connection(servers):
    """Whatever the reply to an over-long key (roaringd limits store entry keys to
    64 KiB, Redis has no limit), the connection and the server stay usable."""
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        c = srv.client()
        c.call("SET", b"K" * 200_000, "v")
        c.call("SADD", "s", b"M" * 200_000)
        assert c.call("PING") == Status(b"PONG"), srv.kind
        assert c.call("SET", "after", "1") == Status(b"OK")
        c.close()
        c = srv.client()
        assert c.call("GET", "after") == b"1"
        c.close()
