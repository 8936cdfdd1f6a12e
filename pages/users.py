"""Users: every account with its role and domains; add accounts, change roles, domains, email, password or status."""

import pandas as pd
import streamlit as st

from core.review.auth import ROLES, change_account, create_account, generate_password, list_users
from core.store.benchmark import domain_names
from ui.auth import guarded_write, require_page
from ui.session import engine

principal = require_page(__file__)
st.title("Users")

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
            st.success(f"Created {username}." + ("" if password else f" Generated password: `{chosen}`"))

with edit, st.form("edit_user"):
    st.markdown("##### Change an account")
    target = st.selectbox("Account", [u.username for u in users], key="edit_username")
    current = next((u for u in users if u.username == target), None)
    new_role = st.selectbox("Role", ROLES, index=ROLES.index(current.role) if current else 0, key="edit_role")
    set_domains = st.multiselect("Domains", sorted(set(domains) | set(current.domains if current else [])),
                                 default=current.domains if current else [], key="edit_domains")
    active = st.checkbox("Active", value=current.active if current else True, key="edit_active")
    new_password = st.text_input("New password (empty: unchanged)", type="password", key="edit_password")
    saved = st.form_submit_button("Save changes") and guarded_write(lambda: change_account(
        engine(), principal, target, role=new_role, domains=set_domains, active=active, password=new_password))
    if saved:
        st.success(f"Saved {target}.")
