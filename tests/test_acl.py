"""ACL users (Redis 6+/7.0), compared with Redis 7.0: ACL SETUSER / GETUSER /
DELUSER / LIST / USERS / WHOAMI / CAT / LOG / DRYRUN / GENPASS / HELP / LOAD /
SAVE, AUTH and HELLO AUTH with users, NOPERM refusals (commands, subcommands,
first arguments, keys with %R~ / %W~, selectors, MULTI and EXEC, pipelines),
requirepass and the default user, connections of deleted users; redis-py,
redis-cli and roaringd-bench as ACL users.

The servers of this module are its own (users would leak into other modules);
every test starts from the default user only."""

import hashlib
import os
import shutil
import subprocess

import pytest

from conftest import ServerPairState
from diff import Pair, run_script
from normalise import acl_line
from resp_client import Err, Map, RespClient, Status
from servers import AGAINST_REDIS, REDIS_CLI, ServerProcess

DEFAULT_RULES = ("resetpass", "nopass", "on", "resetkeys", "~*", "resetchannels", "&*", "+@all",
                 "clearselectors")


@pytest.fixture(scope="module")
def acl_servers():
    st = ServerPairState()
    st.ensure()
    yield st
    st.close()


def _default_users_only(c):
    users = c.call("ACL", "USERS")
    if isinstance(users, Err):
        return False
    others = [u for u in users if u != b"default"]
    return ((not others or not isinstance(c.call("ACL", "DELUSER", *others), Err))
            and c.call("ACL", "SETUSER", "default", *DEFAULT_RULES) == Status(b"OK")
            and c.call("ACL", "LOG", "RESET") == Status(b"OK"))


def reset_acl(st):
    """Back to a fresh server's users, log and data (a server that refuses is restarted)."""
    st.reset(prepare=_default_users_only)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def apair(acl_servers, request):
    reset_acl(acl_servers)
    p = Pair(acl_servers.roaringd, acl_servers.redis, protocol=request.param)
    yield p
    p.close()


@pytest.fixture
def pair2(acl_servers):
    reset_acl(acl_servers)
    p = Pair(acl_servers.roaringd, acl_servers.redis, protocol=2)
    yield p
    p.close()


H1 = hashlib.sha256(b"p1").hexdigest()

SCENARIOS = {
    "setuser_getuser_list": [
        "ACL SETUSER alice on >p1 ~foo* +get", "ACL GETUSER alice", "ACL LIST", "ACL USERS", "ACL WHOAMI",
        "ACL GETUSER default", "ACL GETUSER nosuch", "ACL SETUSER alice -get +set %R~r* %W~w* &ch*",
        "ACL GETUSER alice", "ACL SETUSER empty", "ACL GETUSER empty", "ACL LIST",
        ("ACL", "SETUSER", "sel", "on", "(~s* +set)", "(%R~x", "+get)"), "ACL GETUSER sel", "ACL LIST",
        "ACL SETUSER sel clearselectors", "ACL GETUSER sel", "ACL SETUSER alice reset", "ACL GETUSER alice",
        "ACL SETUSER ALICE on", "ACL USERS",
    ],
    "passwords": [
        "ACL SETUSER pw >a >b >a", "ACL GETUSER pw", "ACL SETUSER pw <a", "ACL GETUSER pw",
        f"ACL SETUSER pw #{H1}", "ACL GETUSER pw", f"ACL SETUSER pw !{H1}", "ACL GETUSER pw",
        f"ACL SETUSER pw !{H1}", "ACL SETUSER pw <nosuch", "ACL SETUSER pw nopass", "ACL GETUSER pw",
        "ACL SETUSER pw >c", "ACL GETUSER pw", "ACL SETUSER pw resetpass", "ACL GETUSER pw", ("ACL", "SETUSER", "pw", ">"),
        "ACL LIST",
    ],
    "flags_and_patterns": [
        "ACL SETUSER f ON skip-sanitize-payload", "ACL GETUSER f", "ACL SETUSER f sanitize-payload off",
        "ACL GETUSER f", "ACL SETUSER k %R~a %W~a %Rw~b %R ~c ~c ~ & &d &d", "ACL GETUSER k", "ACL LIST",
        "ACL SETUSER k allkeys allchannels", "ACL GETUSER k", "ACL SETUSER k resetkeys %R~* resetchannels",
        "ACL GETUSER k", "ACL SETUSER k ~* ~*", "ACL GETUSER k",
    ],
    "setuser_errors": [
        "ACL SETUSER bob bogus", "ACL SETUSER bob +nosuch", "ACL SETUSER bob +@nosuch", "ACL SETUSER bob #abc",
        "ACL SETUSER bob <nopw", "ACL SETUSER bob %X~a", "ACL SETUSER bob allkeys ~x", "ACL SETUSER bob &* &x",
        "ACL SETUSER bob %~x", "ACL SETUSER bob %RR~x", "ACL SETUSER bob +", "ACL SETUSER bob -@", "ACL SETUSER bob +get|",
        "ACL SETUSER bob +config|nosuch", "ACL SETUSER bob -get|x", "ACL SETUSER bob +config|get|x",
        "ACL SETUSER bob +|", "ACL SETUSER bob +@all|x", "ACL SETUSER bob !abc", ("ACL", "SETUSER", "a b"),
        ("ACL", "SETUSER", "bob", "(~x", "+get"), ("ACL", "SETUSER", "bob", "on", "(~x +nosuch)"),
        ("ACL", "SETUSER", "bob", "on", ">pw", "+nosuch"), "ACL USERS",
        ("ACL", "SETUSER", "bob", "~a b"), ("ACL", "SETUSER", "bob", "on", "+get", "x"), "ACL USERS",
    ],
    "command_rules": [
        "ACL SETUSER c -@all +config|get", "ACL GETUSER c", "ACL SETUSER c reset +@all -config|set", "ACL GETUSER c",
        "ACL SETUSER c reset +client", "ACL GETUSER c", "ACL SETUSER c reset +select|0 +select|1", "ACL GETUSER c",
        "ACL SETUSER c reset +@read -get", "ACL GETUSER c", "ACL SETUSER c reset +get +set +del +incr +hset +sadd",
        "ACL GETUSER c", "ACL SETUSER c reset +@all -@dangerous", "ACL GETUSER c",
        "ACL SETUSER c reset +@string -get", "ACL GETUSER c", "ACL SETUSER c reset +@all -client +client|id",
        "ACL GETUSER c", "ACL SETUSER c reset +@all -@all +get", "ACL GETUSER c",
        "ACL SETUSER c reset allcommands -get +get", "ACL GETUSER c", "ACL SETUSER c reset +select|0 -select",
        "ACL GETUSER c", "ACL SETUSER c reset +select|0 +select", "ACL GETUSER c",
        "ACL SETUSER c reset +multi +exec +discard +watch +unwatch", "ACL GETUSER c",
        "ACL SETUSER c reset +GET +@READ nocommands +CONFIG|GET", "ACL GETUSER c", "ACL LIST",
    ],
    "deluser": [
        "ACL SETUSER a on", "ACL SETUSER b", "ACL DELUSER default", "ACL DELUSER a default", "ACL USERS",
        "ACL DELUSER a nosuch b", "ACL DELUSER a", "ACL USERS",
    ],
    "subcommand_errors": [
        "ACL", "ACL foo", "ACL SETUSER", "ACL GETUSER", "ACL GETUSER a b", "ACL DELUSER", "ACL WHOAMI x",
        "ACL LIST x", "ACL USERS x", "ACL CAT a b", "ACL CAT nosuch", "ACL LOG 1 2", "ACL LOG abc", "ACL LOG RESET x",
        "ACL GENPASS abc", "ACL GENPASS 0", "ACL GENPASS 5000", "ACL GENPASS", "ACL GENPASS 5", "ACL GENPASS 4096",
        "ACL GENPASS 1 2", "ACL HELP", "ACL HELP x", "ACL LOAD", "ACL SAVE", "ACL LOAD x", "ACL CAT", "ACL cat",
        "ACL DRYRUN", "ACL DRYRUN x",
    ],
    "dryrun": [
        "ACL SETUSER d1 on +get ~a*", "ACL DRYRUN nosuch get x", "ACL DRYRUN d1 nosuchcmd",
        "ACL DRYRUN d1 get", "ACL DRYRUN d1 get x", "ACL DRYRUN d1 get a1", "ACL DRYRUN d1 set a1 v",
        "ACL DRYRUN d1 client nosuch", "ACL DRYRUN d1 client id", "ACL DRYRUN default set x y",
        "ACL DRYRUN d1 client", "ACL LOG",
    ],
    "auth_users": [
        "ACL SETUSER u on >pw ~* +@all", "AUTH u bad", "AUTH nosuch x", "AUTH x", "AUTH u pw", "ACL WHOAMI",
        "AUTH default x", "ACL WHOAMI", "ACL SETUSER off1 >pw ~* +@all", "AUTH off1 pw",
        "ACL SETUSER np on nopass ~* +@all", "AUTH np anything", "ACL WHOAMI", "HELLO 2 AUTH u bad",
        "HELLO 2 AUTH u pw", "ACL WHOAMI", "auth u bad", "ACL LOG", "ACL LOG 1", "ACL LOG -1", "ACL LOG RESET",
        "ACL LOG",
    ],
    "auth_in_multi": [
        "ACL SETUSER u on >pw ~* +@all", "MULTI", "AUTH u bad", "AUTH u pw", "ACL WHOAMI", "EXEC", "ACL WHOAMI",
        "ACL LOG",
    ],
    "noperm_commands_and_keys": [
        "ACL SETUSER alice on >p1 ~foo* +get +set %R~r* %W~w* +acl|whoami +client|id",
        "SET r1 x", "SET w1 x", "AUTH alice p1",
        "GET foo1", "GET bar", "SET bar 1", "INCR foo", "GET r1", "SET r1 x", "SET w1 y", "GET w1", "SET w1 z GET",
        "ACL WHOAMI", "ACL LIST", "CLIENT ID", "CLIENT INFO", "MULTI", "PING", "PING hello", "SELECT 0",
        "NOSUCH x", "GET", "AUTH default x", "ACL LOG",
    ],
    "noperm_in_multi": [
        "ACL SETUSER m on >p ~a* +@transaction +get +set -watch", "AUTH m p", "MULTI", "GET a1", "GET b1", "INCR a1",
        "SET a1 v", "EXEC", "MULTI", "SET a1 v", "GET a1", "EXEC", "WATCH a1", "MULTI", "SAVE", "DISCARD",
        "AUTH default x", "ACL LOG",
    ],
    "selectors_check": [
        ("ACL", "SETUSER", "s", "on", ">p", "+get", "~a*", "(+set ~b*)", "(%R~c* +@read)"), "AUTH s p",
        "GET a1", "SET b1 v", "GET c1", "SET a1 v", "INCR a1", "MGET a1 c1", "MGET a1 b1", "MGET b1 a1",
        "SET c1 v", "AUTH default x", "ACL LOG",
    ],
    "first_args": [
        "ACL SETUSER fa on >p ~* +select|0 +SELECT|1 +get +client|id", "AUTH fa p", "SELECT 0", "SELECT 1",
        "SELECT 2", "SELECT", "GET k", "AUTH default x", "ACL GETUSER fa",
    ],
    "default_user_password": [
        "ACL SETUSER default resetpass >pw", "PING", "ACL LIST", "AUTH pw", "AUTH default pw",
        "ACL SETUSER default off", "AUTH pw", "ACL SETUSER default on nopass", "AUTH x", "ACL LIST",
    ],
    "categories": ["ACL CAT", "ACL CAT nosuch", ("ACL", "CAT", "x" * 300)],
    "pipeline_mixed": [
        "ACL SETUSER pp on >p ~a* +set +get +incr", "AUTH pp p", "SET a1 1", "SET b1 1", "INCR a1", "GET a1",
    ],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(apair, name):
    run_script(apair, SCENARIOS[name])


def test_pipelined_commands_are_checked_one_by_one(apair):
    """A pipelined group of data commands (one store transaction in roaringd)
    still refuses each command as Redis does."""
    apair("ACL", "SETUSER", "pp", "on", ">p", "~a*", "+set", "+get", "+incr", "+sadd")
    apair("AUTH", "pp", "p")
    apair.pipeline([("SET", "a1", "1"), ("SET", "b1", "1"), ("INCR", "a1"), ("SADD", "a2", "m"),
                    ("GET", "a1"), ("DEL", "a1"), ("GET", "b1"), ("INCR", "a1")])


def test_exec_rechecks_changed_rules(pair2):
    """Rules changed between queueing and EXEC refuse the queued command at EXEC."""
    admin = pair2.other()
    pair2("ACL", "SETUSER", "bob", "on", "nopass", "~*", "+@all")
    pair2("AUTH", "bob", "x")
    pair2("MULTI")
    pair2("SET", "k", "v")
    pair2("GET", "k")
    admin("ACL", "SETUSER", "bob", "-set")
    pair2("EXEC")
    admin("ACL", "SETUSER", "bob", "-@all", "+multi", "+exec", "+get", "resetkeys", "~a*")
    pair2("MULTI")
    pair2("GET", "a1")
    admin("ACL", "SETUSER", "bob", "resetkeys", "~b*")
    pair2("EXEC")
    admin("ACL", "LOG")


def test_off_keeps_connections_deluser_closes_them(pair2):
    admin = pair2.other()
    pair2("ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all")
    pair2("AUTH", "bob", "pw")
    admin("ACL", "SETUSER", "bob", "off")
    pair2("SET", "k", "v")  # still authenticated: off only refuses new AUTHs
    pair2("AUTH", "bob", "pw")
    admin("ACL", "DELUSER", "bob")
    for side, c in pair2.each():
        assert c.is_closed(), f"{side}: the deleted user's connection is still open"
    admin("ACL", "USERS")


def test_deluser_of_own_user_replies_then_closes(pair2):
    pair2("ACL", "SETUSER", "self", "on", ">pw", "~*", "+@all")
    pair2("AUTH", "self", "pw")
    pair2("ACL", "DELUSER", "self")
    for side, c in pair2.each():
        assert c.is_closed(), side


def test_commands_pipelined_after_deleting_own_user_do_not_run(acl_servers):
    reset_acl(acl_servers)
    for srv in (acl_servers.roaringd, acl_servers.redis):
        c = srv.client()
        assert c.call("ACL", "SETUSER", "self", "on", ">pw", "~*", "+@all") == Status(b"OK")
        assert c.call("AUTH", "self", "pw") == Status(b"OK")
        c.send_raw(b"*3\r\n$3\r\nACL\r\n$7\r\nDELUSER\r\n$4\r\nself\r\n"
                   b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
        assert c.read_until_close() == b":1\r\n", srv.kind
        c.close()
        c = srv.client()
        assert c.call("EXISTS", "k") == 0, srv.kind
        c.close()


def test_requirepass_follows_config_set(pair2):
    pair2("CONFIG", "SET", "requirepass", "abc")
    pair2("ACL", "LIST")
    pair2("CONFIG", "GET", "requirepass")
    late = pair2.other()
    late("PING")
    late("HELLO", "3")
    late("AUTH", "abc")
    late("ACL", "SETUSER", "default", "nopass")
    pair2("CONFIG", "GET", "requirepass")
    pair2("CONFIG", "SET", "requirepass", "")
    pair2("ACL", "LIST")
    pair2("CONFIG", "GET", "aclfile")
    pair2("CONFIG", "SET", "aclfile", "x")
    pair2("CONFIG", "GET", "acllog-max-len")
    pair2("CONFIG", "SET", "acllog-max-len", "2")
    pair2("CONFIG", "GET", "acl-pubsub-default")


def test_acl_config_keys(pair2):
    for value in ("foo", "allchannels"):
        pair2("CONFIG", "SET", "acl-pubsub-default", value)
    pair2("ACL", "SETUSER", "pubs", "on", "(+get)")
    pair2("ACL", "LIST")
    pair2("ACL", "SETUSER", "pubs", "reset")
    pair2("ACL", "LIST")
    pair2("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    pair2("ACL", "SETUSER", "pubs2", "on")
    pair2("ACL", "LIST")
    for value in ("-1", "abc", "0"):
        pair2("CONFIG", "SET", "acllog-max-len", value)
    pair2("AUTH", "nosuch", "x")
    pair2("ACL", "LOG")
    pair2("CONFIG", "SET", "acllog-max-len", "128")


def test_unauthenticated_connections(pair2):
    """A connection made while `default` needs a password must AUTH; RESET
    goes back to `default` (authenticated only when it has no password)."""
    pair2("ACL", "SETUSER", "default", "resetpass", ">pw")
    pair2("ACL", "SETUSER", "u", "on", ">u", "~*", "+@all")
    late = pair2.other()
    late("GET", "k")
    late("ACL", "WHOAMI")
    late("HELLO", "3")
    late("AUTH", "u", "u")
    late("ACL", "WHOAMI")
    late("RESET")
    late("GET", "k")
    late("ACL", "WHOAMI")
    pair2("ACL", "SETUSER", "default", "on", "nopass")
    late("GET", "k")
    pair2("ACL", "SETUSER", "default", "off")
    late2 = pair2.other()
    late2("PING")
    late2("AUTH", "u", "u")
    late2("PING")
    pair2("ACL", "SETUSER", "default", "on")


def test_client_kill_user_and_client_list(pair2):
    pair2("ACL", "SETUSER", "k", "on", ">pw", "~*", "+@all")
    other = pair2.other()
    other("AUTH", "k", "pw")
    for side, c in other.each():
        info = c.call("CLIENT", "INFO")
        text = info.value if hasattr(info, "value") else info
        assert b" user=k " in text, (side, text)
    for side, c in pair2.each():
        text = c.call("CLIENT", "LIST")
        text = text.value if hasattr(text, "value") else text
        users = sorted(t for t in text.split() if t.startswith(b"user="))
        assert users == [b"user=default", b"user=k"], (side, text)
    pair2("CLIENT", "KILL", "USER", "nosuch")
    pair2("CLIENT", "KILL", "USER", "k")
    for side, c in other.each():
        assert c.is_closed(), side


def test_acl_command_info(pair2):
    """ACL's COMMAND INFO rows (flags, ACL categories, arity) match Redis 7.0."""
    def rows(c):
        r = c.call("COMMAND", "INFO", "acl")[0]
        out = {r[0]: (r[1], r[6])}
        for s in r[9]:
            out[s[0]] = (s[1], sorted(getattr(s[2], "items", s[2]), key=repr),
                         sorted(getattr(s[6], "items", s[6]), key=repr))
        return out
    got, want = rows(pair2.r), rows(pair2.s)
    assert got == want


def test_log_groups_and_max_len(pair2):
    pair2("ACL", "SETUSER", "g", "on", ">p", "+get", "~a*")
    pair2("AUTH", "g", "p")
    for _ in range(3):
        pair2("GET", "b")
    pair2("GET", "c")
    pair2("SET", "a", "v")
    pair2("AUTH", "default", "x")
    pair2("ACL", "LOG")
    pair2("ACL", "LOG", "2")
    pair2("CONFIG", "SET", "acllog-max-len", "2")
    pair2("AUTH", "g", "bad")
    pair2("ACL", "LOG")
    pair2("CONFIG", "SET", "acllog-max-len", "128")


# --- ACL files ---------------------------------------------------------------------------


def _pair_with(fresh, args, protocol=2):
    r, s = fresh(args)
    return Pair(r, s, protocol=protocol)


def test_aclfile_save_and_load(fresh, tmp_path):
    path = str(tmp_path / "users.acl")
    with open(path, "w") as f:
        f.write("user default on nopass ~* &* +@all\nuser bob on >pw ~k* +get\n")
    p = _pair_with(fresh, ["--aclfile", path])
    try:
        p("ACL", "LIST")
        p("CONFIG", "GET", "aclfile")
        p("ACL", "SETUSER", "carol", "on", ">x", "+@all", "~*", "(+set ~s*)")
        saved = []
        for side, c in p.each():
            assert c.call("ACL", "SAVE") == Status(b"OK"), side
            with open(path, "rb") as f:
                saved.append([acl_line(x) for x in f.read().splitlines()])
        assert saved[0] == saved[1], saved
        bobs = p.other()
        bobs("AUTH", "bob", "pw")
        bobs("GET", "k1")
        with open(path, "w") as f:
            f.write("user default on nopass ~* &* +@all\nuser bob on >pw ~k* +get +nosuch\n# comment\n"
                    "user bob off\nfoo bar\nuser \"a b\"\n\nuser x (+get\nuser y %Z~a\n")
        p("ACL", "LOAD")
        p("ACL", "LIST")
        with open(path, "w") as f:
            f.write("user   bob  on >pw   ~k* +get\n\t\nuser alice ON (+get ~a*) (+set ~b*)\n")
        p("ACL", "LOAD")
        with open(path, "w") as f:
            f.write("user bob on >pw ~k* +get\nuser bob off\n")
        p("ACL", "LOAD")
        with open(path, "w") as f:
            f.write("user bob on >pw ~k* +get\n\nuser alice on (+get ~a*) (+set ~b*)")
        p("ACL", "LOAD")
        p("ACL", "LIST")
        # ACL LOAD replaced bob: its connections are closed; default's stay.
        for side, c in bobs.each():
            assert c.is_closed(), side
        p("PING")
        with open(path, "w") as f:
            f.write("user default off\n")
        p("ACL", "LOAD")
        p("PING")
    finally:
        p.close()


def test_aclfile_missing_or_mixed_with_users_refuses_to_start(tmp_path):
    missing = str(tmp_path / "nonexist.acl")
    conf = tmp_path / "with-users.conf"
    acl = tmp_path / "x.acl"
    acl.write_text("user default on nopass ~* &* +@all\n")
    conf.write_text(f"user alice on >pw ~* +@all\naclfile {acl}\n")
    for kind in ("roaringd", "redis"):
        for args, config_file in ((["--aclfile", missing], None), ([], str(conf))):
            srv = ServerProcess(kind, args, config_file=config_file)
            try:
                with pytest.raises(RuntimeError, match="exited at start"):
                    srv.start(timeout=20)
            finally:
                srv.cleanup()


def test_config_file_users(fresh, tmp_path):
    conf = tmp_path / "users.conf"
    conf.write_text("user alice on >pw ~a* +get (+set ~b*)\nuser default on >dpw ~* &* +@all\n")
    r = ServerProcess("roaringd", ["--requirepass", "dpw"], config_file=str(conf)).start()
    s = ServerProcess("redis", ["--requirepass", "dpw"], config_file=str(conf)).start()
    try:
        p = Pair(r, s)
        p("ACL", "LIST")
        p("AUTH", "alice", "pw")
        p("GET", "a1")
        p("SET", "b1", "v")
        p("SET", "a1", "v")
        p.close()
    finally:
        r.cleanup()
        s.cleanup()


# --- clients ---------------------------------------------------------------------------


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_py_acl(acl_servers, proto):
    import redis
    reset_acl(acl_servers)
    out = []
    for srv in (acl_servers.roaringd, acl_servers.redis):
        admin = srv.redis_py(protocol=proto, decode_responses=True)
        try:
            res = [admin.acl_setuser("app", enabled=True, passwords=["+s3cret"], commands=["+get", "+set", "+@bitmap", "+acl|whoami"],
                                     keys=["app:*"], channels=["news"]),
                   admin.acl_whoami(), sorted(admin.acl_users()), admin.acl_cat()]
            u = admin.acl_getuser("app")
            res.append({k: u[k] for k in ("enabled", "passwords", "keys", "channels")})
            res.append((sorted(u["commands"]), u["categories"]))
            app = srv.redis_py(protocol=proto, username="app", password="s3cret", decode_responses=True)
            try:
                res += [app.acl_whoami(), app.set("app:1", "v"), app.get("app:1")]
                for call in (lambda: app.get("other"), lambda: app.incr("app:1"), lambda: app.acl_list()):
                    try:
                        call()
                        res.append("no error")
                    except redis.exceptions.NoPermissionError as e:
                        res.append(("NoPermissionError", str(e)))
            finally:
                app.close()
            try:
                srv.redis_py(protocol=2, username="app", password="wrong").ping()
                res.append("no error")
            except redis.exceptions.AuthenticationError as e:
                res.append(("AuthenticationError", str(e)))
            # redis-py sends CLIENT SETINFO on connect: a Redis 7.2 command that
            # roaringd has (and refuses to `app`) and Redis 7.0 does not know.
            log = [e for e in admin.acl_log() if e["object"] != "client|setinfo"]
            res.append([(e["reason"], e["context"], e["object"], e["username"]) for e in log])
            res += [admin.acl_deluser("app"), admin.acl_dryrun("default", "get", "x") if hasattr(admin, "acl_dryrun")
                    else None, len(admin.acl_genpass()), len(admin.acl_genpass(64))]
            out.append(res)
        finally:
            admin.close()
    assert out[0] == out[1], f"roaringd {out[0]!r}\n!= Redis {out[1]!r}"


def _cli(port, *args):
    p = subprocess.run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), "--no-auth-warning", *args],
                       capture_output=True, timeout=60)
    return p.returncode, p.stdout


def test_redis_cli_user_and_pass(acl_servers):
    reset_acl(acl_servers)
    outs = []
    for srv in (acl_servers.roaringd, acl_servers.redis):
        p = srv.port
        outs.append([
            _cli(p, "ACL", "SETUSER", "cli", "on", ">pw", "~c*", "+@string", "+acl|whoami"),
            _cli(p, "--user", "cli", "--pass", "pw", "ACL", "WHOAMI"),
            _cli(p, "--user", "cli", "--pass", "pw", "SET", "c1", "v"),
            _cli(p, "--user", "cli", "--pass", "pw", "SET", "x", "v"),
            _cli(p, "--user", "cli", "--pass", "pw", "SADD", "c2", "m"),
            _cli(p, "--user", "cli", "--pass", "bad", "PING"),
            _cli(p, "--user", "cli", "-a", "pw", "GET", "c1"),
            _cli(p, "-3", "--no-raw", "ACL", "GETUSER", "cli"),
            _cli(p, "ACL", "DELUSER", "cli"),
        ])
    assert outs[0] == outs[1], outs


def bench_bin():
    b = os.environ.get("ROARINGD_BENCH_BIN") or os.environ.get("ROARINGD_BENCH")
    if b:
        return b
    from servers import roaringd_bin
    return os.path.join(os.path.dirname(roaringd_bin()), "roaringd-bench")


@pytest.mark.roaringd_only
def test_bench_authenticates_as_an_acl_user(roaringd_server):
    bench = bench_bin()
    if not os.access(bench, os.X_OK):
        pytest.skip(f"no roaringd-bench at {bench}")
    srv = roaringd_server(["--requirepass", "dpw"]).start()
    c = srv.client()
    assert c.call("ACL", "SETUSER", "bench", "on", ">bpw", "~k*", "+@bitmap") == Status(b"OK")
    assert c.call("ACL", "SETUSER", "default", "resetpass", ">a:b") == Status(b"OK")
    c.close()

    def run(*auth, command="TR.SETBIT k __RAND__ 1"):
        return subprocess.run([bench, "-h", "127.0.0.1", "-port", str(srv.port), *auth, "-c", "200", "-p", "2",
                               "-r", "1000", "-command", command, "-q"], capture_output=True, timeout=120)

    for auth in (["-a", "bench:bpw"], ["-user", "bench", "-a", "bpw"], ["--user", "bench", "-a", "bpw"],
                 ["-a", "a:b"]):
        p = run(*auth)
        assert p.returncode == 0, (auth, p.stdout, p.stderr)
    p = run("-a", "bench:bpw", command="GET k1")
    assert p.returncode == 1 and b"NOPERM" in p.stdout + p.stderr, (p.stdout, p.stderr)
    p = run("-a", "bench:wrong")
    assert p.returncode == 1 and b"WRONGPASS" in p.stdout + p.stderr, (p.stdout, p.stderr)
    c = srv.client(auth=False)
    assert c.call("AUTH", "a:b") == Status(b"OK")
    assert c.call("TR.BITCOUNT", "k") > 0
    c.close()


@pytest.mark.roaringd_only
def test_bitmap_commands_have_acl_categories(roaringd_server):
    """Every TR.* command is in @bitmap and in @read or @write, and ACL
    rules by category and key access apply to them."""
    srv = roaringd_server().start()
    c = srv.client()
    tr = {row[0] for row in c.call("COMMAND") if row[0].startswith(b"tr.")}
    assert tr
    bitmap, read, write = (set(c.call("ACL", "CAT", cat)) for cat in ("bitmap", "read", "write"))
    assert tr <= bitmap, sorted(tr - bitmap)
    assert not (tr - read - write), sorted(tr - read - write)
    assert b"tr.getbit" in read and b"tr.setbit" in write and b"tr.bitop" in write
    assert c.call("ACL", "SETUSER", "bm", "on", ">p", "+@bitmap", "%R~r*", "%W~w*", "~rw*") == Status(b"OK")
    u = srv.client(auth=False)
    assert u.call("AUTH", "bm", "p") == Status(b"OK")
    assert u.call("TR.SETBITS", "w1", "1", "2", "3") == 3
    assert u.call("TR.SETBITS", "rw1", "2") == 1
    assert u.call("TR.GETBIT", "r1", "1") == 0
    assert u.call("TR.BITOP", "w2", "AND", "rw1", "r1") == 0
    assert u.call("TR.GETBIT", "w1", "1") == Err(
        b"NOPERM this user has no permissions to access one of the keys used as arguments")
    assert u.call("TR.BITOP", "r2", "OR", "rw1") == Err(
        b"NOPERM this user has no permissions to access one of the keys used as arguments")
    assert u.call("GET", "rw1") == Err(b"NOPERM this user has no permissions to run the 'get' command")
    log = c.call("ACL", "LOG")
    assert [(e[3], e[7]) for e in log] == [(b"command", b"get"), (b"key", b"r2"), (b"key", b"w1")], log
    u.close()
    c.close()
