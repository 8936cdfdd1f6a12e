"""The shell commands a docs page gives under one of its sections, for the tests that run them as written."""

from __future__ import annotations

import re
from pathlib import Path


def bash_commands(doc: Path, section: str) -> list[str]:
    """The commands of the one ```bash block under `## section` of `doc`: continuation lines joined, comment lines
    and trailing ` # ...` comments dropped."""
    body = doc.read_text(encoding="utf-8").split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", body, re.S)
    assert len(blocks) == 1, f"{doc.name}: one bash block expected under {section!r}, found {len(blocks)}"
    lines = blocks[0].replace("\\\n", " ").splitlines()
    return [line.split(" #")[0].strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
