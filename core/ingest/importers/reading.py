"""How published files differ from their documented layout, read without loss: compressed bytes (told by content),
control characters inside text, and other spellings of a documented field.

Each helper either returns what the importer reads next or a problem with its position; nothing here refuses a
record for a variant its authors publish.
"""

from __future__ import annotations

import bz2
import io
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import Any

CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 controls but tab, LF and CR; DEL
REMOVED = "$controls"  # residue leaf: [[position, code point], ...] of the control characters removed from a text
CLEAN = "$text"  # ... and the text once they are removed
SPELLINGS = "spellings"  # metadata key: {documented field: the spelling the file used}
GZIP, BZIP2, ZIP = b"\x1f\x8b", b"BZh", b"PK\x03\x04"


class Unreadable(Exception):
    """Bytes that do not decompress: the message says where they stop making sense."""


def _stream_end(kind: str, out: bytes, consumed: int) -> Unreadable:
    line = out.count(b"\n") + 1
    return Unreadable(f"the {kind} stream ends early: {consumed} compressed bytes give {len(out)} bytes "
                      f"(line {line} of the text is cut); the file is truncated")


def _streams(data: bytes, kind: str, stream: Callable[[], Any], errors: type[Exception] | tuple) -> bytes:
    """Every stream of a gzip (members) or bzip2 (pbzip2 concatenation) file, unpacked one after the other."""
    out, rest = b"", data
    while rest:
        unpacker = stream()
        try:
            out += unpacker.decompress(rest)
        except errors as exc:
            raise Unreadable(f"not a valid {kind} stream after {len(out)} bytes of text: {exc}") from None
        if not unpacker.eof:
            raise _stream_end(kind, out, len(data))
        rest = unpacker.unused_data
    return out


def _unzip(data: bytes) -> bytes:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) != 1:
            names = ", ".join(m.filename for m in members) or "none"
            raise Unreadable(f"a .zip archive must hold exactly one file to import; it holds {len(members)} ({names})")
        return archive.read(members[0])
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise Unreadable(f"not a readable .zip archive ({exc}); the file is truncated or damaged") from None


def decompressed(data: bytes) -> bytes:
    """The text bytes of a file: gzip, bzip2 or zip content is unpacked (told by its first bytes, not its name)."""
    if data.startswith(GZIP):
        return _streams(data, "gzip", lambda: zlib.decompressobj(wbits=31), zlib.error)
    if data.startswith(BZIP2):
        return _streams(data, "bzip2", bz2.BZ2Decompressor, OSError)
    if data.startswith(ZIP):
        return _unzip(data)
    return data


def _path(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def without_controls(value: Any, where: str = "", counts: dict[str, int] | None = None) -> tuple[Any, dict[str, int]]:
    """`value` with the control characters removed from every text in it, and how many per field path."""
    counts = {} if counts is None else counts
    if isinstance(value, str):
        clean, found = CONTROLS.subn("", value)
        if found:
            counts[where] = found
        return clean, counts
    if isinstance(value, dict):
        return {k: without_controls(v, _path(where, k), counts)[0] for k, v in value.items()}, counts
    if isinstance(value, list):
        return [without_controls(v, _path(where, i), counts)[0] for i, v in enumerate(value)], counts
    return value, counts


def removed_characters(text: str) -> dict[str, Any]:
    """A text with control characters as storable JSON: the clean text and each removed character's place."""
    return {CLEAN: CONTROLS.sub("", text), REMOVED: [[m.start(), ord(m[0])] for m in CONTROLS.finditer(text)]}


def with_controls(stored: Mapping[str, Any]) -> str:
    """The raw text `removed_characters` stored (the inverse)."""
    text = stored[CLEAN]
    for position, code in stored[REMOVED]:
        text = text[:position] + chr(code) + text[position:]
    return text


def _rebuilt(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """`value` with `leaf` applied to each item before looking inside it (it returns the item itself to descend)."""
    changed = leaf(value)
    if changed is not value:
        return changed
    if isinstance(value, dict):
        return {k: _rebuilt(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuilt(v, leaf) for v in value]
    return value


def storable(rest: Any) -> Any:
    """A residue with every raw text that holds control characters stored as `removed_characters`."""
    return _rebuilt(rest, lambda v: removed_characters(v) if isinstance(v, str) and CONTROLS.search(v) else v)


def unstored(rest: Any) -> Any:
    """A residue with its raw texts back (the inverse of `storable`)."""
    return _rebuilt(rest, lambda v: with_controls(v) if is_removed(v) else v)


def is_removed(rest: Any) -> bool:
    """Whether a residue leaf is a text stored by `removed_characters`."""
    return isinstance(rest, dict) and set(rest) == {CLEAN, REMOVED}


def documented(raw: Any, aliases: Mapping[str, str]) -> tuple[Any, dict[str, str]]:
    """A record with its fields spelled as documented (`aliases`: other spelling -> documented name), and the
    spellings it used ({documented: spelling}); a record holding both spellings is left as it is."""
    if not isinstance(raw, dict):
        return raw, {}
    used = {name: alias for alias, name in aliases.items() if alias in raw and name not in raw}
    if not used:
        return raw, {}
    spelled = {v: k for k, v in used.items()}
    return {spelled.get(key, key): value for key, value in raw.items()}, used


def respelled(typed: Any, used: Mapping[str, str]) -> Any:
    """A typed record back in the spellings the source file used (the inverse of `documented`)."""
    if not used or not isinstance(typed, dict):
        return typed
    return {used.get(key, key): value for key, value in typed.items()}
