"""A line error always names its field readably, even when the field name is blank or has odd characters."""

import pytest

from core.ingest.io import LineError


@pytest.mark.parametrize(("field", "shown"), [
    ("query", "line 3: query: bad"),
    ("", "line 3: bad"),
    (" ", 'line 3: " ": bad'),
    ("a\nb", 'line 3: "a\\nb": bad'),
    (" padded", 'line 3: " padded": bad'),
], ids=["plain", "no-field", "blank", "newline", "leading-space"])
def test_line_error_names_its_field(field, shown):
    assert str(LineError(3, field, "bad")) == shown
