"""Differential tests: string commands (hand-written scenarios, RESP2 and RESP3)."""

import pytest

from diff import run_script, sleep

BIN_KEY = b"k\x00\xff\xfe\r\n key"
BIN_VAL = bytes(range(256))

SCENARIOS = {
    "get_set_basic": ["GET nokey", "SET k v", "GET k", "SET k v2", "GET k", "SET k ''", "GET k", "STRLEN k"],
    "set_binary": [("SET", BIN_KEY, BIN_VAL), ("GET", BIN_KEY), ("STRLEN", BIN_KEY), ("EXISTS", BIN_KEY),
                   ("SET", b"\xc3\x28", b"\xff"), ("GET", b"\xc3\x28"), ("APPEND", BIN_KEY, b"\x00\x00"),
                   ("GET", BIN_KEY), ("GETRANGE", BIN_KEY, "250", "-1")],
    "set_empty_value": [("SET", "k", b""), "GET k", "STRLEN k", "EXISTS k", ("APPEND", "k", b""), "GET k"],
    "set_ex_px": ["SET k v EX 100", "TTL k", "PTTL k", "SET k v PX 100000", "TTL k", "PTTL k",
                  "SET k v", "TTL k"],
    "set_exat_pxat": [lambda p: p("SET", "k", "v", "EXAT", str(_now() + 100)), "TTL k",
                      lambda p: p("SET", "k", "v", "PXAT", str(_now() * 1000 + 100000)), "PTTL k",
                      "EXPIRETIME k", "PEXPIRETIME k"],
    "set_exat_past": ["SET k v EXAT 1", "GET k", "EXISTS k", "SET k v PXAT 1", "GET k"],
    "set_nx_xx": ["SET k v NX", "SET k v2 NX", "GET k", "SET k v3 XX", "GET k", "SET other v XX", "GET other",
                  "SET k v4 NX XX"],
    "set_keepttl": ["SET k v EX 100", "SET k v2 KEEPTTL", "TTL k", "SET k v3", "TTL k", "SET k v EX 100 KEEPTTL"],
    "set_get_option": ["SET k v GET", "SET k v2 GET", "SET k v3 NX GET", "SET k v4 XX GET", "GET k",
                       "SADD s a", "SET s v GET", "SMEMBERS s", "SET nk v XX GET", "EXISTS nk"],
    "set_errors": ["SET k", "SET k v EX", "SET k v EX 0", "SET k v EX -1", "SET k v PX 0", "SET k v EX abc",
                   "SET k v EX 10 PX 100", "SET k v FOO", "SET k v EX 9999999999999999",
                   "SET k v KEEPTTL EX 10", "SET k v EXAT 0", "SET k v NX NX", "SET k v ex 100", "TTL k"],
    "set_overwrites_type": ["SADD k a", "SET k v", "TYPE k", "GET k", "HSET h f v", "SET h x EX 100", "TYPE h", "TTL h"],
    "setnx": ["SETNX k v", "SETNX k v2", "GET k", "SETNX k", "SADD s a", "SETNX s v"],
    "setex_psetex": ["SETEX k 100 v", "TTL k", "GET k", "PSETEX p 100000 v", "PTTL p", "GET p",
                     "SETEX k 0 v", "SETEX k -5 v", "SETEX k abc v", "PSETEX p 0 v", "SETEX k 100",
                     "GET k"],
    "getset": ["GETSET k v", "GETSET k v2", "GET k", "SET k v EX 100", "GETSET k v3", "TTL k",
               "SADD s a", "GETSET s v", "GETSET k"],
    "getdel": ["GETDEL k", "SET k v", "GETDEL k", "EXISTS k", "SADD s a", "GETDEL s", "EXISTS s", "GETDEL"],
    "getex": ["GETEX k", "SET k v", "GETEX k", "TTL k", "GETEX k EX 100", "TTL k", "GETEX k PX 200000", "PTTL k",
              "GETEX k PERSIST", "TTL k", lambda p: p("GETEX", "k", "EXAT", str(_now() + 300)), "TTL k",
              lambda p: p("GETEX", "k", "PXAT", str(_now() * 1000 + 400000)), "PTTL k",
              "GETEX k EX 0", "GETEX k EX -1", "GETEX k EX 10 PX 10", "GETEX k FOO", "GETEX k EX",
              "SADD s a", "GETEX s", "GETEX k EXAT 1", "EXISTS k"],
    "mget_mset": ["MSET a 1 b 2 c 3", "MGET a b c d", "MSET a", "MSET a 1 b", "SADD s x", "MGET a s b",
                  "MSET a x a y", "GET a", "MGET", ("MSET", BIN_KEY, BIN_VAL), ("MGET", BIN_KEY, "a")],
    "mset_clears_ttl": ["SET a 1 EX 100", "MSET a 2", "TTL a"],
    "msetnx": ["MSETNX a 1 b 2", "MSETNX b 3 c 4", "MGET a b c", "MSETNX c 5 c 6", "GET c", "MSETNX a",
               "SADD s x", "MSETNX s 1 d 1", "EXISTS d"],
    "incr_decr": ["INCR n", "INCR n", "DECR n", "INCRBY n 10", "DECRBY n 3", "INCRBY n -100", "DECRBY n -5", "GET n",
                  "SET n 9223372036854775806", "INCR n", "INCR n", "GET n",
                  "SET n -9223372036854775807", "DECR n", "DECR n",
                  "SET n abc", "INCR n", "SET n ' 1'", "INCR n", "SET n 1.5", "INCR n", "SET n 01", "INCR n",
                  "SET n ''", "INCR n", "INCRBY n abc", "INCRBY m 1.5", "DECRBY m 9223372036854775808",
                  "SET n 5", "DECRBY n -9223372036854775808", "INCRBY n 9223372036854775807",
                  "SADD s a", "INCR s", "DECR s", "INCRBY s 1"],
    "incr_keeps_ttl": ["SET n 1 EX 100", "INCR n", "TTL n", "INCRBYFLOAT n 1.5", "TTL n", "GET n"],
    "incr_int_formats": ["SET n +1", "INCR n", "SET n -0", "INCR n", "SET n 1e3", "INCR n",
                         "SET n 18446744073709551616", "INCR n", "SET n 0x10", "INCR n"],
    "incrbyfloat": ["INCRBYFLOAT f 1.5", "INCRBYFLOAT f 0.1", "INCRBYFLOAT f -3", "GET f", "INCRBYFLOAT f 1e3",
                    "INCRBYFLOAT f 5.0e3", "INCRBYFLOAT f abc", "INCRBYFLOAT f inf", "INCRBYFLOAT f nan",
                    "SET g 10", "INCRBYFLOAT g 0.25", "SET g 3.0", "INCRBYFLOAT g 1", "SET g 1.5e2",
                    "INCRBYFLOAT g 1", "SET g abc", "INCRBYFLOAT g 1", "SET g 1.79e308", "INCRBYFLOAT g 1.79e308",
                    "INCRBYFLOAT h 0", "GET h", "INCRBYFLOAT h -0.0", "INCRBYFLOAT i 10.50", "GET i",
                    "INCRBYFLOAT i 1.0000000000000001", "INCRBYFLOAT i 3.3333333333333333333",
                    "SADD s a", "INCRBYFLOAT s 1", "INCRBYFLOAT f"],
    "incrbyfloat_long_double_range": ["INCRBYFLOAT b 1e308", "INCRBYFLOAT b 1e308", "GET b", "INCRBYFLOAT c 3e400",
                                      "INCRBYFLOAT c -3e400", "GET c", "INCRBYFLOAT d 1e5000", "INCRBYFLOAT d 1e4933"],
    "append_strlen": ["APPEND k abc", "APPEND k def", "GET k", "STRLEN k", "STRLEN nokey", "SET n 10", "APPEND n 5",
                      "GET n", "INCR n", "SADD s a", "APPEND s x", "STRLEN s", "APPEND k"],
    "getrange": ["SET k 'Hello'", "SET k HelloWorld", "GETRANGE k 0 3", "GETRANGE k -3 -1", "GETRANGE k 0 -1",
                 "GETRANGE k 5 2", "GETRANGE k 100 200", "GETRANGE k -100 3", "GETRANGE k 3 100",
                 "GETRANGE nokey 0 10", "GETRANGE k a b", "SET n 12345", "GETRANGE n 1 2",
                 "GETRANGE k -1 -5", "GETRANGE k 0 -100", "SADD s a", "GETRANGE s 0 1", "GETRANGE k 0"],
    "setrange": ["SETRANGE k 5 abc", "GET k", "STRLEN k", "SET k HelloWorld", "SETRANGE k 0 J", "GET k",
                 "SETRANGE k 20 x", "GET k", "SETRANGE k -1 x", "SETRANGE k 536870912 x",
                 "SETRANGE e 0 ''", "EXISTS e", "SETRANGE e 10 ''", "EXISTS e", "SETRANGE k 1 ''", "GET k",
                 "SET n 123", "SETRANGE n 1 9", "GET n", "INCR n", "SADD s a", "SETRANGE s 0 x", "SETRANGE k a b",
                 "SET t v EX 100", "SETRANGE t 0 w", "TTL t"],
    "long_key": [("SET", "K" * 10000, "v"), ("GET", "K" * 10000), ("STRLEN", "K" * 10000), ("EXISTS", "K" * 10000),
                 ("APPEND", "K" * 10000, "w"), ("GET", "K" * 10000), "DBSIZE"],
    "very_long_key": [("SET", "L" * 70000, "v"), ("GET", "L" * 70000), ("EXISTS", "L" * 70000), "DBSIZE",
                      ("SADD", "s", "M" * 70000), ("SISMEMBER", "s", "M" * 70000), ("HSET", "h", "F" * 70000, "v"),
                      ("HGET", "h", "F" * 70000), "PING"],
    "large_value": [lambda p: p("SET", "big", b"x" * 1_000_000), "STRLEN big",
                    lambda p: p("APPEND", "big", b"y" * 100_000), "STRLEN big", "GETRANGE big 1099990 1100010"],
    "wrong_arity": ["GET", "GET a b", "STRLEN", "APPEND a", "INCR", "INCR a b", "DECRBY a", "GETRANGE a 0",
                    "SETRANGE a 0", "MGET", "GETSET a", "SETEX a 1", "PSETEX a 1"],
    "case_insensitive_names": ["set k v", "get k", "Get k", "sEt k v2 ex 100", "ttl k", "incr n", "mget k n"],
    # short TTLs: generous margins so that a slow machine cannot make the servers disagree
    "expiry_short": ["SET k v PX 1000", "SETEX j 1 v", "GET k", "GET j", sleep(1.5), "GET k", "EXISTS k", "TTL k",
                     "GET j", "DBSIZE"],
}


def _now():
    import time
    return int(time.time())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(ppair, name):
    run_script(ppair, SCENARIOS[name])
