"""Wire tests with redis-cli (subprocess): output compared with the same
redis-cli run against Redis."""

import subprocess

import pytest

from servers import REDIS_CLI


def cli(port, *args, stdin=None, password=None):
    argv = [REDIS_CLI, "-h", "127.0.0.1", "-p", str(port)]
    if password:
        argv += ["-a", password, "--no-auth-warning"]
    p = subprocess.run(argv + list(args), input=stdin, capture_output=True, timeout=60)
    return p.returncode, p.stdout


def both_cli(servers, *args, stdin=None, sort_lines=False):
    got = cli(servers.roaringd.port, *args, stdin=stdin)
    want = cli(servers.redis.port, *args, stdin=stdin)
    if sort_lines:
        got = (got[0], sorted(got[1].splitlines()))
        want = (want[0], sorted(want[1].splitlines()))
    assert got == want, f"redis-cli {' '.join(args)}: roaringd {got!r} != Redis {want!r}"
    return want


CASES = [
    ("set_get", [["SET", "a", "b"], ["GET", "a"], ["GET", "nokey"]], False),
    ("no_raw_formatting", [["--no-raw", "SET", "n", "10"], ["--no-raw", "INCR", "n"], ["--no-raw", "GET", "nokey"],
                           ["--no-raw", "MGET", "n", "nokey"], ["--no-raw", "INCR", "nokey2"],
                           ["--no-raw", "HSET", "h", "f", "v"], ["--no-raw", "TYPE", "h"]], False),
    ("errors", [["SET", "s", "x"], ["INCR", "s"], ["--no-raw", "SADD", "s", "m"], ["NOSUCHCMD"]], False),
    ("raw_mode", [["--raw", "SET", "r", "line1\nline2"], ["--raw", "GET", "r"], ["--raw", "SADD", "st", "a"]], False),
    ("select_n", [["-n", "3", "SET", "a", "db3"], ["-n", "3", "GET", "a"], ["GET", "a"], ["-n", "3", "DBSIZE"]], False),
    ("resp3_map", [["HSET", "h", "f1", "v1"], ["-3", "--no-raw", "HGETALL", "h"], ["-3", "--no-raw", "HGET", "h", "f1"],
                   ["-3", "--no-raw", "SISMEMBER", "nos", "x"], ["-3", "--no-raw", "GET", "nokey"],
                   ["-3", "--no-raw", "INCRBYFLOAT", "fl", "1.5"], ["-3", "HGETALL", "h"]], False),
    ("repeat", [["-r", "5", "INCR", "c"], ["GET", "c"]], False),
    ("expire_ttl", [["SET", "e", "v", "EX", "1000"], ["PERSIST", "e"], ["TTL", "e"]], False),
]


@pytest.mark.parametrize("name,runs,_", CASES, ids=[c[0] for c in CASES])
def test_cli(servers, name, runs, _):
    servers.reset()
    for args in runs:
        both_cli(servers, *args)


def test_cli_unordered(servers):
    servers.reset()
    both_cli(servers, "SADD", "s", "a", "b", "c", "d")
    both_cli(servers, "SMEMBERS", "s", sort_lines=True)
    both_cli(servers, "MSET", "k1", "1", "k2", "2", "x3", "3")
    both_cli(servers, "KEYS", "k*", sort_lines=True)
    both_cli(servers, "--scan", sort_lines=True)
    both_cli(servers, "--scan", "--pattern", "k*", sort_lines=True)


def test_cli_stdin_commands(servers):
    servers.reset()
    both_cli(servers, stdin=b"SET a 1\nINCR a\nGET a\nMULTI\nINCR a\nINCR a\nEXEC\nDEL a\n")


def test_cli_stdin_as_last_arg(servers):
    servers.reset()
    both_cli(servers, "-x", "SET", "fromstdin", stdin=b"hello\x00world")
    both_cli(servers, "STRLEN", "fromstdin")


def test_cli_pipe_mass_insert(servers):
    servers.reset()
    proto = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(b"key:%d" % i), b"key:%d" % i,
                                                                         len(b"v%d" % i), b"v%d" % i)
                     for i in range(5000))
    proto += b"".join(b"*3\r\n$4\r\nSADD\r\n$3\r\nset\r\n$%d\r\n%d\r\n" % (len(str(i)), i) for i in range(2000))
    for srv in (servers.roaringd, servers.redis):
        rc, out = cli(srv.port, "--pipe", stdin=proto)
        assert rc == 0 and b"errors: 0, replies: 7000" in out, (srv.kind, out)
    both_cli(servers, "DBSIZE")
    both_cli(servers, "GET", "key:4999")
    both_cli(servers, "SCARD", "set")


def test_cli_pipe_reports_errors(servers):
    servers.reset()
    proto = b"*3\r\n$3\r\nSET\r\n$1\r\ns\r\n$1\r\nx\r\n*2\r\n$4\r\nINCR\r\n$1\r\ns\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
    for srv in (servers.roaringd, servers.redis):
        rc, out = cli(srv.port, "--pipe", stdin=proto)
        assert b"errors: 1, replies: 3" in out, (srv.kind, out)


def test_cli_info_and_ping(servers):
    for srv in (servers.roaringd, servers.redis):
        rc, out = cli(srv.port, "PING")
        assert (rc, out) == (0, b"PONG\n"), srv.kind
        rc, out = cli(srv.port, "INFO", "server")
        assert rc == 0 and b"redis_version:" in out, srv.kind


def test_cli_auth(fresh):
    r, s = fresh(["--requirepass", "pw"])
    outs = []
    for srv in (r, s):
        outs.append((cli(srv.port, "PING"), cli(srv.port, "PING", password="pw"),
                     cli(srv.port, "PING", password="bad"), cli(srv.port, "-3", "PING", password="pw")))
    assert outs[0] == outs[1], outs


def test_cli_binary_values(servers):
    servers.reset()
    both_cli(servers, "SET", "bin", "\x01\x02\x7f")
    both_cli(servers, "--no-raw", "GET", "bin")
    both_cli(servers, "--raw", "GET", "bin")


def test_redis_benchmark_runs(servers):
    """redis-benchmark (a standard load generator) completes every test without errors."""
    import shutil
    bench = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"
    servers.reset()
    for srv in (servers.roaringd, servers.redis):
        p = subprocess.run([bench, "-h", "127.0.0.1", "-p", str(srv.port), "-n", "2000", "-c", "4", "-P", "4",
                            "-t", "ping,set,get,incr,sadd,hset,spop,mset", "-q", "--csv"],
                           capture_output=True, timeout=120)
        out = p.stdout.decode(errors="replace")
        assert p.returncode == 0, (srv.kind, out, p.stderr)
        rows = [l for l in out.splitlines() if l.startswith('"') and not l.startswith('"test"')]
        names = {r.split(",")[0].strip('"') for r in rows}
        assert {"SET", "GET", "INCR", "SADD", "HSET", "SPOP"} <= names, (srv.kind, out)
        assert "error" not in (out + p.stderr.decode(errors="replace")).lower(), (srv.kind, out, p.stderr)


@pytest.mark.roaringd_only
def test_cli_tr_bitmaps(roaringd_server):
    """TR.* through redis-cli: a 2 KB container edited bit by bit (65
    edits), read back as redis-cli prints it."""
    srv = roaringd_server().start()
    port = srv.port
    vals = list(range(0, 2000, 2))
    assert cli(port, "TR.SETBITS", "k", *map(str, vals)) == (0, b"1000\n")
    for v in range(1, 131, 2):
        assert cli(port, "TR.SETBIT", "k", str(v), "1") == (0, b"0\n")
    want = sorted(set(vals) | set(range(1, 131, 2)))
    rc, out = cli(port, "TR.RANGE", "k", "0", "4294967295")
    assert rc == 0 and [int(x) for x in out.split()] == want
    assert cli(port, "--no-raw", "TR.GETBIT", "k", "129") == (0, b"(integer) 1\n")
    assert cli(port, "--no-raw", "TR.BITCOUNT", "k") == (0, f"(integer) {len(want)}\n".encode())
    assert cli(port, "TR.SETBIT", "k", "129", "0") == (0, b"1\n")
    assert cli(port, "-3", "--no-raw", "TR.GETBIT", "k", "129") == (0, b"(integer) 0\n")
