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
    'test_hashes.py::test_hrandfield_big_hash': 'F21 HRANDFIELD without count on big hashes is far from uniform (random-pivot sampling)',
    'test_keyspace.py::test_randomkey_big_db_spread': 'F21 RANDOMKEY on a big database is far from uniform (random-pivot seek)',
    'test_sets.py::test_random_members_big_set': 'F21 SRANDMEMBER/SPOP without count on big sets is far from uniform (random-pivot sampling)',
    'test_strings.py::test_scenario[resp2-very_long_key]': 'F11 keys/members over 64 KiB are refused (documented store limit, store-to-infra.md section 6)',
    'test_strings.py::test_scenario[resp3-very_long_key]': 'F11 keys/members over 64 KiB are refused (documented store limit, store-to-infra.md section 6)',
}
