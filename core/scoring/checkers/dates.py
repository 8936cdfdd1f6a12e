"""Finding the first date or year in a short text, as a sortable (year, month, day) tuple."""

from __future__ import annotations

import re

MONTHS = {
    name: index
    for index, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}
_MONTH = "(?P<{}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<{}>1[0-9]\d\d|20\d\d)"
_DATE = re.compile(
    "|".join(
        [
            rf"\b{_YEAR.format('iy')}[-/.](?P<im>\d{{1,2}})[-/.](?P<id>\d{{1,2}})\b",  # 2024-03-05
            rf"\b(?P<ed>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH.format('em')},?\s+{_YEAR.format('ey')}\b",  # 5 March 2024
            rf"\b{_MONTH.format('am')}\s+(?:(?P<ad>\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?{_YEAR.format('ay')}\b",  # March 5, 2024
            rf"\b{_YEAR.format('y')}\b",  # 2024
        ]
    ),
    re.IGNORECASE,
)


def _number(match: re.Match[str], name: str) -> int:
    value = match.group(name)
    return int(value) if value else 0


def _tuple(match: re.Match[str]) -> tuple[int, int, int]:
    if match.group("iy"):
        return int(match.group("iy")), _number(match, "im"), _number(match, "id")
    if match.group("ey"):
        return int(match.group("ey")), MONTHS[match.group("em").lower()], _number(match, "ed")
    if match.group("ay"):
        return int(match.group("ay")), MONTHS[match.group("am").lower()], _number(match, "ad")
    return int(match.group("y")), 0, 0


def first_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of the first date or year (1000-2099) in text; unknown parts are 0. None if none."""
    match = _DATE.search(text)
    return _tuple(match) if match else None
