"""Tests that fail against the current roaringd, each with a one-line reason.

Applied by conftest.py as pytest.mark.xfail(strict=True): when a gap is
fixed the test XPASSes, which fails the run, and its line must be removed
here. Not applied when ROARINGD_TEST_AGAINST_REDIS=1 (redis-vs-redis must
pass everything).

Keys are fnmatch patterns over "<file name>::<test name with params>",
e.g. "test_strings.py::test_scenario[resp2-set_ex]".
"""

GAPS: dict[str, str] = {
}
