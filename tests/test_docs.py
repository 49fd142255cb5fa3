"""Every Python block of README.md and docs/*.md runs, as the complete little program it
is, in a fresh process and an empty directory. A block that only sketches (generated
code, elided parts) says so in its fence: ```python fragment."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, match in enumerate(FENCE.finditer(doc.read_text(encoding="utf-8")), 1):
            yield pytest.param(match.group(1), id=f"{doc.name}#{n}")


@pytest.mark.slow
@pytest.mark.parametrize("code", list(blocks()))
def test_the_block_runs(tmp_path, code):
    program = tmp_path / "block.py"
    program.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(program)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_blocks_are_found():
    assert len(list(blocks())) >= 5
