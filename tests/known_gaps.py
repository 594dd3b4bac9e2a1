"""Tests that fail against the current roaringd, each with a one-line reason.

Applied by conftest.py as pytest.mark.xfail(strict=True): when a gap is
fixed the test XPASSes, which fails the run, and its line must be removed
here. Not applied when ROARINGD_TEST_AGAINST_REDIS=1 (redis-vs-redis must
pass everything).

Keys are "<file name>::<test name with params>", e.g.
"test_strings.py::test_scenario[resp2-set_ex]"; a key containing '*' is a
pattern ('*' is the only wildcard). Reasons "Fn ..." refer to
docs/handoff/test-findings.md. tests/update_known_gaps.py regenerates the
table from a run (reasons written by hand are kept).
"""

GAPS: dict[str, str] = {
    'test_connection.py::test_auth_scenario[hello_needs_auth]': "F7 HELLO-before-AUTH error text is Redis 7.2's",
    'test_connection.py::test_auth_scenario[noauth]': 'F6 EXEC rejected by NOAUTH not wrapped in EXECABORT',
    'test_hashes.py::test_scenario[resp2-hincrbyfloat]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_hashes.py::test_scenario[resp3-hincrbyfloat]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_random.py::test_random_sequence[hashes-seed1]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_random.py::test_random_sequence[mixed-seed1]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[mixed-seed2]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[mixed-seed3]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[sets-seed1]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[sets-seed2]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[sets-seed3]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_random.py::test_random_sequence[strings-seed1]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_random.py::test_random_sequence[strings-seed3]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_random.py::test_random_sequence_resp3[seed3]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_server.py::test_info_stats_counters': 'F8 INFO stats keyspace_hits/misses not counted',
    'test_server.py::test_scenario[resp2-config_get]': 'F4 CONFIG GET lower-cases the echoed parameter name',
    'test_server.py::test_scenario[resp3-config_get]': 'F4 CONFIG GET lower-cases the echoed parameter name',
    'test_sets.py::test_scenario[resp2-smove]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_sets.py::test_scenario[resp3-smove]': 'F2 SMOVE from a missing source into a wrong-type destination: WRONGTYPE, Redis 0',
    'test_sets.py::test_scenario[resp2-spop_deterministic]': 'F5 SPOP bad count error text',
    'test_sets.py::test_scenario[resp3-spop_deterministic]': 'F5 SPOP bad count error text',
    'test_strings.py::test_scenario[resp2-incrbyfloat]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_strings.py::test_scenario[resp3-incrbyfloat]': 'F1 INCRBYFLOAT/HINCRBYFLOAT computed in f64, Redis uses long double + %.17Lg',
    'test_transactions.py::test_watch_not_touched_by[DEL_nokey]': 'F3 WATCH aborted by a write that changed nothing',
    'test_transactions.py::test_watch_not_touched_by[EXPIRE_nokey_10]': 'F3 WATCH aborted by a write that changed nothing',
    'test_transactions.py::test_watch_not_touched_by[HDEL_h_nope]': 'F3 WATCH aborted by a write that changed nothing',
    'test_transactions.py::test_watch_not_touched_by[PERSIST_k]': 'F3 WATCH aborted by a write that changed nothing',
    'test_transactions.py::test_watch_not_touched_by[SREM_s_nope]': 'F3 WATCH aborted by a write that changed nothing',
    'test_transactions.py::test_watch_touched_by[PERSIST_k]': 'F3 WATCH aborted by a write that changed nothing',
}
