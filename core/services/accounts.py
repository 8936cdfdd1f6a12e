"""Authorised account writes (the Users page): an admin creates an account or changes one; each re-checks the
admin's role once, and a change is saved only if the account is still at the version the admin's form read."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from core.ingest.sets import check_domains
from core.review.auth import Principal, authorize, create_user, get_user, update_user
from core.store.models import User


def create_account(
    engine: Engine,
    principal: Principal | None,
    username: str,
    role: str,
    password: str | None,
    domains: list[str] | tuple[str, ...] = (),
    email: str | None = None,
) -> User:
    """An admin creates an account (re-checked: manage_users); `password=None` makes an SSO-only account."""
    admin = authorize(engine, principal, "manage_users")
    _check_new_domains(engine, domains, ())
    return create_user(engine, (username or "").strip(), role, password, domains, email or None, actor=admin.username)


def change_account(
    engine: Engine,
    principal: Principal | None,
    username: str,
    *,
    role: str | None = None,
    domains: list[str] | None = None,
    active: bool | None = None,
    password: str | None = None,
    email: str | None = None,
    version: int | None = None,
) -> User:
    """An admin changes an account (re-checked: manage_users): only the given fields that differ change, every change
    is audited; with `version` (the one the admin's form read) a stale save is refused (AccountChanged); nobody takes
    away their own admin rights (so the acting admin, and with them the last active admin, stays an active admin)."""
    admin = authorize(engine, principal, "manage_users")
    if username == admin.username and ((role is not None and role != admin.role) or active is False):
        if _active_admins(engine) <= 1:
            raise ValueError("you are the last active admin: make another account admin before you remove your own "
                             "admin rights")
        raise ValueError("you cannot remove your own admin rights; another admin can")
    if domains is not None:
        target = get_user(engine, username)
        _check_new_domains(engine, domains, target.domains if target else ())
    return update_user(engine, username, role=role, domains=domains, active=active, password=password or None,
                       email=email, actor=admin.username, version=version)


def _check_new_domains(engine: Engine, domains, current) -> None:
    """Domains given to an account must exist (a typo is an error); domains it already has are kept as they are."""
    check_domains(engine, set(domains) - set(current or ()))


def _active_admins(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(User)
                                .where(User.role == "admin", col(User.active))).one())
