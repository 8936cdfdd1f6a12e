"""Choose the records of a published benchmark file that go into tests/fixtures/<format>/ when the whole file cannot.

Kept: the first FIRST records, then the first record of every shape not yet kept (shape = each field's JSON type,
list element types included), every record whose text holds control characters, and the records named with --also
(a kind the shapes do not show, such as CRAG's false-premise questions). JSONL lines are copied byte for byte; a JSON array is rewritten in its publisher's layout
(4-space indent, non-ASCII kept). A .bz2/.gz output name compresses the result.

    python bench/published_fixtures.py SOURCE OUT [--first N] [--also INDEX ...]
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.ingest.importers.reading import decompressed, without_controls  # noqa: E402

FIRST = 5


def shape(value: Any) -> str:
    """A value's JSON type, list element types included ('list[list[str]|str]')."""
    if isinstance(value, list):
        return "list[" + "|".join(sorted({shape(v) for v in value})) + "]"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def signature(record: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A record's shape: its fields and their types."""
    return tuple(sorted((key, shape(value)) for key, value in record.items()))


def chosen(records: list[dict[str, Any]], first: int, also: frozenset[int] = frozenset()) -> list[int]:
    """Indexes of the records to keep, in file order."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    keep = []
    for index, record in enumerate(records):
        sig = signature(record) if isinstance(record, dict) else (("", type(record).__name__),)
        unusual = sig not in seen or bool(without_controls(record)[1])
        if index < first or unusual or index in also:
            keep.append(index)
        seen.add(sig)
    return keep


def _write(out: Path, data: bytes) -> None:
    if out.suffix == ".bz2":
        data = bz2.compress(data)
    elif out.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    out.write_bytes(data)


def main() -> None:
    """Write the chosen records of SOURCE to OUT and print which were kept."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--first", type=int, default=FIRST)
    parser.add_argument("--also", type=int, nargs="*", default=[], help="source indexes to keep too (say why in "
                        "the fixture README)")
    args = parser.parse_args()
    text = decompressed(args.source.read_bytes()).decode("utf-8")
    if text.lstrip().startswith("["):
        records = json.loads(text)
        keep = chosen(records, args.first, frozenset(args.also))
        data = json.dumps([records[i] for i in keep], indent=4, ensure_ascii=False).encode()
    else:
        lines = [line for line in text.split("\n") if line.strip()]
        records = [json.loads(line) for line in lines]
        keep = chosen(records, args.first, frozenset(args.also))
        data = "".join(lines[i] + "\n" for i in keep).encode()
    _write(args.out, data)
    print(f"{args.out}: kept {len(keep)} of {len(records)} records (source indexes {keep})")


if __name__ == "__main__":
    main()
