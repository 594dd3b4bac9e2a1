"""Streamed replies: a big TR.RANGE, TR.RANGEBITARRAY, SMEMBERS, HGETALL,
HKEYS or HVALS reply is produced a chunk at a time while the client reads
it, from a snapshot taken at the command's commit (docs/architecture.md,
"Reply bounds"). The replies are compared byte for byte with what the
command must send; a client that stops reading in the middle blocks no
other client, no writer of the key, and sees the key as it was when its
command ran. Nothing here asserts on time."""

import socket
import time

import pytest

from resp_client import Status, encode_command

pytestmark = pytest.mark.roaringd_only

SET_END = 2_999_999  # TR.SETRANGE big 0 SET_END: 3M values, a ~29 MB reply
HIGH = [4_000_000_000, 4_294_967_295]
OUT_OF_RANGE = b"-ERR invalid arguments, maybe out of range or illegal\r\n"


def ints(values) -> bytes:
    return b"*%d\r\n" % len(values) + b"".join(b":%d\r\n" % v for v in values)


def bulk(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def aggregate(head: bytes, n: int, items) -> bytes:
    return head + b"%d\r\n" % n + b"".join(bulk(i) for i in items)


class Raw:
    """A raw connection that reads exactly as many bytes as asked."""

    def __init__(self, port: int, rcvbuf: int | None = None, timeout: float = 120):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Set before connecting: the window stays small, so the
            # server stalls early in a big reply.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))

    def send(self, *cmds):
        self.sock.sendall(b"".join(encode_command(*c) for c in cmds))

    def read(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise AssertionError(f"closed after {got} of {n} bytes")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def read_until_close(self) -> int:
        """Bytes received until the server closes the connection."""
        got = 0
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return got
            if not chunk:
                return got
            got += len(chunk)

    def close(self):
        self.sock.close()


def seed_bitmap(c):
    assert c.call("TR.SETRANGE", "big", "0", str(SET_END)) == SET_END + 1
    assert c.call("TR.SETBITS", "big", *map(str, HIGH)) == SET_END + 3


MEMBERS = [b"m%06d" % i for i in range(100_000)]
FIELDS = [b"f%06d" % i for i in range(50_000)]


def seed_collections(c):
    assert c.call("SADD", "bigset", *MEMBERS) == len(MEMBERS)
    assert c.call("HSET", "bighash", *[x for f in FIELDS for x in (f, b"v" + f)]) == len(FIELDS)


@pytest.fixture(scope="module")
def server():
    from servers import ServerProcess
    s = ServerProcess("roaringd", ["--io-threads", "1"]).start()
    c = s.client(timeout=120)
    seed_bitmap(c)
    seed_collections(c)
    c.close()
    yield s
    s.cleanup()


def test_big_tr_replies_arrive_complete_and_correct(server):
    r = Raw(server.port)
    all_values = list(range(SET_END + 1)) + HIGH
    r.send(("TR.RANGE", "big", "0", "4294967295"))
    assert r.read(len(want := ints(all_values))) == want
    # Starting inside a container and ending inside another.
    r.send(("TR.RANGE", "big", "70001", "2000003"))
    assert r.read(len(want := ints(range(70001, 2000004)))) == want
    width = 1_000_000
    r.send(("TR.RANGEBITARRAY", "big", "2999000", str(2999000 + width - 1)))
    assert r.read(len(want := bulk(b"1" * 1000 + b"0" * (width - 1000)))) == want
    r.send(("TR.RANGEBITARRAY", "big", "3999999000", "4000998999"))
    bits = bytearray(b"0" * 1_000_000)
    bits[1000] = ord("1")
    assert r.read(len(want := bulk(bytes(bits)))) == want
    r.send(("PING",))
    assert r.read(7) == b"+PONG\r\n"
    r.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_big_set_and_hash_replies_arrive_complete_and_correct(server, proto):
    """Big sets and hashes reply in member / field byte order (their
    hashtable order), with RESP3's set and map types under HELLO 3."""
    rc = server.client(protocol=proto, timeout=120)
    fields = sorted(FIELDS)
    members = sorted(MEMBERS)
    if proto == 3:
        set_head, map_head, pairs = b"~", b"%", len(fields)
    else:
        set_head, map_head, pairs = b"*", b"*", 2 * len(fields)
    flat = [x for f in fields for x in (f, b"v" + f)]
    cases = [
        (("SMEMBERS", "bigset"), aggregate(set_head, len(members), members)),
        (("HGETALL", "bighash"), aggregate(map_head, pairs, flat)),
        (("HKEYS", "bighash"), aggregate(b"*", len(fields), fields)),
        (("HVALS", "bighash"), aggregate(b"*", len(fields), [b"v" + f for f in fields])),
    ]
    for cmd, want in cases:
        rc.send_raw(encode_command(*cmd))
        while len(rc.buf) < len(want):
            rc._fill()
        got, rc.buf = rc.buf[:len(want)], rc.buf[len(want):]
        assert got == want, cmd
    assert rc.call("PING") == Status(b"PONG")
    rc.close()


def test_pipelines_and_transactions_around_big_replies(server):
    """Streamed replies keep their places among pipelined replies; a group
    that writes the key after the read, and EXEC, build the reply whole
    from the state at the command's point in the group."""
    r = Raw(server.port)
    head = ints(range(100_000))
    r.send(("TR.RANGE", "big", "0", "99999"), ("PING",), ("TR.RANGE", "big", "0", "99999"),
           ("TR.BITCOUNT", "big"), ("SCARD", "bigset"))
    want = head + b"+PONG\r\n" + head + b":%d\r\n" % (SET_END + 3) + b":100000\r\n"
    assert r.read(len(want)) == want
    # A write before the read in one group: the read sees it.
    r.send(("TR.SETBIT", "big", "3500001", "1"), ("TR.RANGE", "big", "2900000", "3999999"),
           ("TR.SETBIT", "big", "3500001", "0"))
    want = b":0\r\n" + ints(list(range(2_900_000, SET_END + 1)) + [3_500_001]) + b":1\r\n"
    assert r.read(len(want)) == want
    # A write after the read in one group, and in EXEC: the read does not.
    r.send(("TR.RANGE", "big", "0", "99999"), ("TR.SETBIT", "big", "5", "0"),
           ("TR.RANGE", "big", "0", "9"), ("TR.SETBIT", "big", "5", "1"))
    want = head + b":1\r\n" + ints([0, 1, 2, 3, 4, 6, 7, 8, 9]) + b":0\r\n"
    assert r.read(len(want)) == want
    r.send(("MULTI",), ("TR.RANGE", "big", "0", "99999"), ("TR.SETBIT", "big", "5", "0"),
           ("SMEMBERS", "bigset"), ("TR.SETBIT", "big", "5", "1"), ("EXEC",))
    members = aggregate(b"*", len(MEMBERS), sorted(MEMBERS))
    want = b"+OK\r\n" + b"+QUEUED\r\n" * 4 + b"*4\r\n" + head + b":1\r\n" + members + b":0\r\n"
    assert r.read(len(want)) == want
    r.close()


def test_a_stalled_reader_blocks_neither_other_clients_nor_writers_of_its_key(server):
    """One worker thread (`--io-threads 1`): a client that stops reading a
    29 MB TR.RANGE reply in the middle does not keep the worker from a
    second client's PING, nor a writer from the key; when it reads again it
    gets the key as it was when its command ran. CLIENT KILL still ends it."""
    c = server.client(timeout=120)
    assert c.call("TR.SETRANGE", "stall", "0", str(SET_END)) == SET_END + 1
    want = ints(range(SET_END + 1))
    slow = Raw(server.port, rcvbuf=64 << 10)
    slow.send(("TR.RANGE", "stall", "0", "4294967295"))
    assert slow.read(1000) == want[:1000]
    # The reply is far bigger than the socket buffers: the server is
    # still in the middle of it while these run.
    other = server.client()
    assert other.call("PING") == Status(b"PONG")
    assert c.call("TR.SETBIT", "stall", "7", "0") == 1
    assert c.call("TR.SETRANGE", "stall", "100", "200") == SET_END
    assert c.call("DEL", "stall") == 1
    assert c.call("TR.SETBITS", "stall", "1") == 1
    assert other.call("TR.RANGE", "stall", "0", "10") == [1]
    assert slow.read(len(want) - 1000) == want[1000:]
    slow.send(("PING",))
    assert slow.read(7) == b"+PONG\r\n"
    slow.close()

    # A stalled reader can be killed.
    assert c.call("TR.SETRANGE", "stall", "0", str(SET_END)) == SET_END + 1
    slow = Raw(server.port, rcvbuf=64 << 10)
    slow.send(("CLIENT", "ID"), ("TR.RANGE", "stall", "0", "4294967295"))
    line = b""
    while not line.endswith(b"\r\n"):
        line += slow.read(1)
    cid = int(line[1:-2])
    assert slow.read(1000) == want[:1000]
    assert c.call("CLIENT", "KILL", "ID", str(cid)) == 1
    assert slow.read_until_close() < len(want)
    slow.close()
    assert c.call("DEL", "stall") == 1
    assert other.call("PING") == Status(b"PONG")
    c.close()
    other.close()


def test_streamed_replies_keep_max_reply_bytes_and_the_output_limits(roaringd_server):
    """max-reply-bytes refuses a reply by its exact size before its first
    byte (TR.RANGE of 1M values: 4 MB by the smallest encoding, 6.9 MB
    exact); the soft output limit closes a client that stalls in the middle
    of a streamed reply; the hard limit closes one whose streamed reply
    turns out bigger than it."""
    s = roaringd_server(["--client-output-buffer-limit", "normal", "0", "1mb", "1"]).start()
    c = s.client(timeout=120)
    seed_bitmap(c)
    r = Raw(s.port)
    assert c.call("CONFIG", "SET", "max-reply-bytes", "6mb") == Status(b"OK")
    r.send(("TR.RANGE", "big", "0", "999999"), ("TR.RANGE", "big", "0", "599999"))
    want = ints(range(600_000))  # 5.3 MB
    assert r.read(len(OUT_OF_RANGE) + len(want)) == OUT_OF_RANGE + want
    assert c.call("CONFIG", "SET", "max-reply-bytes", "512mb") == Status(b"OK")

    # Soft limit: ~29 MB pending, far more than the socket buffers hold,
    # for more than a second.
    slow = Raw(s.port, rcvbuf=64 << 10)
    slow.send(("TR.RANGE", "big", "0", str(SET_END)))
    assert slow.read(100) == ints(range(SET_END + 1))[:100]
    time.sleep(3)  # reads nothing meanwhile
    assert slow.read_until_close() < 29_000_000
    slow.close()

    # Hard limit (3 MB), also the ceiling of the TR.RANGE family's replies.
    assert c.call("CONFIG", "SET", "client-output-buffer-limit", "normal 3mb 0 0") == Status(b"OK")
    r.send(("TR.RANGE", "big", "0", "399999"))
    assert r.read(len(OUT_OF_RANGE)) == OUT_OF_RANGE
    r.close()
    # 200k members of 20 bytes make 5.4 MB, more than their lower bound
    # (1.2 MB) tells before the first byte: closed in the middle.
    members = [b"member-%013d" % i for i in range(200_000)]
    assert c.call("SADD", "wide", *members) == len(members)
    slow = Raw(s.port)
    slow.send(("SMEMBERS", "wide"))
    assert slow.read_until_close() < 5_000_000
    slow.close()
    assert c.call("SCARD", "wide") == len(members)
    c.close()
