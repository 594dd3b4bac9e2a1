"""Tests that fail against the current roaringd, each with a one-line reason.

Applied by conftest.py as pytest.mark.xfail(strict=True): when a gap is
fixed the test XPASSes, which fails the run, and its line must be removed
here. Not applied when ROARINGD_TEST_AGAINST_REDIS=1 (redis-vs-redis must
pass everything).

Keys are "<file name>::<test name with params>", e.g.
"test_strings.py::test_scenario[resp2-set_ex]"; a key containing '*' is a
pattern ('*' is the only wildcard). Reasons "Fn ..." name a finding;
F11 is the store's entry-key limit (docs/architecture.md, store layout).
tests/update_known_gaps.py regenerates the
table from a run (reasons written by hand are kept).
"""

GAPS: dict[str, str] = {
    'test_strings.py::test_scenario[resp2-very_long_key]': 'F11 keys/members over 64 KiB are refused (documented store limit, docs/architecture.md)',
    'test_strings.py::test_scenario[resp3-very_long_key]': 'F11 keys/members over 64 KiB are refused (documented store limit, docs/architecture.md)',
}
