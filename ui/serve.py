"""Serve the app: `python -m ui.serve [streamlit run options]` (what `make app` runs).

app.py declares every page with st.navigation, but the page scripts live in `pages/`. Until some session has called
st.navigation, Streamlit would treat `pages/` as a legacy multipage folder: a deep link as the first request after
start would run the page script without app.py and show the folder's automatic page list beside ours. Telling
Streamlit up front that the app does not use the pages folder closes that gap.
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli as streamlit_cli

APP = Path(__file__).resolve().parents[1] / "app.py"


def main(argv: list[str] | None = None) -> None:
    """Run `streamlit run app.py` with the given options, pages declared by st.navigation only."""
    PagesManager.uses_pages_directory = False
    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    streamlit_cli.main()


if __name__ == "__main__":
    main()
