"""Steps the protocol packages of issue 44 each check the same way: a docs page's commands run as written in a
scratch folder holding the files they name, and the generic Protocol views page rendering a protocol's declared
view."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from tests.docs_blocks import bash_commands


def run_docs_commands(doc: str, files: dict[str, Path], folder: Path, monkeypatch: pytest.MonkeyPatch,
                      first: int | None = None) -> list[str]:
    """Run the first `first` commands under "## Run it" of docs/<doc> in `folder`, where `files` (relative path ->
    source) are copied first; every command must exit 0. The commands."""
    for relative, source in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(source.read_bytes())
    monkeypatch.chdir(folder)
    commands = bash_commands(Path(REPO_ROOT, "docs", doc), "Run it")
    for command in commands[:first]:
        assert command.startswith("gauntlet ")
        result = CliRunner().invoke(app, command.split()[1:])
        assert result.exit_code == 0, (command, result.output)
    return commands


def assert_page_renders(url: str, monkeypatch: pytest.MonkeyPatch, protocol: str, title: str) -> None:
    """The generic Protocol views page, signed in as an analyst, shows the protocol's one view: its subheader, one
    table and one figure, without an exception."""
    from streamlit.testing.v1 import AppTest

    from tests.pages.signin import sign_in

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sign_in(AppTest.from_file(str(Path(REPO_ROOT, "pages", "protocol_views.py")), default_timeout=90),
                 "analyst").run()
    at.selectbox(key="pv_protocol").set_value(protocol).run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == [title]
    assert len(at.dataframe) == 1 and len(at.get("plotly_chart")) == 1
