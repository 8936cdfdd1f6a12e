"""Sign in: username and password, or single sign-on when configured."""

from ui.auth import render_login

render_login()
