"""No lost updates on accounts, on the active backend: every edit carries the version it read; a stale save is refused
("changed by X at T: reload") and writes nothing; two admins saving one account at once: one wins, one is refused;
the audit log holds only what each admin changed."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from core.review import auth
from core.review.auth import AccountChanged, account_changes, create_user, get_user, update_user
from core.services.accounts import change_account
from tests.workspace_factories import principal, seeded_db

ROOT = replace(principal("admin"), username="root")


@pytest.fixture
def seeded(tmp_path):
    s = seeded_db(tmp_path)
    create_user(s.engine, "root", "admin", password="root-pass-12")
    return s


STALE = [
    pytest.param({"role": "viewer"}, {"email": "a@new.example"}, id="demoted-then-email-edit"),
    pytest.param({"active": False}, {"email": "a@new.example"}, id="disabled-then-email-edit"),
    pytest.param({"email": "x@example.com"}, {"domains": ["Energy", "Medical"]}, id="email-then-domains-edit"),
    pytest.param({"password": "changed-pass-1"}, {"role": "analyst"}, id="password-then-role-edit"),
]


@pytest.mark.parametrize(("elsewhere", "edit"), STALE)
def test_a_stale_edit_is_refused_and_writes_nothing(seeded, elsewhere, edit):
    read = get_user(seeded.engine, "alice")
    change_account(seeded.engine, ROOT, "alice", **elsewhere)
    after_root = get_user(seeded.engine, "alice")
    with pytest.raises(AccountChanged, match=r"^alice was changed by root at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC .*: reload$"):
        change_account(seeded.engine, principal("admin"), "alice", version=read.version, **edit)
    now = get_user(seeded.engine, "alice")
    assert (now.version, now.role, now.active, now.email, now.domains, now.password_hash) == (
        after_root.version, after_root.role, after_root.active, after_root.email, after_root.domains,
        after_root.password_hash)
    assert [c.actor for c in account_changes(seeded.engine, "alice") if c.field != "created"] == ["root"]


def test_an_edit_at_the_current_version_writes_and_audits_only_its_fields(seeded):
    read = get_user(seeded.engine, "alice")
    saved = change_account(seeded.engine, principal("admin"), "alice", version=read.version, email="a@new.example",
                           role=read.role, domains=list(read.domains))
    assert (saved.version, saved.changed_by, saved.email, saved.role) == (read.version + 1, "admin", "a@new.example",
                                                                          read.role)
    assert [(c.actor, c.field) for c in account_changes(seeded.engine, "alice") if c.field != "created"] == [
        ("admin", "email")]


RACES = [
    pytest.param({"email": "a@one.example"}, {"role": "viewer"}, id="email-vs-demote"),
    pytest.param({"active": False}, {"domains": ["Medical"]}, id="disable-vs-domains"),
]


@pytest.mark.parametrize(("first", "second"), RACES)
def test_two_admins_saving_at_once_one_wins(seeded, first, second):
    version = get_user(seeded.engine, "alice").version
    barrier = threading.Barrier(2)

    def save(admin, edit) -> str:
        barrier.wait()
        try:
            change_account(seeded.engine, admin, "alice", version=version, **edit)
        except AccountChanged:
            return "refused"
        return "saved"

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda args: save(*args), [(principal("admin"), first), (ROOT, second)]))
    assert sorted(outcomes) == ["refused", "saved"]
    winner, edit = ("admin", first) if outcomes[0] == "saved" else ("root", second)
    alice = get_user(seeded.engine, "alice")
    assert alice.version == version + 1 and alice.changed_by == winner
    assert all(getattr(alice, field) == value for field, value in edit.items())
    assert [(c.actor, c.field) for c in account_changes(seeded.engine, "alice") if c.field != "created"] == [
        (winner, field) for field in edit]


def test_the_cli_path_without_a_version_still_refuses_to_overwrite_a_concurrent_edit(seeded, monkeypatch):
    """update_user conditions its UPDATE on the version it read itself: an edit landing in between is not lost."""
    original = auth._account_changes

    def slow_changes(*args):
        monkeypatch.setattr(auth, "_account_changes", original)
        change_account(seeded.engine, ROOT, "alice", role="viewer")  # lands after the read, before the write
        return original(*args)

    monkeypatch.setattr(auth, "_account_changes", slow_changes)
    with pytest.raises(AccountChanged, match="changed by root"):
        update_user(seeded.engine, "alice", email="cli@example.com", actor="cli")
    alice = get_user(seeded.engine, "alice")
    assert alice.role == "viewer" and alice.email != "cli@example.com"
