"""TR.* through redis-py (RESP2 and protocol=3) against a Python set model.

Single-bit writes on big containers (kept by the write-back tier, written
back at its checkpoints), the reads that see them, a MULTI/EXEC
pipeline, TR.BITOP (also overwriting one destination again and again),
TR.OPTIMIZE, and the same answers after a restart and after kill -9 under
`appendfsync always`. roaringd only: Redis has no TR.*.
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

    # 300 edits, about 100 per block.
    for step in range(6):
        edit(r, "tags", model, rnd, 50, span)
        check(r, "tags", model)

    # Two edits of one block in one MULTI/EXEC.
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

    # TR.OPTIMIZE re-encodes the containers; the content does not change.
    assert r.execute_command("TR.OPTIMIZE", "tags") in (b"OK", "OK")
    check(r, "tags", model)
    r.close()


@pytest.mark.parametrize("proto", PROTOS)
def test_pipelined_single_bit_writes_match_a_model(roaringd_server, proto):
    """Pipelines of TR.SETBIT / TR.GETBIT on a few big blocks: consecutive
    data commands run as one store transaction, so one block takes many
    edits in one commit, each reading the previous ones."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(20 + proto)
    span = 2 * 65536  # two blocks of ~1,500 values: 3 KB array containers
    model = set(rnd.sample(range(span), 3000))
    r.execute_command("TR.SETBITS", "p", *sorted(model))
    for rounds in range(8):
        p = r.pipeline(transaction=False)
        want = []
        # A small pool of offsets, so that bits are set, read and cleared
        # again within one group.
        pool = [rnd.randrange(span) for _ in range(40)]
        for _ in range(150):
            v = rnd.choice(pool)
            if rnd.random() < 0.7:
                on = rnd.random() < 0.6
                p.execute_command("TR.SETBIT", "p", v, int(on))
                want.append(int(v in model))
                (model.add if on else model.discard)(v)
            else:
                p.execute_command("TR.GETBIT", "p", v)
                want.append(int(v in model))
        assert p.execute() == want
        check(r, "p", model)
    # One MULTI/EXEC of 300 edits: one transaction.
    p = r.pipeline(transaction=True)
    want = []
    pool = [rnd.randrange(span) for _ in range(60)]
    for _ in range(300):
        v = rnd.choice(pool)
        on = rnd.random() < 0.5
        p.execute_command("TR.SETBIT", "p", v, int(on))
        want.append(int(v in model))
        (model.add if on else model.discard)(v)
    assert p.execute() == want
    check(r, "p", model)
    r.close()
    srv.kill()
    srv.start()
    r = srv.redis_py(protocol=proto)
    check(r, "p", model)
    r.close()


@pytest.mark.parametrize("proto", PROTOS)
def test_a_pipelined_group_the_tier_refuses_keeps_every_edit(roaringd_server, proto):
    """Two keys with edits kept dirty, then one pipelined group that edits
    both: its first edit opens a new container (not the write-back tier's),
    so the group goes through the store, and the second key's edit must
    not be hidden by that key's dirty state, nor undone when it is written
    back (SAVE), nor lost at a restart."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    models = {}
    for key in ("ga", "gb"):
        r.execute_command("TR.SETBITS", key, 10, 20)
        assert r.execute_command("TR.SETBIT", key, 3, 1) == 0
        models[key] = {3, 10, 20}
    p = r.pipeline(transaction=False)
    p.execute_command("TR.SETBIT", "ga", 1 << 16, 1)
    p.execute_command("TR.SETBIT", "gb", 7, 1)
    p.execute_command("TR.GETBIT", "gb", 7)
    assert p.execute() == [0, 0, 1]
    models["ga"].add(1 << 16)
    models["gb"].add(7)
    for key, model in models.items():
        check(r, key, model)
    assert r.execute_command("SAVE")
    for key, model in models.items():
        check(r, key, model)
    r.close()
    srv.kill()
    srv.start()
    r = srv.redis_py(protocol=proto)
    for key, model in models.items():
        check(r, key, model)
    r.close()


@pytest.mark.parametrize("proto", PROTOS)
def test_single_bit_writes_kept_dirty_survive_kill_and_shutdown(roaringd_server, proto):
    """The write-back tier: TR.SETBITs on existing blocks are acknowledged
    from memory and the operation log, and the summary reads (TR.BITCOUNT,
    TR.MIN, TR.MAX, TR.STAT) answer from the dirty summary, alone and in
    pipelines. kill -9 under `appendfsync always`
    with nothing written back must keep every acknowledged edit (the log is
    replayed), also when an ordinary command wrote the key back in between
    and changed the same bits (a replay must not undo it); a SHUTDOWN
    under `everysec` writes everything back."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(40 + proto)
    span = 3 * 65536
    models = {k: set(rnd.sample(range(span), 4000)) for k in ("d1", "d2")}
    for k, m in models.items():
        r.execute_command("TR.SETBITS", k, *sorted(m))

    def summaries(k):
        """The summary reads, which read a dirty key's `meta` in place."""
        m = models[k]
        assert r.execute_command("TR.BITCOUNT", k) == len(m)
        assert r.execute_command("TR.MIN", k) == min(m)
        assert r.execute_command("TR.MAX", k) == max(m)
        stat = r.execute_command("TR.STAT", k)
        assert f"cardinality: {len(m)}\r\n".encode() in stat
        assert f"sum value: {sum(m)}\r\n".encode() in stat
        # A ranged count scans the containers: it writes the key back.
        a, b = sorted(rnd.sample(range(span), 2))
        assert r.execute_command("TR.BITCOUNT", k, a, b) == sum(1 for x in m if a <= x <= b)

    def edits(n):
        for i in range(n):
            k = rnd.choice(["d1", "d2"])
            v = rnd.randrange(span)
            on = rnd.random() < 0.5
            assert r.execute_command("TR.SETBIT", k, v, int(on)) == int(v in models[k])
            assert r.execute_command("TR.GETBIT", k, v) == int(on)
            (models[k].add if on else models[k].discard)(v)
            if i % 10 == 9:
                summaries(k)
            if i % 50 == 49:
                # A pipeline of edits and counts (one group).
                p = r.pipeline(transaction=False)
                want = []
                for _ in range(20):
                    v = rnd.randrange(span)
                    want.append(int(v in models[k]))
                    models[k].add(v)
                    want.append(len(models[k]))
                    p.execute_command("TR.SETBIT", k, v, 1)
                    p.execute_command("TR.BITCOUNT", k)
                assert p.execute() == want

    def restart(r, stop):
        """Stops the server (`stop`), starts it, checks every key."""
        r.close()
        stop()
        srv.start()
        r = srv.redis_py(protocol=proto)
        for k, m in models.items():
            check(r, k, m)
        return r

    edits(400)
    r = restart(r, srv.kill)
    # Edits, then an ordinary write of the same bits (it writes the key
    # back first), then more edits, then kill -9.
    edits(200)
    some = sorted(models["d1"])[::7]
    assert r.execute_command("TR.CLEARBITS", "d1", *some) == len(some)
    models["d1"].difference_update(some)
    edits(200)
    r = restart(r, srv.kill)
    r.execute_command("CONFIG", "SET", "appendfsync", "everysec")
    edits(300)
    r = restart(r, srv.terminate)
    # The tier off: every edit goes to the LSM store.
    r.execute_command("CONFIG", "SET", "appendfsync", "always")
    r.execute_command("CONFIG", "SET", "write-back-bytes", "0")
    assert r.execute_command("CONFIG", "GET", "write-back-bytes") in (
        [b"write-back-bytes", b"0"], {b"write-back-bytes": b"0"})
    edits(200)
    # Nothing was dirty after the restart, and the tier took no edit since.
    assert r.info("stats")["write_back_dirty_keys"] == 0
    restart(r, srv.kill).close()


@pytest.mark.parametrize("proto", PROTOS)
def test_transactional_pipelines_keep_edits_dirty_and_survive_kill(roaringd_server, proto):
    """redis-py's default pipeline wraps its commands in MULTI/EXEC: the
    write-back tier takes its TR.SETBITs (the key stays dirty, the EXEC's
    records are one write of its commit), TR.GETBIT in it sees them, and
    kill -9 under `always` keeps every acknowledged transaction."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(11)
    model = set(range(0, 600000, 3))
    r.execute_command("TR.SETBITS", "t", *sorted(model))
    r.execute_command("SAVE")
    for _ in range(50):
        p = r.pipeline(transaction=True)
        offs = [rnd.randrange(600000) for _ in range(10)]
        want = []
        for o in offs:
            on = rnd.random() < 0.5
            p.execute_command("TR.SETBIT", "t", o, int(on))
            want.append(int(o in model))
            if on:
                model.add(o)
            else:
                model.discard(o)
        p.execute_command("TR.GETBIT", "t", offs[-1])
        p.execute_command("EXPIRE", "t", 100000)
        assert p.execute() == want + [int(offs[-1] in model), 1]
    assert r.info("stats")["write_back_dirty_keys"] == 1
    r.close()
    srv.kill()
    srv.start()
    r = srv.redis_py(protocol=proto)
    check(r, "t", model)
    assert 0 < r.ttl("t") <= 100000
    r.close()


@pytest.mark.parametrize("proto", PROTOS)
def test_exec_reads_back_a_kept_result_it_rewrote(roaringd_server, proto):
    """A TR.BITOP result the write-back tier keeps whole, then one
    MULTI/EXEC that edits the key, writes a second result over it (in
    place) and reads it back: the reads see the transaction's own writes,
    not the result the tier held."""
    srv = roaringd_server().start()
    r = srv.redis_py(protocol=proto)
    a = list(range(0, 21000, 7))
    b = list(range(65536, 65536 + 15000, 5))
    r.execute_command("TR.SETBITS", "a", *a)
    r.execute_command("TR.SETBITS", "b", *b)
    r.execute_command("TR.SETBIT", "d", 3, 1)
    assert r.execute_command("TR.BITOP", "d", "OR", "a", "b") == len(a) + len(b)
    assert r.info("stats")["write_back_dirty_keys"] == 1
    p = r.pipeline(transaction=True)
    p.execute_command("TR.SETBIT", "d", 65536 + 7, 1)
    p.execute_command("TR.BITOP", "d", "OR", "d", "b")
    p.execute_command("TR.GETBIT", "d", 65536 + 7)
    p.execute_command("TR.GETBIT", "d", 7)
    assert p.execute() == [0, len(a) + len(b) + 1, 1, 1]
    assert r.execute_command("TR.GETBIT", "d", 65536 + 7) == 1
    check(r, "d", set(a) | set(b) | {65536 + 7})
    r.close()


@pytest.mark.parametrize("proto", PROTOS)
def test_bitop_results_kept_dirty_survive_kill_and_shutdown(roaringd_server, proto):
    """The write-back tier keeps TR.BITOP results into existing bitmap keys
    whole in memory (one log record each): point and summary reads and
    single-bit edits of the result answer from it, the next result
    replaces it, an ordinary read writes it back. kill -9 under `always`
    must keep every acknowledged result and edit (the log is replayed);
    a SHUTDOWN under `everysec` writes everything back."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(60 + proto)
    span = 5 * 65536
    models = {f"s{i}": set(rnd.sample(range(span), 3000 + 4000 * i)) for i in range(3)}
    for k in ("d0", "d1"):
        models[k] = {span - 1}
    for k, m in models.items():
        r.execute_command("TR.SETBITS", k, *sorted(m))
    ops = {"OR": set.union, "AND": set.intersection, "XOR": set.symmetric_difference,
           "DIFF": set.difference}

    def verify(r, k):
        if models[k]:
            check(r, k, models[k])
        else:
            assert r.execute_command("TR.BITCOUNT", k) == 0

    def rounds(n):
        for i in range(n):
            d = rnd.choice(["d0", "d1"])
            op = rnd.choice(list(ops))
            a, b = rnd.sample(["s0", "s1", "s2"], 2)
            want = ops[op](models[a], models[b])
            assert r.execute_command("TR.BITOP", d, op, a, b) == len(want)
            models[d] = set(want)
            # Reads and edits that leave the result dirty.
            for _ in range(3):
                v = rnd.randrange(span)
                assert r.execute_command("TR.GETBIT", d, v) == int(v in models[d])
            assert r.execute_command("TR.BITCOUNT", d) == len(models[d])
            if models[d]:
                assert r.execute_command("TR.MIN", d) == min(models[d])
                v = rnd.choice(sorted(models[d])) + 1
                assert r.execute_command("TR.SETBIT", d, v, 1) == int(v in models[d])
                models[d].add(v)
            if i % 6 == 5:
                # A source changes: it is dirty for the next TR.BITOP.
                k = rnd.choice(["s0", "s1", "s2"])
                v = rnd.randrange(span)
                r.execute_command("TR.SETBIT", k, v, 1)
                models[k].add(v)
            if i % 10 == 9:
                verify(r, d)  # TR.RANGE writes it back

    def restart(r, stop):
        r.close()
        stop()
        srv.start()
        r = srv.redis_py(protocol=proto)
        for k in models:
            verify(r, k)
        return r

    rounds(60)
    r = restart(r, srv.kill)
    rounds(40)
    r = restart(r, srv.kill)
    r.execute_command("CONFIG", "SET", "appendfsync", "everysec")
    rounds(40)
    restart(r, srv.terminate).close()


@pytest.mark.parametrize("proto", PROTOS)
def test_bitop_overwrites_of_one_destination_match_a_model(roaringd_server, proto):
    """TR.BITOP into one destination again and again (kept under its version
    and written where it changed, when the result is not much smaller),
    mixed with single-bit writes to the destination (the write-back tier's), with
    the destination as a source, a TTL, MULTI/EXEC, a restart and kill -9."""
    srv = roaringd_server(["--appendfsync", "always"]).start()
    r = srv.redis_py(protocol=proto)
    rnd = random.Random(10 + proto)
    span = 4 * 65536  # four blocks of ~1,250 values: arrays of singles (over 512 bytes)
    model = {k: set(rnd.sample(range(span), 5000)) for k in ("s0", "s1", "s2")}
    for k, vals in model.items():
        r.execute_command("TR.SETBITS", k, *sorted(vals))
    model["d"] = set()
    ops = {"OR": set.union, "AND": set.intersection, "XOR": set.symmetric_difference,
           "DIFF": set.difference}

    for step in range(60):
        op = rnd.choice(list(ops))
        a, b = rnd.sample(["s0", "s1", "s2", "d"], 2)
        if step % 7 == 3:
            r.expire("d", 1000)
        want = ops[op](model[a], model[b])
        assert r.execute_command("TR.BITOP", "d", op, a, b) == len(want)
        model["d"] = set(want)
        assert r.ttl("d") == -1
        if step % 5 == 4:
            # A few bits of a source change: the next result differs from
            # the stored one in some blocks only.
            k = rnd.choice(["s0", "s1", "s2"])
            for _ in range(20):
                v = rnd.randrange(span)
                on = rnd.random() < 0.5
                r.execute_command("TR.SETBIT", k, v, int(on))
                (model[k].add if on else model[k].discard)(v)
        if step % 3 == 2 and model["d"]:
            edit(r, "d", model["d"], rnd, 10, span)
        if step % 11 == 10:
            p = r.pipeline(transaction=True)
            p.execute_command("TR.SETBIT", "d", 65536 + 7, 1)
            p.execute_command("TR.BITOP", "d", "OR", "d", "s1")
            p.execute_command("TR.GETBIT", "d", 65536 + 7)
            res = p.execute()
            model["d"] = (model["d"] | {65536 + 7}) | model["s1"]
            assert res[1] == len(model["d"]) and res[2] == 1
        if model["d"]:
            check(r, "d", model["d"])
        else:
            assert r.execute_command("TR.BITCOUNT", "d") == 0

    r.execute_command("TR.BITOP", "d", "OR", "s0", "s2")
    model["d"] = model["s0"] | model["s2"]
    r.execute_command("TR.BITOP", "d", "XOR", "s0", "s2")
    model["d"] = model["s0"] ^ model["s2"]
    r.close()
    srv.kill()
    srv.start()
    r = srv.redis_py(protocol=proto)
    check(r, "d", model["d"])
    r.close()
    srv.restart()
    r = srv.redis_py(protocol=proto)
    check(r, "d", model["d"])
    r.close()
