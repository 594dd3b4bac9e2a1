"""Fixtures: the servers under test and the differential pair.

Environment:
  ROARINGD_BIN                  the roaringd binary (default: $CARGO_TARGET_DIR/release/roaringd,
                                built with cargo when missing)
  ROARINGD_TEST_AGAINST_REDIS=1 run the "roaringd" side on a second redis-server
                                (validates the harness; known gaps are not applied)
  ROARINGD_TEST_SEEDS           comma-separated seeds for the random differential tests
  ROARINGD_TEST_IGNORE_GAPS=1   do not apply known_gaps.py (see update_known_gaps.py)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff import Pair  # noqa: E402
from known_gaps import GAPS  # noqa: E402
from resp_client import Err  # noqa: E402
from servers import AGAINST_REDIS, ServerProcess  # noqa: E402


def test_key(item) -> str:
    return f"{Path(str(item.fspath)).name}::{item.name}"


def gap_matches(pattern: str, key: str) -> bool:
    """Exact test key, or a pattern where '*' (only) is a wildcard ('[' is literal)."""
    if "*" not in pattern:
        return pattern == key
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), key) is not None


def pytest_collection_modifyitems(config, items):
    if AGAINST_REDIS or os.environ.get("ROARINGD_TEST_IGNORE_GAPS"):
        return
    for item in items:
        key = test_key(item)
        for pattern, reason in GAPS.items():
            if gap_matches(pattern, key):
                item.add_marker(pytest.mark.xfail(strict=True, reason=f"known gap: {reason}"))
                break


def pytest_report_header(config):
    from servers import REDIS_SERVER, roaringd_bin
    side = "redis-server (ROARINGD_TEST_AGAINST_REDIS=1)" if AGAINST_REDIS else roaringd_bin()
    return [f"roaringd side: {side}", f"reference: {REDIS_SERVER}"]


def pytest_configure(config):
    config.addinivalue_line("markers", "roaringd_only: behaviour beyond Redis 7.0 (skipped redis-vs-redis)")


def pytest_runtest_setup(item):
    if AGAINST_REDIS and item.get_closest_marker("roaringd_only"):
        pytest.skip("roaringd-only behaviour; not checked against redis 7.0")


class ServerPairState:
    def __init__(self, roaringd_args=()):
        self.roaringd = None
        self.redis = None
        self.roaringd_args = list(roaringd_args)

    def ensure(self):
        if self.redis is None or not self.redis.alive():
            if self.redis is not None:
                self.redis.cleanup()
            self.redis = ServerProcess("redis").start()
        if self.roaringd is None or not self.roaringd.alive():
            if self.roaringd is not None:
                self.roaringd.cleanup()
            self.roaringd = ServerProcess("roaringd", self.roaringd_args).start()

    def reset(self, prepare=None):
        """FLUSHALL both (after `prepare(client)`, which returns False when it
        fails); a server that cannot (or crashed) is restarted empty."""
        self.ensure()
        for name in ("redis", "roaringd"):
            srv = getattr(self, name)
            ok = False
            try:
                c = srv.client()
                try:
                    ok = (prepare is None or prepare(c)) and not isinstance(c.call("FLUSHALL"), Err)
                finally:
                    c.close()
            except Exception:
                ok = False
            if not ok:
                srv.cleanup()
                args = self.roaringd_args if name == "roaringd" else ()
                setattr(self, name, ServerProcess(name, args).start())

    def close(self):
        for s in (self.roaringd, self.redis):
            if s is not None:
                s.cleanup()


@pytest.fixture(scope="session")
def servers():
    st = ServerPairState()
    st.ensure()
    yield st
    st.close()


@pytest.fixture
def pair(servers):
    """Differential pair over RESP2 connections, both servers empty."""
    servers.reset()
    p = Pair(servers.roaringd, servers.redis, protocol=2)
    yield p
    p.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def ppair(servers, request):
    """Differential pair, parametrised over RESP2 and RESP3."""
    servers.reset()
    p = Pair(servers.roaringd, servers.redis, protocol=request.param)
    yield p
    p.close()


@pytest.fixture
def fresh():
    """Factory for per-test servers: fresh(extra_args) -> (roaringd, redis), both started."""
    made = []

    def make(extra_args=(), roaringd_args=None, redis_args=None):
        r = ServerProcess("roaringd", roaringd_args if roaringd_args is not None else extra_args).start()
        made.append(r)
        s = ServerProcess("redis", redis_args if redis_args is not None else extra_args).start()
        made.append(s)
        return r, s

    yield make
    for s in made:
        s.cleanup()


@pytest.fixture
def fresh_pair(fresh):
    """Factory: a Pair over per-test servers started with extra_args."""
    pairs = []

    def make(extra_args=(), protocol=2):
        r, s = fresh(extra_args)
        p = Pair(r, s, protocol=protocol)
        pairs.append(p)
        return p

    yield make
    for p in pairs:
        p.close()


@pytest.fixture
def roaringd_server():
    """One per-test roaringd (or its redis stand-in), with a cleanup."""
    made = []

    def make(extra_args=(), dir=None, port=None):
        s = ServerProcess("roaringd", extra_args, dir=dir, port=port)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()
