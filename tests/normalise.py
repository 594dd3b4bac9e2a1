"""The one place where roaringd's replies are allowed to differ from Redis's.

Every differential comparison goes through `compare(cmd, roaringd_reply,
redis_reply)`. By default replies must be identical: same RESP types, same
values, same error texts. The table below lists every exception, each with the
reason. Nothing else is normalised anywhere in the suite.
"""

from __future__ import annotations

from resp_client import (NIL_ARRAY, BigNum, Bool, Double, Err, Map, Push, RSet,
                         Status, Verbatim)


def _b(x) -> bytes:
    if isinstance(x, bytes):
        return x
    return str(x).encode()


def command_key(cmd) -> str:
    """'GET', or 'CLIENT LIST' for container commands."""
    name = _b(cmd[0]).upper().decode("latin-1")
    if name in _CONTAINERS and len(cmd) > 1:
        return name + " " + _b(cmd[1]).upper().decode("latin-1")
    return name


_CONTAINERS = {"CLIENT", "CONFIG", "OBJECT", "MEMORY", "SLOWLOG", "COMMAND", "SCRIPT", "ACL", "CLUSTER"}


# --- normalisers ---------------------------------------------------------------

def _sortkey(v):
    return repr(v)


def sort_elements(reply):
    """Unordered collections: Redis returns hash-table order."""
    if isinstance(reply, list):
        return ("array", sorted(reply, key=_sortkey))
    if isinstance(reply, RSet):
        return ("set", sorted(reply.items, key=_sortkey))
    return reply


def sort_pairs(reply):
    """Field/value replies of hashes (HGETALL): order is hash-table order."""
    if isinstance(reply, list) and len(reply) % 2 == 0:
        return ("flat-pairs", sorted(zip(reply[0::2], reply[1::2]), key=_sortkey))
    if isinstance(reply, Map):
        return ("map", sorted(reply.items, key=_sortkey))
    return reply


def kind(reply):
    """Only the RESP type of the reply (values legitimately differ). Errors stay exact."""
    if isinstance(reply, Err):
        return reply
    if reply is None or reply is NIL_ARRAY:
        return reply
    if isinstance(reply, (bytes, Verbatim)):
        return "string"  # INFO is a bulk string in RESP2, verbatim in RESP3 (either is fine)
    return type(reply).__name__


def shape(reply):
    """The type tree of a reply, with array lengths but no scalar values."""
    if isinstance(reply, Err) or reply is None or reply is NIL_ARRAY:
        return reply
    if isinstance(reply, list):
        return ["array", [shape(x) for x in reply]]
    if isinstance(reply, Map):
        return ["map", [(shape(k), shape(v)) for k, v in reply.items]]
    if isinstance(reply, (RSet, Push)):
        return [type(reply).__name__, [shape(x) for x in reply.items]]
    return type(reply).__name__


def random_members(reply):
    """SPOP/SRANDMEMBER/HRANDFIELD: which members come back is random.

    Kept: nil vs member, the RESP type, the number of elements, whether the
    elements are distinct (positive count: distinct; negative: may repeat,
    so distinctness is not kept for them)."""
    if isinstance(reply, Err) or reply is None or reply is NIL_ARRAY:
        return reply
    if isinstance(reply, bytes):
        return "member"
    if isinstance(reply, (list, RSet)):
        items = reply.items if isinstance(reply, RSet) else reply
        return (type(reply).__name__, len(items), [shape(x) for x in items][:1])
    return shape(reply)


def hello_shape(reply):
    """HELLO: server name/version/id differ; proto/mode/role and the field names must match."""
    if isinstance(reply, Err):
        return reply
    if isinstance(reply, list):
        pairs = list(zip(reply[0::2], reply[1::2]))
        tag = "flat"
    elif isinstance(reply, Map):
        pairs = reply.items
        tag = "map"
    else:
        return shape(reply)
    keep = {b"proto", b"mode", b"role"}
    return (tag, sorted((k, v if k in keep else shape(v)) for k, v in pairs))


def scan_page(reply):
    """One SCAN page: cursor values and page contents are implementation details;
    full iterations are compared as sets by the scan tests."""
    if isinstance(reply, list) and len(reply) == 2:
        return ["array", ["cursor", type(reply[1]).__name__]]
    return reply


def _rules(rules):
    """ACL command rules: Redis 7.0 lists the single commands (after `+@all`
    / `-@all` and the categories) in its hash table's order, which changes
    from process to process: the first rule and the set of the others."""
    if not isinstance(rules, bytes):
        return rules
    toks = rules.split(b" ")
    return (toks[0], sorted(toks[1:]))


def _acl_fields(reply):
    """ACL GETUSER (or one selector of it): its `commands` as `_rules`."""
    if isinstance(reply, Map):
        pairs, tag = reply.items, "map"
    elif isinstance(reply, list) and len(reply) % 2 == 0:
        pairs, tag = list(zip(reply[0::2], reply[1::2])), "flat"
    else:
        return reply
    out = []
    for k, v in pairs:
        if k == b"commands":
            v = _rules(v)
        elif k == b"selectors" and isinstance(v, list):
            v = [_acl_fields(x) for x in v]
        out.append((k, v))
    return (tag, out)


def acl_line(line):
    """One ACL LIST / ACL file line: each selector's command rules as `_rules`."""
    if not isinstance(line, bytes):
        return line
    out = []
    for part in line.split(b" ("):
        toks = part.rstrip(b")").split(b" ")
        i = next((j for j, t in enumerate(toks) if t in (b"+@all", b"-@all")), None)
        out.append(toks if i is None else (toks[:i], _rules(b" ".join(toks[i:]))))
    return out


def acl_list(reply):
    if isinstance(reply, list):
        return [acl_line(x) for x in reply]
    return reply


def acl_log(reply):
    """ACL LOG: ages are clock readings and client-info lines differ by
    address and id (CLIENT LIST rule): only their user= and cmd= fields."""
    if not isinstance(reply, list):
        return reply
    out = []
    for e in reply:
        pairs = e.items if isinstance(e, Map) else list(zip(e[0::2], e[1::2]))
        fields = []
        for k, v in pairs:
            if k == b"age-seconds":
                v = type(v).__name__
            elif k == b"client-info" and isinstance(v, bytes):
                v = sorted(t for t in v.split(b" ") if t.startswith((b"user=", b"cmd=")))
            fields.append((k, v))
        out.append((type(e).__name__, fields))
    return out


class Tolerance:
    """Integer replies that depend on the clock (TTL, PTTL, ...): negative
    values (-1 no expiry, -2 no key) must be equal; positive values within
    `tol` of each other."""

    def __init__(self, tol):
        self.tol = tol


# The list. Key: command (or "CONTAINER SUB"). Value: normaliser or Tolerance.
NORMALISATIONS = {
    # Unordered in Redis itself (hash tables): compare as sorted collections.
    "SMEMBERS": sort_elements,
    "SINTER": sort_elements,
    "SUNION": sort_elements,
    "SDIFF": sort_elements,
    "KEYS": sort_elements,
    "HKEYS": sort_elements,
    "HVALS": sort_elements,
    "HGETALL": sort_pairs,
    "CONFIG GET": sort_pairs,     # Redis answers in its dict order
    # Random by definition: shape and counts only (membership is checked
    # separately against each server's own contents).
    "SPOP": random_members,
    "SRANDMEMBER": random_members,
    "HRANDFIELD": random_members,
    "RANDOMKEY": lambda r: "key" if isinstance(r, bytes) else r,
    # Clock-dependent values: compared with a tolerance.
    "TTL": Tolerance(2),
    "PTTL": Tolerance(2000),
    "EXPIRETIME": Tolerance(2),
    "PEXPIRETIME": Tolerance(2000),
    # Implementation-specific content: type only.
    "OBJECT ENCODING": kind,      # Redis: embstr/int/raw/listpack/intset/hashtable; roaringd: its own names
    "OBJECT FREQ": kind,
    "OBJECT IDLETIME": kind,
    "OBJECT REFCOUNT": kind,
    "MEMORY USAGE": kind,         # byte counts differ by design
    "INFO": kind,                 # fields are checked by test_server_info.py, values differ
    "CLIENT LIST": kind,          # fields checked by test_connection.py; addr/fd/age differ
    "CLIENT INFO": kind,
    "CLIENT ID": kind,            # ids are per-server counters
    "TIME": shape,                # wall clock
    "LASTSAVE": kind,             # wall clock
    "HELLO": hello_shape,         # server/version/id/modules differ
    "SLOWLOG GET": kind,          # entries contain durations and client addresses
    "SLOWLOG LEN": kind,
    "DBSIZE": None,               # exact (listed to say so: no normalisation)
    "SCAN": scan_page,            # cursors are opaque; full iterations compared as sets
    "SSCAN": scan_page,
    "HSCAN": scan_page,
    "COMMAND DOCS": kind,         # documentation text differs
    "COMMAND COUNT": kind,        # roaringd has a different command set
    # ACL: Redis orders single-command rules by hash table (per process).
    "ACL GETUSER": _acl_fields,
    "ACL LIST": acl_list,
    "ACL LOG": acl_log,           # ages and client addresses differ
    "ACL GENPASS": lambda r: len(r) if isinstance(r, bytes) else r,  # random
}


def normalise(cmd, reply):
    rule = NORMALISATIONS.get(command_key(cmd))
    if rule is None or isinstance(rule, Tolerance):
        return reply
    return rule(reply)


def _within(a, b, tol):
    if isinstance(a, int) and isinstance(b, int):
        if a < 0 or b < 0:
            return a == b
        return abs(a - b) <= tol
    return a == b


def compare(cmd, got, want, queued=None):
    """None when `got` (roaringd) matches `want` (Redis) for `cmd`, else a message.

    `queued`: for EXEC, the commands that were queued (their replies are
    compared one by one with their own rules)."""
    key = command_key(cmd)
    if key == "EXEC" and queued is not None and isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return f"EXEC: {len(got)} replies vs Redis {len(want)}: {got!r} vs {want!r}"
        for c, g, w in zip(queued, got, want):
            m = compare(c, g, w)
            if m:
                return f"EXEC/{m}"
        return None
    rule = NORMALISATIONS.get(key)
    if isinstance(rule, Tolerance):
        if _within(got, want, rule.tol):
            return None
        return f"{fmt_cmd(cmd)}: roaringd {got!r} vs Redis {want!r} (tolerance {rule.tol})"
    ng, nw = normalise(cmd, got), normalise(cmd, want)
    if ng == nw:
        return None
    return f"{fmt_cmd(cmd)}: roaringd {got!r} != Redis {want!r}" + (
        f"  [normalised: {ng!r} vs {nw!r}]" if (ng is not got or nw is not want) else "")


def fmt_cmd(cmd) -> str:
    parts = []
    for a in cmd:
        b = _b(a)
        s = b.decode("utf-8", "backslashreplace")
        parts.append(s if s and " " not in s and len(s) < 60 else repr(s[:60]))
    return " ".join(parts)
