"""What an importer is: read a public layout's records, map each to an InstanceSpec payload, keep the rest verbatim.

Every source field either maps to a typed field of the instance model or is kept under metadata["source"]: the
importer says how to rebuild the typed part of a record (`typed`), and whatever that does not reproduce exactly is
stored as the record's residue, so `source_record(spec)` always gives back the record as read.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from core.ingest.importers.reading import (
    SPELLINGS,
    Unreadable,
    decompressed,
    documented,
    is_removed,
    respelled,
    storable,
    unstored,
    with_controls,
    without_controls,
)
from core.ingest.io import (
    LineError,
    ValidationReport,
    _decode_lines,
    field_path,
    validate_lines,
)
from core.store.jsonl import nesting_overflow, parse_json
from core.store.schema import MAX_NESTING, InstanceSpec, storable_problems

Raw = Any
ABSENT = "$absent"  # residue key: fields the typed part has but the record had not
REMOVED_CONTROLS = "removed_controls"  # metadata key: {field: control characters removed from its text}
_MISSING = object()
_PATH_INDEX = re.compile(r"\[(\d+)\]")
_SPACE = re.compile(r"\s*")
_FIRST_ON = re.compile(r"first on line (\d+)")  # validate_lines' duplicate-id message, in payload line numbers


class Source(BaseModel):
    """Base of the source-record schemas: strict types, unknown fields allowed (they are kept verbatim)."""

    model_config = ConfigDict(extra="allow", strict=True)


class RecordError(Exception):
    """One or more (field, message) problems of one source record."""

    def __init__(self, *problems: tuple[str, str]) -> None:
        super().__init__("; ".join(f"{f}: {m}" for f, m in problems))
        self.problems = list(problems)


def _same(a: Raw, b: Raw) -> bool:
    return type(a) is type(b) and a == b


def _dict_list(value: Raw) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def residue(record: Raw, typed: Raw) -> Raw:
    """What of `record` the typed part does not reproduce (nested like the record); _MISSING when nothing."""
    if isinstance(record, dict) and isinstance(typed, dict):
        out = {}
        for key, value in record.items():
            rest = residue(value, typed[key]) if key in typed else value
            if rest is not _MISSING:
                out[key] = rest
        absent = [key for key in typed if key not in record]
        if absent:
            out[ABSENT] = absent
        return out or _MISSING
    if _dict_list(record) and _dict_list(typed) and len(typed) <= len(record):
        rests = [residue(r, t) for r, t in zip(record, typed, strict=False)] + record[len(typed):]
        rests = [{} if r is _MISSING else r for r in rests]
        return rests if any(rests) or len(typed) < len(record) else _MISSING
    return _MISSING if _same(record, typed) else record


def restore(typed: Raw, rest: Raw) -> Raw:
    """The record a typed part and its residue were made from (the inverse of `residue`)."""
    if rest is _MISSING:
        return typed
    if is_removed(rest):
        return with_controls(rest)
    if isinstance(rest, dict) and isinstance(typed, dict):
        out = {key: value for key, value in typed.items() if key not in rest.get(ABSENT, ())}
        for key, value in rest.items():
            if key != ABSENT:
                out[key] = restore(typed.get(key, _MISSING), value)
        return out
    if _dict_list(rest) and _dict_list(typed) and len(typed) <= len(rest):
        return [restore(t, r) for t, r in zip(typed, rest, strict=False)] + unstored(rest[len(typed):])
    return unstored(rest)


def doc_id(instance_id: str, path: str) -> str:
    """A document id naming where in the source record the document came from: '<instance>#<path>'."""
    return f"{instance_id}#{path}"


def doc_index(doc_uid: str, field: str) -> tuple[int, ...] | None:
    """The list indices of a document taken from `field` ('positive[1][0]' -> (1, 0)), or None if not from it."""
    path = doc_uid.partition("#")[2]
    if not path.startswith(field) or (path[len(field):] and path[len(field)] != "["):
        return None
    return tuple(int(i) for i in _PATH_INDEX.findall(path[len(field):]))


def placed(spec: InstanceSpec, field: str, render, hole: Raw = None) -> list:
    """The documents taken from list `field`, rendered back at their source positions (skipped ones as `hole`)."""
    found = {idx[0]: render(d) for d in spec.documents if (idx := doc_index(d.doc_id, field))}
    return [found.get(i, hole) for i in range(max(found, default=-1) + 1)]


def loose_message(error: Mapping[str, Any]) -> str:
    """A pydantic error message in the importers' style ('missing', 'input should be a valid string')."""
    if error["type"] == "missing":
        return "missing"
    message = error["msg"].removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """(field path, message) for every error of a pydantic validation."""
    return [(field_path(err["loc"]), loose_message(err)) for err in exc.errors()]


def validated(model: type[BaseModel], raw: Raw) -> BaseModel:
    """`raw` validated as `model`; problems raise RecordError naming the source fields."""
    if not isinstance(raw, dict):
        raise RecordError(("", "expected a JSON object"))
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise RecordError(*validation_problems(exc)) from None


def read_text_bytes(path: Path) -> tuple[bytes, LineError | None]:
    """A file's bytes, unpacked when they are gzip, bzip2 or zip (told by content), or why they cannot be read."""
    try:
        return decompressed(Path(path).read_bytes()), None
    except Unreadable as exc:
        return b"", LineError(1, "", f"{Path(path).name}: {exc}")


def _bad_bytes(data: bytes) -> LineError | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(data[: exc.start].count(b"\n") + 1, "", f"not valid UTF-8 (byte 0x{data[exc.start]:02x})")
    return None


def read_jsonl(data: bytes) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """One JSON value per non-blank line, with its line number; bad lines as errors."""
    records, errors = [], []
    for number, text, decode_error in _decode_lines(data):
        if text is None:
            errors.append(LineError(number, "", decode_error))
        elif text:
            value, problem = parse_json(text)
            if problem:
                errors.append(LineError(number, "", problem))
            else:
                records.append((number, value))
    return records, errors


def _skip_space(text: str, pos: int) -> int:
    """The first position at or after `pos` that is not whitespace."""
    match = _SPACE.match(text, pos)
    assert match is not None  # `\s*` matches the empty string
    return match.end()


def _line_error(text: str, pos: int, message: str) -> LineError:
    """A problem at character `pos` of `text`, as its line with the column in the message."""
    line, column = text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
    return LineError(line, "", f"malformed JSON: {message} (column {column})")


def _element(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Raw, int, LineError | None]:
    """The JSON value at `pos` and where it ends, or the problem with its position (nesting included)."""
    try:
        value, end = decoder.raw_decode(text, pos)
        return value, end, None
    except json.JSONDecodeError as exc:
        return None, pos, _line_error(text, exc.pos, exc.msg)
    except ValueError as exc:  # an integer longer than Python converts
        return None, pos, _line_error(text, pos, str(exc))
    except RecursionError:
        where = nesting_overflow(text, pos)
        return None, pos, _line_error(text, pos if where is None else where,
                                      f"nested too deeply (more than {MAX_NESTING} levels)")


def _array_end(text: str, pos: int, after_comma: bool) -> LineError | None:
    """Why the array cannot end at `pos`: not closed, a trailing comma, or text after its ']'."""
    if pos >= len(text):
        return _line_error(text, pos, "the array is not closed (no ']' before the end of the file)")
    if after_comma:
        return _line_error(text, pos, "a ',' before ']' (trailing comma)")
    rest = _skip_space(text, pos + 1)
    return _line_error(text, rest, "text after the array's closing ']'") if rest < len(text) else None


def read_json_array(text: str) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """The elements of a top-level JSON array, each with the line it starts on; the whole text must be that array
    (not closed, a trailing comma or anything after it is an error with its position)."""
    decoder = json.JSONDecoder()
    records: list[tuple[int, Raw]] = []
    pos, line, counted, after_comma = _skip_space(text, text.index("[") + 1), 1, 0, False
    while pos < len(text) and text[pos] != "]":
        line += text.count("\n", counted, pos)
        counted = pos
        value, pos, problem = _element(decoder, text, pos)
        if problem:
            return records, [problem]
        records.append((line, value))
        pos = _skip_space(text, pos)
        after_comma = pos < len(text) and text[pos] == ","
        if after_comma:
            pos = _skip_space(text, pos + 1)
        elif pos < len(text) and text[pos] != "]":
            return records, [_line_error(text, pos, "expected ',' or ']'")]
    problem = _array_end(text, pos, after_comma)
    return records, [problem] if problem else []


def read_json(path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """A JSON array of records (pretty-printed or not) or JSON Lines, told apart by the first character."""
    data, unreadable = read_text_bytes(path)
    if (bad := unreadable or _bad_bytes(data)) is not None:
        return [], [bad]
    text = data.decode("utf-8")
    return read_json_array(text) if text.lstrip().startswith("[") else read_jsonl(data)


def read_csv(path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """Rows of a header-less CSV file as lists of strings, each with the line it starts on."""
    data, unreadable = read_text_bytes(path)
    if (bad := unreadable or _bad_bytes(data)) is not None:
        return [], [bad]
    reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
    records: list[tuple[int, Raw]] = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return records, []
        except csv.Error as exc:
            return records, [LineError(start, "", f"malformed CSV: {exc}")]
        if row:
            records.append((start, row))


class Importer:
    """A public benchmark layout: how to read it, validate a record, map it to an instance and back."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    Record: ClassVar[type[BaseModel]] = Source
    ALIASES: ClassVar[dict[str, str]] = {}  # field spellings found in published files -> the documented name
    one_file: ClassVar[bool] = True  # False: the layout reads files beside the one named (evidence, question folders)

    def read(self, path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
        """The file's records with their line numbers, and the lines that are not records."""
        return read_json(path)

    def record(self, raw: Raw) -> BaseModel:
        """The validated source record (raises RecordError naming the source fields)."""
        return validated(self.Record, raw)

    def build(self, record: Any, index: int, path: Path) -> dict[str, Any]:
        """The InstanceSpec payload of the index-th record (metadata.source is added by `payload`)."""
        raise NotImplementedError

    def typed(self, spec: InstanceSpec) -> Raw:
        """The part of the source record that the instance's typed fields rebuild."""
        raise NotImplementedError

    def source_record(self, spec: InstanceSpec) -> Raw:
        """The source record an instance was imported from, exactly as read."""
        typed = respelled(self.typed(spec), spec.metadata.get(SPELLINGS, {}))
        return restore(typed, spec.metadata.get("source", _MISSING))

    def payload(self, raw: Raw, index: int, path: Path) -> dict[str, Any]:
        """The full payload of one raw record: typed fields, plus the residue under metadata.source.

        Fields spelled as in ALIASES are read under their documented name, and control characters are removed from
        every text (counted per field under metadata.removed_controls; the raw text stays in metadata.source)."""
        spelled, used = documented(raw, self.ALIASES)
        try:
            clean, removed = without_controls(spelled)
        except RecursionError:  # nested far deeper than storable: say where, as for any other record
            raise RecordError(*storable_problems(spelled)) from None
        if unstorable := storable_problems(clean):
            raise RecordError(*unstorable)
        payload = self.build(self.record(clean), index, path)
        try:
            spec = InstanceSpec.model_validate(payload)
        except ValidationError as exc:
            raise RecordError(*validation_problems(exc)) from None
        meta = {**payload.get("metadata", {}), "format": self.name}
        meta |= ({SPELLINGS: used} if used else {}) | ({REMOVED_CONTROLS: removed} if removed else {})
        if (rest := residue(raw, respelled(self.typed(spec), used))) is not _MISSING:
            meta["source"] = storable(rest)
        return payload | {"metadata": meta}

    def mapped(self, records: list[tuple[int, Raw]], path: Path) -> Iterator[tuple[int, dict[str, Any] | list[LineError]]]:
        """(line, payload) per record read, or (line, errors) for a record that cannot be mapped."""
        for index, (line, raw) in enumerate(records):
            try:
                yield line, self.payload(raw, index, Path(path))
            except RecordError as exc:
                yield line, [LineError(line, f, m) for f, m in exc.problems]

    def payloads(self, path: Path) -> Iterator[tuple[int, dict[str, Any] | list[LineError]]]:
        """(line, payload) per record, or (line, errors) for a record that cannot be mapped."""
        records, errors = self.read(Path(path))
        yield from ((e.line, [e]) for e in errors)
        yield from self.mapped(records, path)

    def parse(self, path: Path, *, skip_invalid: bool = False) -> ValidationReport:
        """Map and validate a whole file like `gauntlet validate` does; any problem leaves no instances.

        With skip_invalid, records that fail are listed under `rejected` and the others kept; a file that cannot be
        read (compressed stream cut, malformed JSON, bad UTF-8) still leaves nothing."""
        records, read_errors = self.read(Path(path))
        lines, payloads, errors = [], [], []
        for line, item in self.mapped(records, path):
            if isinstance(item, list):
                errors.extend(item)
            else:
                lines.append(line)
                payloads.append(item)
        data = "".join(json.dumps(p) + "\n" for p in payloads).encode()
        checked = validate_lines(data)

        def source_line(match: re.Match) -> str:
            return f"first on line {lines[int(match[1]) - 1]}"

        errors += [replace(e, line=lines[e.line - 1], message=_FIRST_ON.sub(source_line, e.message))
                   for e in checked.errors]
        if read_errors or (errors and not skip_invalid):
            return ValidationReport(errors=sorted(read_errors + errors, key=lambda e: e.line))
        rejected = {e.line for e in errors}
        instances = [(lines[n - 1], spec) for n, spec in checked.instances if lines[n - 1] not in rejected]
        notes = [LineError(line, f, m) for line, spec in instances for f, m in self.record_warnings(spec)]
        return ValidationReport(instances=instances, warnings=sorted(_removed_warnings(instances) + notes,
                                                                     key=lambda e: e.line),
                                rejected=sorted(errors, key=lambda e: e.line))

    def record_warnings(self, spec: InstanceSpec) -> list[tuple[str, str]]:
        """(field, message) notes on an imported record that is valid but scores oddly under the format's own
        rules (none by default)."""
        return []


def _removed_warnings(instances: list[tuple[int, InstanceSpec]]) -> list[LineError]:
    """One note per field whose text lost control characters on the way in."""
    return [LineError(line, field, f"removed {count} control character(s); the raw text is kept in metadata.source")
            for line, spec in instances for field, count in spec.metadata.get(REMOVED_CONTROLS, {}).items()]
