"""The differential helper: one command, sent to roaringd and to Redis, replies compared.

    pair = Pair(roaringd_server, redis_server, protocol=2)
    pair("SET", "k", "v")            # sends to both, asserts equal (normalise.py rules), returns Redis's reply
    pair.seq([("SET", "a", "1"), ("INCR", "a")])
    pair.scan_all("SSCAN", "s", match="a*")   # full iteration on both, compared as sets

MULTI/EXEC is tracked, so an EXEC reply is compared command by command with
each queued command's own rule.
"""

from __future__ import annotations

from normalise import command_key, compare, fmt_cmd
from resp_client import NIL_ARRAY, Err, Map, RSet, Status


class DiffMismatch(AssertionError):
    pass


class Pair:
    def __init__(self, roaringd, redis, protocol: int = 2, history=None):
        self.rs = roaringd
        self.ss = redis
        self.protocol = protocol
        self.r = roaringd.client(protocol=protocol)
        self.s = redis.client(protocol=protocol)
        self.queued = None
        self.history = history if history is not None else []
        self._others = []

    def other(self, protocol: int | None = None) -> "Pair":
        """A second pair of connections (another client) to the same two servers."""
        p = Pair(self.rs, self.ss, protocol or self.protocol, history=self.history)
        self._others.append(p)
        return p

    def close(self):
        for p in self._others:
            p.close()
        self.r.close()
        self.s.close()

    def _fail(self, msg):
        hist = "\n".join(self.history[-25:])
        raise DiffMismatch(f"{msg}\n--- last commands (roaringd reply | Redis reply) ---\n{hist}")

    def __call__(self, *cmd):
        return self.both(*cmd)

    def both(self, *cmd, check=True):
        got = self.r.call(*cmd)
        want = self.s.call(*cmd)
        return self._compare(cmd, got, want, check)

    def _compare(self, cmd, got, want, check=True):
        key = command_key(cmd)
        queued = None
        if key == "MULTI" and want == Status(b"OK"):
            self.queued = []
        elif self.queued is not None:
            if key == "EXEC" or (key == "DISCARD" and want == Status(b"OK")):
                # EXEC always ends the transaction (EXECABORT included); a DISCARD
                # with wrong arity does not
                queued, self.queued = self.queued, None
            elif want == Status(b"QUEUED"):
                self.queued.append(cmd)
        self.history.append(f"{fmt_cmd(cmd)}  ->  {got!r} | {want!r}")
        if check:
            msg = compare(cmd, got, want, queued=queued)
            if msg:
                self._fail(msg)
        return want

    def seq(self, cmds):
        return [self.both(*c) for c in cmds]

    def pipeline(self, cmds):
        """Send all commands in one write to each server, compare each reply."""
        got = self.r.pipeline(cmds)
        want = self.s.pipeline(cmds)
        return [self._compare(c, g, w) for c, g, w in zip(cmds, got, want)]

    # -- per-server helpers -------------------------------------------------
    def each(self):
        """(name, client) for both sides, for invariant checks run on each."""
        return [("roaringd", self.r), ("redis", self.s)]

    def scan_all(self, name, key=None, match=None, count=None, type_=None, novalues=False):
        """Full SCAN/SSCAN/HSCAN iteration on each server; compares the results as sets."""
        results = []
        for side, c in self.each():
            results.append(scan_full(c, name, key, match, count, type_))
        got, want = results
        if got != want:
            self._fail(f"{name} {key or ''} MATCH={match} COUNT={count} TYPE={type_}: full iteration differs:\n"
                        f"  roaringd only: {sorted(got - want)[:20]}\n  Redis only: {sorted(want - got)[:20]}")
        return want


def scan_full(c, name, key=None, match=None, count=None, type_=None, max_rounds=100000):
    """Iterate a SCAN-family command to cursor 0 and return the set of elements
    (pairs for HSCAN). Errors are returned as {Err}."""
    cursor = b"0"
    out = set()
    for _ in range(max_rounds):
        cmd = [name] + ([key] if key is not None else []) + [cursor]
        if match is not None:
            cmd += ["MATCH", match]
        if count is not None:
            cmd += ["COUNT", count]
        if type_ is not None:
            cmd += ["TYPE", type_]
        r = c.call(*cmd)
        if isinstance(r, Err):
            return {r.value}
        assert isinstance(r, list) and len(r) == 2, f"{name}: bad page {r!r}"
        cursor, items = r
        assert isinstance(cursor, bytes) and cursor.isdigit(), f"{name}: cursor {cursor!r} is not a number"
        if isinstance(items, RSet):
            items = items.items
        if isinstance(items, Map):
            items = [x for kv in items.items for x in kv]
        if name.upper() == "HSCAN":
            assert len(items) % 2 == 0, items
            out.update(zip(items[0::2], items[1::2]))
        else:
            out.update(items)
        if cursor == b"0":
            return out
    raise AssertionError(f"{name} did not finish after {max_rounds} rounds")


def members(c, key) -> set:
    r = c.call("SMEMBERS", key)
    if isinstance(r, RSet):
        r = r.items
    return set(r) if isinstance(r, list) else set()


def hash_items(c, key) -> dict:
    r = c.call("HGETALL", key)
    if isinstance(r, Map):
        return dict(r.items)
    if isinstance(r, list):
        return dict(zip(r[0::2], r[1::2]))
    return {}


def flat(reply):
    if isinstance(reply, (RSet,)):
        return reply.items
    if reply is NIL_ARRAY:
        return None
    return reply


def parse_step(step):
    if isinstance(step, str):
        return tuple(step.split())
    return tuple(step)


def run_script(pair, script):
    """Run a scenario: each step is "CMD arg arg" (split on spaces), a tuple of
    arguments (for bytes / spaces), or a callable taking the pair."""
    for step in script:
        if callable(step):
            step(pair)
        else:
            pair.both(*parse_step(step))


def sleep(seconds):
    import time

    def f(pair):
        time.sleep(seconds)
    f.__name__ = f"sleep({seconds})"
    return f
