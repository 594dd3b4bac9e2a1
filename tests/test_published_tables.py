"""bench/published-tables --quick against a fresh roaringd and Redis 7: the
report's structure (every published row of section 1 present, every figure
parses, no error replies), not its timings. Skipped when the roaringd binary
has no TR.* commands (they arrive with the `tr` branch).

Environment: ROARINGD_BIN as for the other tests; ROARINGD_BENCH for the load
generator (default: roaringd-bench next to the roaringd binary, built with
cargo when missing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from servers import REPO, roaringd_bin

# TR.* is beyond Redis 7.0: nothing to check when the "roaringd" side is a redis-server.
pytestmark = pytest.mark.roaringd_only

SCRIPT = REPO / "bench" / "published-tables"

# First cells of the published rows, per section (published-figures.md, section 1).
EXPECTED = {
    "1.1": ["TR.GETBIT", "TR.GETBITS", "TR.RANK", "TR.RANGE", "TR.SCAN"],
    "1.2": ["TR.SETBIT", "TR.SETBITS", "TR.SETBITS, ordered offsets", "TR.APPENDBITARRAY",
            "TR.SETRANGE", "TR.FLIPRANGE"],
    "1.3": [("20", "10"), ("10", "50"), ("6 / 7", "100"), ("3 / 7", "200"), ("3 / 5", "500"),
            ("2", "100")],
    "1.4": ["37,700,484", "75,011,384", "100,403,264", "163,090,592", "253,104,088", "261,169,659",
            "267,974,804", "273,694,253", "343,504,134", "535,589,835"],
    "1.5": ["TR.SETBIT", "TR.SETBITS", "TR.GETBIT", "TR.GETBITS", "TR.SCAN", "TR.RANK"],
    "1.6": ["AND", "OR", "XOR", "DIFF", "NOT"],
}
# Rows with no Redis counterpart (their Redis cells are "—").
NO_REDIS = {("1.1", "TR.RANGE"), ("1.1", "TR.SCAN"), ("1.2", "TR.SETBITS, ordered offsets"),
            ("1.2", "TR.APPENDBITARRAY"), ("1.2", "TR.SETRANGE"), ("1.2", "TR.FLIPRANGE"),
            ("1.5", "TR.SCAN")}
NUMBER = re.compile(r"^-?[0-9][0-9,]*(\.[0-9]+)?$")


def bench_bin(roaringd: str) -> str:
    b = os.environ.get("ROARINGD_BENCH") or os.path.join(os.path.dirname(roaringd), "roaringd-bench")
    if not os.access(b, os.X_OK) and not os.environ.get("ROARINGD_BENCH"):
        cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
        target = os.path.dirname(os.path.dirname(roaringd))
        subprocess.run([cargo, "build", "--release", "-p", "roaringd-bench"], cwd=REPO,
                       env=dict(os.environ, CARGO_TARGET_DIR=target), check=True)
    return b


def parse_tables(report: str) -> dict[str, list[list[str]]]:
    """Section number ("1.1" ...) -> rows (cells) of the table under its heading."""
    sections: dict[str, list[list[str]]] = {}
    current = None
    for line in report.splitlines():
        m = re.match(r"^#### (1\.\d)\b", line)
        if m:
            current = m.group(1)
            sections[current] = []
            continue
        if current and line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            sections[current].append(cells)
    # drop each table's header and separator rows
    return {k: v[2:] for k, v in sections.items()}


def check_number(cell: str, where: str, allow_dash: bool):
    if allow_dash and cell == "—":
        return
    assert NUMBER.match(cell), f"{where}: {cell!r} is not a number"


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    if not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} missing")
    roaringd = roaringd_bin()
    env = dict(os.environ, ROARINGD_BIN=roaringd, ROARINGD_BENCH=bench_bin(roaringd))
    out = tmp_path_factory.mktemp("published") / "report.md"
    doc = tmp_path_factory.mktemp("published") / "doc.md"
    doc.write_text("# before\n\n<!-- published-tables:begin -->\nold\n<!-- published-tables:end -->\n\n# after\n")
    p = subprocess.run([sys.executable, str(SCRIPT), "--quick", "-o", str(out), "--write", str(doc)],
                       capture_output=True, text=True, env=env, timeout=600)
    if p.returncode == 3:
        pytest.skip(f"roaringd has no TR.* commands (main gets them when `tr` is merged): "
                    f"{p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, f"published-tables failed ({p.returncode}):\n{p.stderr[-3000:]}"
    return out.read_text(), doc.read_text()


def test_every_published_row_present(quick_report):
    report, _ = quick_report
    tables = parse_tables(report)
    assert set(tables) == set(EXPECTED) | {"1.7"}, f"sections {sorted(tables)}"
    for sec, labels in EXPECTED.items():
        rows = tables[sec]
        if sec == "1.3":
            got = [(r[0], r[1]) for r in rows]
        elif sec == "1.4":
            got = [r[1] for r in rows]
        else:
            got = [r[0] for r in rows]
        assert got == labels, f"section {sec}: rows {got}"
    assert tables["1.7"] == [] and "#### 1.7 Cluster\n\nSkipped" in report


def test_figures_parse(quick_report):
    report, _ = quick_report
    tables = parse_tables(report)
    for sec in ("1.1", "1.2"):
        for r in tables[sec]:
            assert len(r) == 13, r
            no_redis = (sec, r[0]) in NO_REDIS
            for i in (3, 4, 5, 6, 7):
                check_number(r[i], f"{sec} {r[0]} col {i}", allow_dash=False)
            assert float(r[5].replace(",", "")) > 0, f"{sec} {r[0]}: roaringd QPS {r[5]}"
            assert r[8].startswith("—") == no_redis, f"{sec} {r[0]}: Redis command {r[8]!r}"
            for i in (9, 10, 11, 12):
                if no_redis:
                    assert r[i] == "—", f"{sec} {r[0]} col {i}: {r[i]!r}"
                else:
                    check_number(r[i], f"{sec} {r[0]} col {i}", allow_dash=False)
    for r in tables["1.5"]:
        assert len(r) == 12, r
        no_redis = ("1.5", r[0]) in NO_REDIS
        for i in (2, 3, 4, 5, 6):
            check_number(r[i], f"1.5 {r[0]} col {i}", allow_dash=False)
        assert r[7].startswith("—") == no_redis
        for i in (8, 9, 10, 11):
            check_number(r[i], f"1.5 {r[0]} col {i}", allow_dash=no_redis)
            if no_redis:
                assert r[i] == "—"
    for r in tables["1.3"]:
        assert len(r) == 18, r
        for i in range(2, 18):
            check_number(r[i], f"1.3 {r[0]}×{r[1]} col {i}", allow_dash=False)
    for r in tables["1.4"]:
        assert len(r) == 17, r
        for i in range(1, 17):
            check_number(r[i], f"1.4 {r[1]} col {i}", allow_dash=(i == 15))
    for r in tables["1.6"]:
        assert len(r) == 17, r
        for i in range(1, 17):
            check_number(r[i], f"1.6 {r[0]} col {i}", allow_dash=(r[0] == "DIFF" and i in (6, 7, 8, 14, 15, 16)))
        if r[0] == "DIFF":
            assert r[6] == r[14] == "—"
        else:
            assert r[6] != "—" and r[14] != "—"


def test_census_matches_cardinality(quick_report):
    """1.4: the TR.STAT cardinality is the imported one; sparse keys are all arrays."""
    report, _ = quick_report
    for r in parse_tables(report)["1.4"]:
        n = lambda i: float(r[i].replace(",", ""))  # noqa: E731
        assert n(6) > 0
        if r[0] == "sparse":
            assert n(10) == 0 and n(8) == n(7), r


def test_no_error_replies(quick_report):
    report, _ = quick_report
    assert "#### Errors seen" not in report, report[report.find("#### Errors seen"):]


def test_write_replaces_only_the_marked_section(quick_report):
    report, doc = quick_report
    assert doc.startswith("# before\n\n<!-- published-tables:begin -->\n")
    assert doc.endswith("<!-- published-tables:end -->\n\n# after\n")
    assert "old\n" not in doc
    assert "#### 1.6 Set operations" in doc
