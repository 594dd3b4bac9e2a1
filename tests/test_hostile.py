"""Hostile input over the wire: every command's numeric arguments at their
extremes, counts that ask for huge replies, and panics inside commands.

Each case must be answered (an error or a reply no larger than
`max-reply-bytes`), leave the connection usable and the server up, and
leave other commands of the same pipeline or transaction with their replies
and effects. Nothing here asserts on time; the latency of a bystander during
these cases is measured by a benchmark, not tested."""

import pytest

from resp_client import NIL_ARRAY, Err, RespClient, Status

pytestmark = pytest.mark.roaringd_only

# Values fed to every numeric argument position.
EXTREMES = ["0", "-1", "1", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
            "-9223372036854775807", "4294967295", "4294967296", "-4294967296", "2147483648", "-2147483648",
            "4611686018427387904", "-4611686018427387904", "18446744073709551616", "1e300", "-inf"]

# Per command: argument templates after the name; "N" marks a numeric
# argument. Every command of COMMAND LIST is either here or in NO_NUMBERS,
# so a new command without an entry fails test_every_command_is_covered.
NUMERIC = {
    "select": ["N"],
    "acl|log": ["N"], "acl|genpass": ["N"],
    "client|kill": ["ID N", "MAXAGE N"],
    "config|set": ["slowlog-max-len N", "random-pick-limit N", "hz N", "timeout N"],
    "slowlog|get": ["N"],
    "debug|sleep": [],  # takes seconds: not fed extremes (bounded at 3600 s)
    "command|getkeys": ["SETRANGE k N v", "SINTERCARD N a b"],
    "command|getkeysandflags": ["SINTERCARD N a b"],
    "expire": ["k N", "k N NX"], "pexpire": ["k N"], "expireat": ["k N"], "pexpireat": ["k N"],
    "scan": ["N", "0 COUNT N", "N COUNT N"],
    "object|freq": [], "memory|usage": ["k SAMPLES N", "s SAMPLES N"],
    "set": ["k v EX N", "k v PX N", "k v EXAT N", "k v PXAT N"],
    "setex": ["k N v"], "psetex": ["k N v"],
    "getex": ["k EX N", "k PX N", "k EXAT N", "k PXAT N"],
    "incrby": ["k N", "n N"], "decrby": ["k N", "n N"], "incrbyfloat": ["n N"],
    "getrange": ["k N N"], "substr": ["k N N"], "setrange": ["k N v", "new N v"],
    "sscan": ["s N", "s 0 COUNT N"], "spop": ["s N"], "srandmember": ["s N", "missing N"],
    "sintercard": ["N s", "1 s LIMIT N"],
    "hincrby": ["h f N"], "hincrbyfloat": ["h f N"],
    "hscan": ["h N", "h 0 COUNT N"], "hrandfield": ["h N", "h N WITHVALUES", "missing N WITHVALUES"],
    "tr.setbit": ["bm N 1", "bm N 0", "bm 1 N"],
    "tr.setbits": ["bm N", "bm N N"], "tr.clearbits": ["bm N", "bm N N"],
    "tr.setrange": ["bm N N"], "tr.fliprange": ["bm N N"],
    "tr.appendbitarray": ["bm N 101"],
    "tr.appendintarray": ["bm N"], "tr.setintarray": ["fresh N"],
    "tr.getbit": ["bm N"], "tr.getbits": ["bm N", "bm N N"],
    "tr.bitcount": ["bm N N"], "tr.bitpos": ["bm 1 N", "bm 0 N", "bm N"],
    "tr.scan": ["bm N", "bm 0 COUNT N", "bm N COUNT N"],
    "tr.range": ["bm N N"], "tr.rangebitarray": ["bm N N"],
    "tr.rank": ["bm N"],
}

NO_NUMBERS = set("""
ping echo quit reset hello auth client client|id client|setname client|getname client|list client|info
client|setinfo client|help info config config|get config|resetstat config|rewrite config|help dbsize time
flushdb flushall slowlog slowlog|len slowlog|reset slowlog|help save bgsave lastsave shutdown debug
debug|panic debug|panic-after-write debug|compact debug|help command command|count command|info command|docs command|list
command|help multi exec discard watch unwatch del unlink exists touch type ttl pttl expiretime pexpiretime
persist rename renamenx keys randomkey object object|encoding object|help object|refcount object|idletime
memory memory|malloc-stats memory|help memory|purge get setnx getset getdel mget mset msetnx incr decr
append strlen sadd srem sismember smismember scard smembers smove sinter sinterstore sunion sunionstore
sdiff sdiffstore hset hmset hsetnx hget hmget hgetall hdel hexists hlen hkeys hvals hstrlen
tr.setbitarray tr.min tr.max tr.bitop tr.bitopcard tr.jaccard tr.contains tr.diff tr.stat tr.optimize
tr.export tr.import tr.load tr.loadstring
acl acl|cat acl|deluser acl|dryrun acl|getuser acl|help acl|list acl|load acl|save acl|setuser acl|users acl|whoami
""".split())

# Commands never sent here: they end the connection or the server, or
# change what every other case relies on.
SKIP = {"shutdown", "quit", "debug|panic", "debug|panic-after-write", "debug|sleep", "flushall", "flushdb"}

MAX_REPLY = 4 * 1024 * 1024


def reply_size(v) -> int:
    """Bytes of payload in a parsed reply (a lower bound of its RESP size)."""
    if isinstance(v, (bytes, bytearray)):
        return len(v)
    if isinstance(v, (list, tuple)):
        return sum(reply_size(x) + 1 for x in v)
    if hasattr(v, "items") and isinstance(getattr(v, "items"), list):
        return reply_size(v.items)
    return 8


def seed(c):
    c.call("FLUSHALL")
    for cmd in [("SET", "k", "12345"), ("SET", "n", "10"), ("SADD", "s", "a", "b", "c"),
                ("HSET", "h", "f", "1", "g", "v"), ("TR.SETRANGE", "bm", "0", "70000"),
                ("TR.SETBITS", "bm", "4294967295", "2147483648", "1000000")]:
        r = c.call(*cmd)
        assert not isinstance(r, Err), (cmd, r)


def cases(name, template):
    parts = template.split()
    slots = [i for i, p in enumerate(parts) if p == "N"]
    head = name.split("|")
    seen = set()
    for value in EXTREMES:
        # each slot alone at the extreme (others 1), the last at it after
        # zeros (the widest ranges), then all slots at it
        variants = [[value if j == i else ("1" if p == "N" else p) for j, p in enumerate(parts)] for i in slots]
        variants.append([("0" if j != slots[-1] else value) if p == "N" else p for j, p in enumerate(parts)])
        variants.append([value if p == "N" else p for p in parts])
        for v in variants:
            t = tuple(head + v)
            if t not in seen:
                seen.add(t)
                yield t


@pytest.fixture(scope="module")
def hostile_server(request):
    from servers import ServerProcess
    s = ServerProcess("roaringd", ["--max-reply-bytes", str(MAX_REPLY), "--enable-debug-command", "local"]).start()
    yield s
    s.cleanup()


def test_every_command_is_covered(hostile_server):
    c = hostile_server.client()
    names = {n.decode() for n in c.call("COMMAND", "LIST")}
    missing = names - set(NUMERIC) - NO_NUMBERS
    assert not missing, f"commands without an entry in NUMERIC or NO_NUMBERS: {sorted(missing)}"
    stale = (set(NUMERIC) | NO_NUMBERS) - names
    assert not stale, f"entries for commands roaringd lacks: {sorted(stale)}"


@pytest.mark.parametrize("name", sorted(n for n, t in NUMERIC.items() if t and n not in SKIP))
def test_extreme_numeric_arguments(hostile_server, name):
    c = hostile_server.client(timeout=120)
    bystander = hostile_server.client()
    try:
        for template in NUMERIC[name]:
            for cmd in cases(name, template):
                seed(c)
                r = c.call(*cmd)
                assert isinstance(r, Err) or reply_size(r) <= MAX_REPLY, (cmd, reply_size(r))
                if isinstance(r, Err):
                    assert "internal error" not in r.text, (cmd, r.text)
                # the connection and the server are still there
                assert c.call("ECHO", "alive") == b"alive", cmd
                assert bystander.call("PING") is not None, cmd
    finally:
        c.close()
        bystander.close()


def test_huge_random_counts_are_refused_before_work(hostile_server):
    c = hostile_server.client()
    seed(c)
    for cmd in [("SRANDMEMBER", "s", "-2147483648"), ("SRANDMEMBER", "s", "-1099511627776"),
                ("SRANDMEMBER", "s", "-4611686018427387904"), ("SRANDMEMBER", "s", "-9223372036854775807"),
                ("HRANDFIELD", "h", "-1099511627776", "WITHVALUES"), ("HRANDFIELD", "h", "-1099511627776")]:
        r = c.call(*cmd)
        assert isinstance(r, Err) and r.text == "ERR reply would exceed max-reply-bytes", (cmd, r)
    # within the bound: exactly -count draws, each a member
    r = c.call("SRANDMEMBER", "s", "-1000")
    assert len(r) == 1000 and set(r) <= {b"a", b"b", b"c"}
    r = c.call("HRANDFIELD", "h", "-7", "WITHVALUES")
    assert len(r) == 14 and all(dict(zip(r[::2], r[1::2]))[f] in (b"1", b"v") for f in r[::2])
    c3 = hostile_server.client(protocol=3)
    r = c3.call("HRANDFIELD", "h", "-5", "WITHVALUES")
    assert len(r) == 5 and all(len(p) == 2 for p in r)
    assert c3.call("SRANDMEMBER", "missing", "-5") == []
    c3.close()
    c.close()


def test_panic_keeps_the_pipeline_around_it(hostile_server):
    c = hostile_server.client()
    seed(c)
    replies = c.pipeline([("SET", "a", "1"), ("DEBUG", "PANIC"), ("GET", "a"),
                          ("SET", "b", "2"), ("DEBUG", "PANIC-AFTER-WRITE", "x"), ("INCR", "b"), ("MGET", "a", "b", "x")])
    assert replies[0] == Status(b"OK")
    assert isinstance(replies[1], Err) and replies[1].text == "ERR internal error while running 'debug|panic'"
    assert replies[2] == b"1"
    assert isinstance(replies[4], Err) and "debug|panic-after-write" in replies[4].text
    assert replies[5] == 3
    assert replies[6] == [b"1", b"3", None]
    assert c.call("PING") is not None
    c.close()


def test_panic_inside_exec_applies_the_other_commands(hostile_server):
    c = hostile_server.client()
    seed(c)
    replies = c.pipeline([("MULTI",), ("SET", "x", "1"), ("DEBUG", "PANIC-AFTER-WRITE", "y"), ("INCR", "x"),
                          ("DEBUG", "PANIC"), ("EXEC",)])
    res = replies[-1]
    assert isinstance(res, list) and len(res) == 4, res
    assert isinstance(res[1], Err) and isinstance(res[3], Err)
    assert res[2] == 2
    assert c.call("MGET", "x", "y") == [b"2", None]
    c.close()


@pytest.mark.parametrize("form", ["pipeline", "exec"])
def test_a_panic_after_tier_edits_applies_each_edit_once(hostile_server, form):
    """The write-back tier applies an edit to its dirty map as the command
    runs, where no dropped transaction can take it back: a panic after
    write in the same pipeline group or EXEC must not run the edits
    before it again (a TR.FLIPRANGE twice undoes itself), and the edit
    still counts as a write for a client that WATCHes the key."""
    c = hostile_server.client()
    c.call("DEL", "fl")
    assert c.call("TR.SETRANGE", "fl", "0", "2999") == 3000
    assert c.call("TR.GETBIT", "fl", "1") == 1  # the key is written back, then edited in place
    cmds = [("TR.FLIPRANGE", "fl", "10", "19"), ("DEBUG", "PANIC-AFTER-WRITE", "px"), ("TR.SETBIT", "fl", "100", "0"),
            ("TR.FLIPRANGE", "fl", "30", "39"), ("TR.GETBIT", "fl", "10")]
    if form == "exec":
        replies = c.pipeline([("MULTI",)] + cmds + [("EXEC",)])[-1]
    else:
        replies = c.pipeline(cmds)
    assert replies[0] == 2990 and isinstance(replies[1], Err) and replies[2] == 1, replies
    assert replies[3] == 2979 and replies[4] == 0, replies
    assert c.call("TR.BITCOUNT", "fl") == 2979
    assert c.call("TR.GETBITS", "fl", "10", "19", "30", "39", "100", "5") == [0, 0, 0, 0, 0, 1]
    assert c.call("EXISTS", "px") == 0
    # the edit kept from the dropped attempt counts as a write of the key
    watcher = hostile_server.client()
    assert watcher.call("WATCH", "fl") == Status(b"OK")
    cmds = [("TR.SETBIT", "fl", "5", "0"), ("DEBUG", "PANIC-AFTER-WRITE", "px")]
    replies = c.pipeline([("MULTI",)] + cmds + [("EXEC",)])[-1] if form == "exec" else c.pipeline(cmds)
    assert replies[0] == 1 and isinstance(replies[1], Err), replies
    assert watcher.pipeline([("MULTI",), ("GET", "x"), ("EXEC",)])[-1] is NIL_ARRAY
    watcher.close()
    c.close()


def test_debug_is_refused_unless_enabled(roaringd_server):
    s = roaringd_server().start()
    c = s.client()
    r = c.call("DEBUG", "PANIC")
    assert isinstance(r, Err) and r.text.startswith("ERR DEBUG command not allowed."), r
    assert c.call("PING") is not None
    c.close()


def test_raw_client_survives_panics_in_a_long_pipeline(hostile_server):
    c: RespClient = hostile_server.client()
    seed(c)
    cmds = []
    for i in range(200):
        cmds.append(("SADD", "grow", str(i)))
        if i % 50 == 0:
            cmds.append(("DEBUG", "PANIC-AFTER-WRITE", "grow"))
    replies = c.pipeline(cmds)
    assert sum(isinstance(r, Err) for r in replies) == 4
    assert c.call("SCARD", "grow") == 200
    c.close()


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def test_memory_of_stalled_clients_returns_after_they_leave(roaringd_server):
    """20 clients each stall in the middle of a 10 MiB request, then leave:
    the server's RSS goes back near where it was (the allocator hands the
    freed buffers back to the OS once the workers are idle)."""
    import socket
    import time
    s = roaringd_server().start()
    pid = s.proc.pid
    c = s.client()
    assert c.call("PING") is not None
    base = _rss_mb(pid)
    size = 10 * 1024 * 1024
    chunk = b"x" * (1 << 20)
    socks = []
    for _ in range(20):
        k = socket.create_connection(("127.0.0.1", s.port))
        k.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % size)
        for _ in range(9):
            k.sendall(chunk)
        socks.append(k)
    # the server has buffered what was sent (it answers others meanwhile)
    deadline = time.monotonic() + 60
    while _rss_mb(pid) < base + 150 and time.monotonic() < deadline:
        time.sleep(0.1)
    peak = _rss_mb(pid)
    assert peak >= base + 150, (base, peak)
    assert c.call("PING") is not None
    for k in socks:
        k.close()
    deadline = time.monotonic() + 60
    while _rss_mb(pid) > base + 40 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _rss_mb(pid) <= base + 40, (base, peak, _rss_mb(pid))
    c.close()


def test_long_commands_run_off_the_worker_with_correct_replies(hostile_server):
    """Long requests (by their arguments or by the data) run as blocking work,
    alone, in a pipeline group and inside EXEC, nested with a TR.BITOP that
    goes off the worker itself: the replies and effects are those of the
    same commands run short."""
    c = hostile_server.client(timeout=120)
    seed(c)
    offsets = [str(i * 3) for i in range(20000)]
    assert c.call("TR.SETBITS", "big", *offsets) == 20000
    assert c.call("TR.FLIPRANGE", "wide", "0", "4294967295") == 4294967296
    replies = c.pipeline([("TR.SETBITS", "g1", *offsets), ("TR.BITCOUNT", "g1"), ("TR.SETRANGE", "g2", "0", "99999999"),
                          ("TR.BITCOUNT", "g2"), ("PING",)])
    assert replies[:4] == [20000, 20000, 100000000, 100000000]
    many = [("TR.SETRANGE", f"src{i}", str(i * 70000), str(i * 70000 + 65535)) for i in range(600)]
    assert all(isinstance(r, int) for r in c.pipeline(many))
    replies = c.pipeline([("MULTI",), ("TR.SETBITS", "x1", *offsets),
                          ("TR.BITOP", "dest", "OR", *[f"src{i}" for i in range(600)]), ("TR.BITCOUNT", "dest"),
                          ("EXEC",)])
    assert replies[-1] == [20000, 600 * 65536, 600 * 65536], replies[-1]
    r = c.call("TR.RANGE", "big", "0", "4294967295")
    assert r == [i * 3 for i in range(20000)]
    r = c.call("TR.SCAN", "big", "0", "COUNT", "30000")
    assert r[0] == 0 and r[1] == [i * 3 for i in range(20000)]
    r = c.call("TR.RANGEBITARRAY", "big", "0", "3999999")
    assert len(r) == 4000000 and r.count(b"1") == 20000 and r[:7] == b"1001001"
    assert c.call("SCARD", "s") == 3
    # whole-collection reads judged by the data they read
    assert c.call("SADD", "bigset", *[str(i) for i in range(30000)]) == 30000
    assert c.call("HSET", "bighash", *[x for i in range(30000) for x in (f"f{i}", str(i))]) == 30000
    assert len(c.call("SMEMBERS", "bigset")) == 30000
    assert len(c.call("HGETALL", "bighash")) == 60000
    assert len(c.call("HKEYS", "bighash")) == 30000
    # ... in a pipeline group and in EXEC too (their estimates add up)
    r = c.pipeline([("SMEMBERS", "bigset"), ("HVALS", "bighash"), ("SCARD", "bigset")])
    assert [len(r[0]), len(r[1]), r[2]] == [30000, 30000, 30000]
    r = c.pipeline([("MULTI",), ("SMEMBERS", "bigset"), ("HKEYS", "bighash"), ("EXEC",)])
    assert [len(x) for x in r[-1]] == [30000, 30000]
    assert len(c.call("SUNION", "bigset", "s")) == 30003
    assert c.call("SINTERSTORE", "inter", "bigset", "bigset") == 30000
    cur, page = c.call("SSCAN", "bigset", "0", "COUNT", "100000")
    assert cur == b"0" and len(page) == 30000
    assert c.call("MSET", *[x for i in range(3000) for x in (f"key{i}", "v")]) == Status(b"OK")
    assert len(c.call("KEYS", "key*")) == 3000
    cur, page = c.call("SCAN", "0", "MATCH", "key*", "COUNT", "100000")
    assert cur == b"0" and len(page) == 3000
    c.close()


def test_a_client_that_stops_reading_is_closed_past_the_soft_output_limit(roaringd_server):
    """client-output-buffer-limit normal <hard 0> <soft 1mb> <1 s>: a client
    that asks for 32 MB and reads nothing is closed once more than the soft
    limit stayed pending for a second; other clients go on."""
    import time
    from resp_client import encode_command
    s = roaringd_server(["--client-output-buffer-limit", "normal", "0", "1mb", "1"]).start()
    c = s.client()
    assert c.call("SET", "big", b"x" * (32 << 20)) == Status(b"OK")
    slow = s.client()
    slow.send_raw(encode_command("GET", "big"))
    time.sleep(3)  # reads nothing meanwhile
    got = slow.read_until_close(timeout=30)
    assert len(got) < 32 << 20
    assert c.call("STRLEN", "big") == 32 << 20
    c.close()


def test_deeply_nested_glob_patterns_are_capped_like_redis(pair):
    """KEYS / SCAN MATCH / SSCAN MATCH with patterns of many `*`: Redis caps
    the nesting at 1000 (a longer pattern matches nothing); a pattern of
    200,000 `*a` overflowed roaringd's stack and aborted the process."""
    key = "a" * 3000
    pair("SET", key, "1")
    pair("SADD", "st", key)
    for n in (999, 1000, 1001, 200000):
        pat = "*a" * n
        pair("KEYS", pat)
        pair("SCAN", "0", "MATCH", pat, "COUNT", "100")
        pair("SSCAN", "st", "0", "MATCH", pat)
    pair("KEYS", "*a" * 30000 + "*b")
    pair("PING")
