"""Authorised operations that pages and commands share: each re-checks the caller's role server-side once
(core.review.auth.authorize, which reads the account's current role), then calls the layer below to do the work."""
