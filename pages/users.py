"""Users: every account with its role and domains; add accounts; change one account's role, domains, email, status or
password (the form loads that account's values and saves only what was edited, refused when the account changed since
the form was opened); the audit log of account changes."""

import pandas as pd
import streamlit as st

from core.review.auth import ROLES, account_changes, generate_password, list_users
from core.services.accounts import change_account, create_account
from core.store.benchmark import domain_names
from ui.auth import guarded_write, require_page
from ui.confirm import confirm, show_confirmations
from ui.session import engine

FORM_FIELDS = ("role", "domains", "email", "active", "password")
principal = require_page(__file__)
st.title("Users")
show_confirmations()

users = list_users(engine())
st.dataframe(
    pd.DataFrame([{"username": u.username, "role": u.role, "domains": ", ".join(u.domains), "email": u.email or "",
                   "active": u.active, "password login": bool(u.password_hash), "created": u.created_at} for u in users]),
    hide_index=True,
)
domains = domain_names(engine())

add, edit = st.columns(2)
with add, st.form("add_user", clear_on_submit=True):
    st.markdown("##### Add an account")
    username = st.text_input("Username", key="new_username")
    role = st.selectbox("Role", ROLES, index=ROLES.index("expert"), key="new_role")
    new_domains = st.multiselect("Domains (experts)", domains, key="new_domains")
    email = st.text_input("Email (for single sign-on)", key="new_email")
    password = st.text_input("Password (empty: generate one)", type="password", key="new_password")
    if st.form_submit_button("Create account", type="primary"):
        chosen = password or generate_password()
        if guarded_write(lambda: create_account(engine(), principal, username, role, chosen, new_domains, email)):
            confirm(f"Created {username}." + ("" if password else f" Generated password: `{chosen}`"))
            st.rerun()  # the table above lists the new account

with edit:
    st.markdown("##### Change an account")
    target = st.selectbox("Account", [u.username for u in users], key="edit_username")
    current = next((u for u in users if u.username == target), None)
if current is not None:
    opened = st.session_state.get("edit_opened")
    if opened is None or opened["id"] != current.id:  # what the form was filled with, and the version it read
        opened = {"id": current.id, "version": current.version, "role": current.role, "domains": list(current.domains),
                  "email": current.email or "", "active": current.active}
        st.session_state["edit_opened"] = opened
    if current.version != opened["version"]:
        edit.warning(f"{current.username} was changed by {current.changed_by or 'someone'} since you opened this form; "
                     "saving it would be refused.", icon=":material/sync_problem:")
        if edit.button("Reload the account", key="edit_reload", icon=":material/refresh:"):
            for key in ["edit_opened", *(f"edit_{field}_{current.id}" for field in FORM_FIELDS)]:
                st.session_state.pop(key, None)
            st.rerun()
    with edit, st.form(f"edit_user_{current.id}"):
        st.caption(f"Editing {current.username}, as read at version {opened['version']}")
        values = {
            "role": st.selectbox("Role", ROLES, index=ROLES.index(opened["role"]), key=f"edit_role_{current.id}"),
            "domains": st.multiselect("Domains", sorted(set(domains) | set(opened["domains"])),
                                      default=opened["domains"], key=f"edit_domains_{current.id}"),
            "email": st.text_input("Email (for single sign-on)", value=opened["email"], key=f"edit_email_{current.id}"),
            "active": st.checkbox("Active", value=opened["active"], key=f"edit_active_{current.id}"),
        }
        new_password = st.text_input("New password (empty: unchanged)", type="password",
                                     key=f"edit_password_{current.id}")
        st.caption("Only the fields you change are saved, and only if nobody changed the account since you opened it. "
                   "A role or password change signs the account out everywhere.")
        if st.form_submit_button("Save changes"):
            edited = {field: value for field, value in values.items() if value != opened[field]}
            edited |= {"password": new_password} if new_password else {}
            if not edited:
                st.info("Nothing to save: no field was changed.")
            elif guarded_write(lambda: change_account(engine(), principal, current.username, version=opened["version"],
                                                      **edited)):
                st.session_state.pop("edit_opened", None)
                confirm(f"Saved {current.username}: {', '.join(edited)} changed.")
                st.rerun()

st.subheader("Account changes")
changes = account_changes(engine())
if changes:
    st.dataframe(pd.DataFrame([{"when": c.at, "by": c.actor, "account": c.username, "field": c.field,
                                "change": f"{c.before or '—'} → {c.after or '—'}"} for c in changes]),
                 hide_index=True, width="stretch")
    st.caption(f"The latest {len(changes)} changes, newest first; passwords are logged without any value.")
else:
    st.info("No account changes recorded yet.")
