"""A seed paper's main results table, reproduced: its rows and columns as published, every cell with its interval
and n, rendered as Markdown, CSV or LaTeX by `gauntlet reproduce` and shown on the protocol's page.

A protocol declares its tables with `PaperTableSpec` (Protocol.paper_tables); the builder is named 'module:function'
and imported only when the table is built, so a declaration never imports the analysis layer. A builder takes
(engine, run ids, judge, settings) and returns a `PaperTable`; the cells come from the read model (one number, one
computation), never from the builder's own arithmetic.
"""

from __future__ import annotations

import csv
import importlib
import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.registry import unknown_name_message

if TYPE_CHECKING:
    from core.metrics import ScoreState

FORMATS: tuple[str, ...] = ("markdown", "csv", "latex")


@dataclass(frozen=True)
class PaperCell:
    """One cell: a value on the paper's scale (`scale` times the metric, e.g. 100 for percentages), its interval
    (None when the cell has none, e.g. a count) and the n behind it; `state` says why a cell has no value."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    scale: float = 100.0
    digits: int = 1
    state: str = ""  # e.g. "no scored responses", "not applicable" when value is None

    def __post_init__(self) -> None:
        bounded = self.value is not None and self.low is not None and self.high is not None
        if bounded and not self.low - 1e-9 <= self.value <= self.high + 1e-9:  # type: ignore[operator]
            raise ValueError(f"interval [{self.low}, {self.high}] does not hold its value {self.value}")

    def number(self, x: float | None) -> str:
        """`x` on the paper's scale, to the cell's digits ('' for None)."""
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return ""
        return f"{x * self.scale:.{self.digits}f}"

    def text(self) -> str:
        """The cell as the Markdown table shows it: value [low, high] (n = N), or its state."""
        if self.value is None:
            return f"— ({self.state or 'no value'}; n = {self.n})"
        interval = f" [{self.number(self.low)}, {self.number(self.high)}]" if self.low is not None else ""
        return f"{self.number(self.value)}{interval} (n = {self.n})"


Cell = PaperCell | str  # a str is a label cell (e.g. a model name in a second header column)


@dataclass(frozen=True)
class PaperTable:
    """A paper's table as reproduced: the header row, the data rows (a label and one cell per remaining column),
    and the notes printed under it (judge, settings, small n, differences from the paper)."""

    protocol: str
    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]
    notes: tuple[str, ...] = ()
    states: dict[ScoreState, int] | None = None  # score state -> responses in it, summed over the table's cells

    def __post_init__(self) -> None:
        for label, cells in self.rows:
            if len(cells) != len(self.columns) - 1:
                raise ValueError(f"row {label!r} has {len(cells)} cells for {len(self.columns) - 1} data columns")

    def cell(self, row: str, column: str) -> Cell:
        """The cell at (row label, column header); an unknown one lists the known ones."""
        if column not in self.columns[1:]:
            raise KeyError(unknown_name_message("column", column, list(self.columns[1:])))
        for label, cells in self.rows:
            if label == row:
                return cells[self.columns.index(column) - 1]
        raise KeyError(unknown_name_message("row", row, [label for label, _ in self.rows]))

    def row_labels(self) -> list[str]:
        """The labels of the data rows, in order."""
        return [label for label, _ in self.rows]


@dataclass(frozen=True)
class PaperTableSpec:
    """A table a protocol reproduces: its key as the paper numbers it ('2' for Table 2), what it shows, the builder
    ('module:function' or a callable) and the settings it accepts (name -> what it does), the first value of each
    being the default."""

    key: str
    title: str
    build: Callable[..., PaperTable] | str
    settings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def builder(self) -> Callable[..., PaperTable]:
        """The function that builds the table (its 'module:function' name imported now)."""
        if callable(self.build):
            return self.build
        module, _, name = self.build.partition(":")
        return getattr(importlib.import_module(module), name)

    def resolve_settings(self, given: Mapping[str, str]) -> dict[str, str]:
        """Every setting of this table: the given values (checked against the allowed ones), defaults for the rest."""
        unknown = [k for k in given if k not in self.settings]
        if unknown:
            raise KeyError(unknown_name_message("setting", unknown[0], list(self.settings)))
        chosen = {}
        for name, allowed in self.settings.items():
            value = given.get(name, allowed[0])
            if value not in allowed:
                raise ValueError(f"setting {name}={value!r} is not one of {', '.join(allowed)}")
            chosen[name] = value
        return chosen


def table_spec(specs: Sequence[PaperTableSpec], key: str | None, protocol: str) -> PaperTableSpec:
    """The spec called `key` among a protocol's tables (its first when None); an unknown key lists the known ones."""
    if not specs:
        raise KeyError(f"protocol {protocol!r} declares no paper table")
    if key is None:
        return specs[0]
    for spec in specs:
        if spec.key == key:
            return spec
    raise KeyError(unknown_name_message(f"table of {protocol!r}", key, [s.key for s in specs]))


def build_table(spec: PaperTableSpec, engine: Any, run_ids: Sequence[int], judge: str,
                settings: Mapping[str, str] | None = None) -> PaperTable:
    """Build a declared table for these runs, this judge and these settings (defaults for the rest)."""
    return spec.builder()(engine, list(run_ids), judge, spec.resolve_settings(settings or {}))


def _header_cell(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell.text()


STATES_LABEL = "States behind the table (summed over its cells)"
STATES_ROW = "states behind the table"


def states_note(table: PaperTable) -> str:
    """'States behind the table (summed over its cells): 40 scored · 2 not applicable · ...', or '' without states."""
    if table.states is None:
        return ""
    from core.metrics import state_text

    return f"{STATES_LABEL}: {state_text(table.states).removeprefix('n = ')}."


def all_notes(table: PaperTable) -> tuple[str, ...]:
    """The table's notes, then its states line when it carries state counts."""
    return table.notes + ((states_note(table),) if table.states is not None else ())


def to_markdown(table: PaperTable) -> str:
    """The table as GitHub Markdown, its title above and its notes (and states line) below."""
    lines = [f"**{table.title}**", "", "| " + " | ".join(table.columns) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(table.columns) - 1)) + "|"]
    lines += ["| " + " | ".join([label, *(_header_cell(c).replace("|", "\\|") for c in cells)]) + " |"
              for label, cells in table.rows]
    notes = all_notes(table)
    return "\n".join(lines + ([""] + [f"- {note}" for note in notes] if notes else [])) + "\n"


def to_csv(table: PaperTable) -> str:
    """The table in long form: one line per cell with row, column, value, low, high, n, state (values on the paper's
    scale), so a spreadsheet keeps every interval and n; then one line per score state behind the table."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["table", "row", "column", "value", "low", "high", "n", "state"])
    for label, cells in table.rows:
        for column, cell in zip(table.columns[1:], cells, strict=True):
            if isinstance(cell, str):
                writer.writerow([table.key, label, column, cell, "", "", "", "label"])
            else:
                writer.writerow([table.key, label, column, cell.number(cell.value), cell.number(cell.low),
                                 cell.number(cell.high), cell.n, cell.state or ("scored" if cell.value is not None
                                                                                else "no value")])
    for state, count in (table.states or {}).items():
        writer.writerow([table.key, STATES_ROW, state, count, "", "", count, state])
    return out.getvalue()


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """`text` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_cell(cell: Cell) -> str:
    if isinstance(cell, str):
        return latex_escape(cell)
    if cell.value is None:
        return "--"
    interval = (rf" {{\scriptsize [{cell.number(cell.low)}, {cell.number(cell.high)}]}}"
                if cell.low is not None else "")
    return f"{cell.number(cell.value)}{interval}"


def to_latex(table: PaperTable) -> str:
    """The table as a LaTeX tabular (booktabs), intervals in small type, n per row in the caption's notes."""
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(table.columns) - 1) + "}",
             r"\toprule", " & ".join(latex_escape(c) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join([latex_escape(label), *(_latex_cell(c) for c in cells)]) + r" \\"
              for label, cells in table.rows]
    notes = " ".join(latex_escape(note) for note in all_notes(table))
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(table.title)}. {notes}}}",
              r"\end{table}"]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[PaperTable], str]] = {"markdown": to_markdown, "csv": to_csv, "latex": to_latex}


def render(table: PaperTable, fmt: str) -> str:
    """The table in `fmt` (markdown, csv or latex); an unknown format lists the known ones."""
    if fmt not in RENDERERS:
        raise KeyError(unknown_name_message("format", fmt, list(RENDERERS)))
    return RENDERERS[fmt](table)


def to_rows(table: PaperTable) -> list[dict[str, str]]:
    """The table as records for a page's dataframe: one per row, each cell as its text (value [CI] (n = N))."""
    return [{table.columns[0]: label, **{c: _header_cell(cell) for c, cell in zip(table.columns[1:], cells,
                                                                                 strict=True)}}
            for label, cells in table.rows]
