"""The Users page (AppTest) and the account rules behind it: the edit form loads the chosen account, saves only what
was edited, never removes the last admin, and every change lands in the audit log shown on the page."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.review.auth import account_changes, create_user, get_user
from core.services.accounts import change_account
from tests.workspace_factories import principal, seeded_db

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "users.py")


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def open_as_admin(account: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.run()
    if account:
        at.selectbox(key="edit_username").set_value(account).run()
    assert not at.exception, at.exception
    return at


def form_key(seeded, name: str, account: str) -> str:
    """The key of a field of the edit form, which is per account (so each account's values load)."""
    return f"edit_{name}_{get_user(seeded.engine, account).id}"


def save(at: AppTest) -> AppTest:
    next(b for b in at.button if b.label == "Save changes").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("account", ["alice", "carol", "ana", "vic", "admin"])
def test_the_form_loads_the_chosen_account(seeded, account):
    at = open_as_admin(account)
    user = get_user(seeded.engine, account)
    assert at.selectbox(key=form_key(seeded, "role", account)).value == user.role
    assert at.multiselect(key=form_key(seeded, "domains", account)).value == list(user.domains)
    assert at.text_input(key=form_key(seeded, "email", account)).value == user.email
    assert at.checkbox(key=form_key(seeded, "active", account)).value is user.active


EDITS = [
    pytest.param("password", "alice-new-pass-1", {"role": "expert", "domains": ["Energy"]}, ["password"],
                 id="password-only-keeps-role-and-domains"),
    pytest.param("role", "viewer", {"role": "viewer", "domains": ["Energy"]}, ["role"], id="role-only"),
    pytest.param("domains", ["Energy", "Medical"], {"role": "expert", "domains": ["Energy", "Medical"]}, ["domains"],
                 id="domains-only"),
    pytest.param("active", False, {"role": "expert", "active": False}, ["active"], id="disable"),
]


@pytest.mark.parametrize(("field", "value", "expected", "audited"), EDITS)
def test_only_the_edited_field_changes_and_is_audited(seeded, field, value, expected, audited):
    at = open_as_admin("alice")
    widget = {"password": at.text_input, "role": at.selectbox, "domains": at.multiselect,
              "active": at.checkbox}[field](key=form_key(seeded, field, "alice"))
    widget.set_value(value)
    save(at)
    alice = get_user(seeded.engine, "alice")
    assert {k: getattr(alice, k) for k in expected} == expected
    changes = [c for c in account_changes(seeded.engine, "alice") if c.field != "created"]
    assert [(c.field, c.actor) for c in changes] == [(f, "admin") for f in audited]
    assert [s.value for s in at.success] == [f"Saved alice: {field} changed."]
    audit = at.dataframe[-1].value
    assert list(audit.columns) == ["when", "by", "account", "field", "change"]
    assert audit.iloc[0]["account"] == "alice" and audit.iloc[0]["field"] == field


def test_saving_an_unchanged_form_writes_nothing(seeded):
    at = save(open_as_admin("bob"))
    assert next(i.value for i in at.info) == "Nothing to save: no field was changed."
    assert [c.field for c in account_changes(seeded.engine, "bob")] == ["created"]


def test_the_last_admin_cannot_remove_their_own_rights(seeded):
    at = open_as_admin("admin")
    at.selectbox(key=form_key(seeded, "role", "admin")).set_value("expert")
    save(at)
    assert any("last active admin" in e.value for e in at.error), [e.value for e in at.error]
    assert get_user(seeded.engine, "admin").role == "admin"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"role": "viewer"}, "you are the last active admin", id="demote-last"),
        pytest.param({"active": False}, "you are the last active admin", id="disable-last"),
    ],
)
def test_last_admin_rule(seeded, change, message):
    with pytest.raises(ValueError, match=message):
        change_account(seeded.engine, principal("admin"), "admin", **change)
    create_user(seeded.engine, "root", "admin", password="root-pass-12")
    with pytest.raises(ValueError, match="cannot remove your own admin rights; another admin can"):
        change_account(seeded.engine, principal("admin"), "admin", **change)
    root = replace(principal("admin"), username="root")
    change_account(seeded.engine, root, "admin", **change)  # another admin can
    assert account_changes(seeded.engine, "admin")[0].actor == "root"


def test_an_unknown_domain_is_refused(seeded):
    with pytest.raises(ValueError, match="unknown domain"):
        change_account(seeded.engine, principal("admin"), "alice", domains=["Enregy"])
    assert get_user(seeded.engine, "alice").domains == ["Energy"]


# --------------------------------------------------------------------------- no lost updates (versioned edits)


ELSEWHERE = [
    pytest.param({"role": "viewer"}, {"role": "viewer"}, id="demoted-elsewhere"),
    pytest.param({"active": False}, {"active": False}, id="disabled-elsewhere"),
    pytest.param({"domains": ["Medical"]}, {"domains": ["Medical"]}, id="domains-changed-elsewhere"),
]


@pytest.mark.parametrize(("elsewhere", "kept"), ELSEWHERE)
def test_a_stale_form_is_refused_and_nothing_is_restored(seeded, elsewhere, kept):
    at = open_as_admin("alice")
    create_user(seeded.engine, "root", "admin", password="root-pass-12")
    change_account(seeded.engine, replace(principal("admin"), username="root"), "alice", **elsewhere)
    at.text_input(key=form_key(seeded, "email", "alice")).set_value("alice@new.example")
    save(at)
    assert any(re.search(r"alice was changed by root at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC .*: reload", e.value)
               for e in at.error), [e.value for e in at.error]
    alice = get_user(seeded.engine, "alice")
    assert {k: getattr(alice, k) for k in kept} == kept and alice.email != "alice@new.example"
    assert all(c.actor != "admin" for c in account_changes(seeded.engine, "alice"))

    next(b for b in at.button if b.label == "Reload the account").click().run()
    at.text_input(key=form_key(seeded, "email", "alice")).set_value("alice@new.example")
    save(at)
    alice = get_user(seeded.engine, "alice")
    assert {k: getattr(alice, k) for k in kept} == kept and alice.email == "alice@new.example"
    assert [(c.actor, c.field) for c in account_changes(seeded.engine, "alice") if c.actor == "admin"] == \
        [("admin", "email")]
