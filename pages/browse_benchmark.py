"""Browse benchmark: composition tables, filters (set, domain, mode, status, text), the instance list (tick a row to
open it) and one instance in full with its sets and its verification history and notes. The open instance is in the
URL (?instance=<id>), so a link opens it."""

from ui.auth import require_page
from ui.browse_view import render

require_page(__file__)
render()
