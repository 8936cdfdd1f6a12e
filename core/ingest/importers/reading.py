"""How published files differ from their documented layout, read without loss: compressed bytes (told by content),
control characters inside text, and other spellings of a documented field.

Each helper either returns what the importer reads next or a problem with its position; nothing here refuses a
record for a variant its authors publish.
"""

from __future__ import annotations

import bz2
import io
import math
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # C0 controls but tab, LF and CR; DEL
REMOVED = "$controls"  # residue leaf: [[position, code point], ...] of the control characters removed from a text
CLEAN = "$text"  # ... and the text once they are removed
SPELLINGS = "spellings"  # metadata key: {documented field: the spelling the file used}
GZIP, BZIP2, ZIP = b"\x1f\x8b", b"BZh", b"PK\x03\x04"


UNPACK_MAX_MB_ENV, UNPACK_MAX_MB = "GAUNTLET_UNPACK_MAX_MB", 1024  # unpacked bytes at most (MiB)
UNPACK_MAX_RATIO_ENV, UNPACK_MAX_RATIO = "GAUNTLET_UNPACK_MAX_RATIO", 100.0  # unpacked / packed bytes at most ...
RATIO_FROM = 1 << 20  # ... once past the first MiB (a tiny file of repeated lines may expand more, harmlessly)
CHUNK = 1 << 20  # bytes unpacked per step: a cap is checked after each


class Unreadable(Exception):
    """Bytes that do not decompress: the message says where they stop making sense."""


@dataclass(frozen=True)
class UnpackLimits:
    """How far a compressed file may unpack: bytes at most, and unpacked/packed at most past RATIO_FROM."""

    max_bytes: int = UNPACK_MAX_MB << 20
    max_ratio: float = UNPACK_MAX_RATIO

    @classmethod
    def from_env(cls) -> UnpackLimits:
        """The limits set by GAUNTLET_UNPACK_MAX_MB and GAUNTLET_UNPACK_MAX_RATIO (defaults 1024 MiB and 100)."""
        return cls(int(_positive(UNPACK_MAX_MB_ENV, UNPACK_MAX_MB) * (1 << 20)),
                   _positive(UNPACK_MAX_RATIO_ENV, UNPACK_MAX_RATIO))

    def check(self, kind: str, unpacked: int, packed: int) -> None:
        """Unreadable once `unpacked` bytes pass the size cap or, past RATIO_FROM, the expansion ratio."""
        if unpacked > self.max_bytes:
            raise Unreadable(f"the {kind} content unpacks to more than {self.max_bytes / (1 << 20):g} MiB "
                             f"({UNPACK_MAX_MB_ENV}); refused as a possible compression bomb, nothing read")
        if unpacked > RATIO_FROM and unpacked > self.max_ratio * packed:
            raise Unreadable(f"the {kind} content expands more than {self.max_ratio:g} times ({packed} compressed "
                             f"bytes gave {unpacked} and counting; {UNPACK_MAX_RATIO_ENV}); refused as a possible "
                             "compression bomb, nothing read")


def _positive(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw.strip() else default
    except ValueError:
        raise Unreadable(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise Unreadable(f"{name}={raw!r} must be a positive number")
    return value


def _stream_end(kind: str, out: bytes | bytearray, consumed: int) -> Unreadable:
    line = out.count(b"\n") + 1
    return Unreadable(f"the {kind} stream ends early: {consumed} compressed bytes give {len(out)} bytes "
                      f"(line {line} of the text is cut); the file is truncated")


def _streams(data: bytes, kind: str, stream: Callable[[], Any], errors: type[Exception] | tuple,
             limits: UnpackLimits) -> bytes:
    """Every stream of a gzip (members) or bzip2 (pbzip2 concatenation) file, unpacked one after the other, CHUNK
    bytes at a time with the limits checked after each."""
    out, rest = bytearray(), data
    while rest:
        unpacker, pending = stream(), rest
        try:
            while not unpacker.eof:
                chunk = unpacker.decompress(pending, CHUNK)
                pending = getattr(unpacker, "unconsumed_tail", b"")  # zlib hands back its unread input; bz2 keeps it
                out += chunk
                limits.check(kind, len(out), len(data))
                if not chunk and not pending and getattr(unpacker, "needs_input", True):
                    break  # all input read, no output left, stream not ended: truncated
        except errors as exc:
            raise Unreadable(f"not a valid {kind} stream after {len(out)} bytes of text: {exc}") from None
        if not unpacker.eof:
            raise _stream_end(kind, out, len(data))
        rest = unpacker.unused_data
    return bytes(out)


def _unzip(data: bytes, limits: UnpackLimits) -> bytes:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) != 1:
            names = ", ".join(m.filename for m in members) or "none"
            raise Unreadable(f"a .zip archive must hold exactly one file to import; it holds {len(members)} ({names})")
        limits.check("zip", members[0].file_size, len(data))  # what it declares, then what it gives
        out = bytearray()
        with archive.open(members[0]) as member:
            while chunk := member.read(CHUNK):
                out += chunk
                limits.check("zip", len(out), len(data))
        return bytes(out)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise Unreadable(f"not a readable .zip archive ({exc}); the file is truncated or damaged") from None


def decompressed(data: bytes, limits: UnpackLimits | None = None) -> bytes:
    """The text bytes of a file: gzip, bzip2 or zip content is unpacked (told by its first bytes, not its name),
    streamed under `limits` (default: the settings), so a compression bomb is refused before it fills memory."""
    if not data.startswith((GZIP, BZIP2, ZIP)):
        return data
    limits = limits or UnpackLimits.from_env()
    if data.startswith(GZIP):
        return _streams(data, "gzip", lambda: zlib.decompressobj(wbits=31), zlib.error, limits)
    if data.startswith(BZIP2):
        return _streams(data, "bzip2", bz2.BZ2Decompressor, OSError, limits)
    return _unzip(data, limits)


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
