"""Regenerate known_gaps.py from a run against the current roaringd.

    $HOME/.cache/roaringd/venv/bin/python tests/update_known_gaps.py [pytest args...]

Runs the suite with the gap list switched off, collects every failing or
erroring test with the first line of its failure, and rewrites the GAPS
table (reasons that were already written by hand for a test are kept).
Review the diff before committing.
"""

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent


def reason_of(msg: str) -> str:
    lines = [l.strip() for l in msg.strip().splitlines() if l.strip()] or ["fails"]
    line = lines[0]
    if ("[random" in line or "[fuzz" in line) and len(lines) > 1:
        line = lines[1]
    m = re.search(r"roaringd Err\(value=b.ERR unknown command '([^']+)'", line)
    if m:
        return f"{m.group(1).upper()} not implemented (unknown command)"
    line = re.sub(r"^(diff\.DiffMismatch|AssertionError|E\s+)\s*:?\s*", "", line)
    line = re.sub(r"\s+", " ", line)
    return line[:160]


def main():
    with tempfile.TemporaryDirectory() as d:
        xml = os.path.join(d, "r.xml")
        env = dict(os.environ, ROARINGD_TEST_IGNORE_GAPS="1")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                        str(HERE), *sys.argv[1:]], env=env)
        tree = ET.parse(xml)
    failing = {}
    for tc in tree.iter("testcase"):
        for tag in ("failure", "error"):
            el = tc.find(tag)
            if el is not None:
                name = f"{tc.get('classname').split('.')[-1]}.py::{tc.get('name')}"
                failing[name] = reason_of(el.get("message") or el.text or "")
                break
    sys.path.insert(0, str(HERE))
    from known_gaps import GAPS as old
    lines = []
    for k in sorted(failing):
        reason = old.get(k) if k in old and not old[k].startswith("auto:") else "auto: " + failing[k]
        lines.append(f"    {k!r}: {reason!r},\n")
    src = (HERE / "known_gaps.py").read_text()
    head = src[: src.index("GAPS: dict[str, str] = {") + len("GAPS: dict[str, str] = {\n")]
    (HERE / "known_gaps.py").write_text(head + "".join(lines) + "}\n")
    print(f"{len(failing)} failing tests written to known_gaps.py")


if __name__ == "__main__":
    main()
