"""TR.* through redis-py (RESP2 and protocol=3) against a Python set model.

Single-bit writes on big containers (kept as delta entries beside the
container, folded every 64th edit), the reads that see them, a MULTI/EXEC
pipeline, TR.BITOP, TR.OPTIMIZE, and the same answers after a restart and
after kill -9 under `appendfsync always`. roaringd only: Redis has no TR.*.
"""

import random

import pytest

pytestmark = pytest.mark.roaringd_only

PROTOS = [2, 3]
TOP = 4294967295


def check(r, key, model):
    vals = sorted(model)
    assert r.execute_command("TR.BITCOUNT", key) == len(vals)
    assert r.execute_command("TR.MIN", key) == vals[0]
    assert r.execute_command("TR.MAX", key) == vals[-1]
    assert list(r.execute_command("TR.RANGE", key, 0, TOP)) == vals
    assert r.execute_command("TR.BITPOS", key, 1) == vals[0]
    probe = vals[::97] + [v + 1 for v in vals[::89]]
    got = r.execute_command("TR.GETBITS", key, *probe)
    assert list(got) == [int(v in model) for v in probe]


def edit(r, key, model, rnd, n, block_span):
    """n single-bit TR.SETBITs inside the big blocks; each reply checked."""
    for _ in range(n):
        v = rnd.randrange(block_span)
        on = rnd.random() < 0.6
        prev = r.execute_command("TR.SETBIT", key, v, int(on))
        assert prev == int(v in model), (v, on)
        if on:
            model.add(v)
        else:
            model.discard(v)


@pytest.mark.parametrize("proto", PROTOS)
def test_single_bit_writes_on_big_containers_match_a_model(roaringd_server, proto):
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(proto)
    span = 3 * 65536  # three blocks of ~1,500 values: 3 KB array containers
    model = set(rnd.sample(range(span), 4500))
    assert r.execute_command("TR.SETBITS", "tags", *sorted(model)) == len(model)

    # 300 edits: each block passes its 64-delta fold at least once.
    for step in range(6):
        edit(r, "tags", model, rnd, 50, span)
        check(r, "tags", model)

    # Two edits of one block in one MULTI/EXEC (the second rewrites it).
    p = r.pipeline(transaction=True)
    p.execute_command("TR.SETBIT", "tags", 70001, 1)
    p.execute_command("TR.SETBIT", "tags", 70003, 0)
    p.execute_command("TR.GETBIT", "tags", 70001)
    res = p.execute()
    assert res[2] == 1
    model.add(70001)
    model.discard(70003)
    check(r, "tags", model)

    other = set(rnd.sample(range(span), 3000))
    r.execute_command("TR.SETBITS", "other", *sorted(other))
    assert r.execute_command("TR.BITOP", "and", "AND", "tags", "other") == len(model & other)
    assert r.execute_command("TR.BITOPCARD", "OR", "tags", "other") == len(model | other)
    assert list(r.execute_command("TR.RANGE", "and", 0, TOP)) == sorted(model & other)
    assert r.memory_usage("tags") > 2 * len(model)

    # Survives a clean restart and a kill -9 (appendfsync always).
    edit(r, "tags", model, rnd, 40, span)
    r.close()
    srv.restart()
    r = srv.redis_py(protocol=proto)
    check(r, "tags", model)
    edit(r, "tags", model, rnd, 40, span)
    r.close()
    srv.kill()
    srv.start()
    r = srv.redis_py(protocol=proto)
    check(r, "tags", model)

    # TR.OPTIMIZE folds every delta; the content does not change.
    assert r.execute_command("TR.OPTIMIZE", "tags") in (b"OK", "OK")
    check(r, "tags", model)
    r.close()
