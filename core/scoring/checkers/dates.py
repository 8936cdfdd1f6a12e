"""Finding the first date or year in a short text, as a sortable (year, month, day) tuple.

English forms, ISO dates, Chinese / Japanese 2024年3月5日 (full-width digits too, 日 or 号) and Japanese era years
(令和6年, 平成元年)."""

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
ERAS = {"令和": 2018, "平成": 1988, "昭和": 1925}
_CJK_DAY = r"(?:\s*(?P<{m}>\d{{1,2}})\s*月(?:\s*(?P<{d}>\d{{1,2}})\s*[日号])?)?"
_FULL_WIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
_DATE = re.compile(
    "|".join(
        [
            rf"(?<!\d){_YEAR.format('cy')}\s*年" + _CJK_DAY.format(m="cm", d="cd"),  # 2024年3月5日
            rf"(?P<era>{'|'.join(ERAS)})\s*(?P<ny>\d{{1,2}}|元)\s*年" + _CJK_DAY.format(m="nm", d="nd"),  # 令和6年3月

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
    if match.group("cy"):
        return int(match.group("cy")), _number(match, "cm"), _number(match, "cd")
    if match.group("era"):
        year = 1 if match.group("ny") == "元" else int(match.group("ny"))
        return ERAS[match.group("era")] + year, _number(match, "nm"), _number(match, "nd")
    if match.group("iy"):
        return int(match.group("iy")), _number(match, "im"), _number(match, "id")
    if match.group("ey"):
        return int(match.group("ey")), MONTHS[match.group("em").lower()], _number(match, "ed")
    if match.group("ay"):
        return int(match.group("ay")), MONTHS[match.group("am").lower()], _number(match, "ad")
    return int(match.group("y")), 0, 0


def first_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of the first date or year (1000-2099) in text; unknown parts are 0. None if none."""
    match = _DATE.search(text.translate(_FULL_WIDTH_DIGITS))
    return _tuple(match) if match else None
