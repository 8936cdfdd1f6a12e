"""Personal data out of production traces before anything is stored: emails, phone numbers and names, by pattern.

Patterns, not a model: a name is caught when a phrase introduces it ("my name is Ana Ruiz", "I'm Maria Keller") or a
title precedes it ("Dr. Chen"); a phone number is a run of 9 to 15 digits with separators that is not a date or a
time. Each replacement says what was there ([EMAIL], [PHONE], [NAME]) and is counted, so the import reports how much
it removed.

Identifiers (trace, span and document ids, the service and file names) are not blanked but pseudonymised: each email,
phone number or name in them becomes `email-<10 hex>` (`phone-...`, `name-...`), an HMAC-SHA256 of the value under
the key GAUNTLET_REDACTION_KEY (environment or secrets file; unset: a random key per import). The same value gives the
same pseudonym, so two traces citing one document, or a span and the document it retrieved, still point at each other,
and two different values never share one id.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections import Counter
from collections.abc import Callable

from core.config import get_secret

EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d\s().-]{7,}\d(?!\w)")
DATE_LIKE = re.compile(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$")
NAME_WORD = r"[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?"
INTRODUCED = re.compile(rf"(?P<lead>\b(?:[Mm]y name is|[Nn]ame:|I'm|I am|[Tt]his is|[Ss]igned,?)\s+)"
                        rf"(?P<name>{NAME_WORD}(?:\s+{NAME_WORD})?)")
TITLED = re.compile(rf"(?P<lead>\b(?:Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s+)(?P<name>{NAME_WORD}(?:\s+{NAME_WORD})?)")
NOT_NAMES = frozenset({"Here", "There", "Sorry", "Happy", "Not", "Looking", "Trying", "Going", "Unable", "Able",
                       "Interested", "New", "Just", "Still", "Also", "The", "A", "An", "Hello", "Hi", "Yes", "No"})
KINDS = ("email", "phone", "name")
TOKENS = {"email": "[EMAIL]", "phone": "[PHONE]", "name": "[NAME]"}
KEY_SECRET = "GAUNTLET_REDACTION_KEY"


def _phone(match: re.Match) -> bool:
    text = match.group(0).strip()
    digits = sum(c.isdigit() for c in text)
    return 9 <= digits <= 15 and not DATE_LIKE.match(text) and not re.fullmatch(r"\d+(?:\.\d+)?", text)


def _name(match: re.Match) -> bool:
    return match["name"].split()[0] not in NOT_NAMES


def _sub(pattern: re.Pattern, text: str, token: str | Callable[[str], str], keep: Callable[[re.Match], bool],
         lead: bool) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match) -> str:
        nonlocal count
        if not keep(match):
            return match.group(0)
        count += 1
        found = match["name"] if lead else match.group(0)
        return (match["lead"] if lead else "") + (token(found) if callable(token) else token)

    return pattern.sub(replace, text), count


def redaction_key() -> bytes:
    """The pseudonym key: GAUNTLET_REDACTION_KEY (environment or secrets file), else a fresh random one."""
    configured = get_secret(KEY_SECRET)
    return configured.encode() if configured else secrets.token_bytes(32)


class Redactor:
    """Replaces personal data in texts and counts what it replaced, per kind."""

    def __init__(self, key: bytes | None = None) -> None:
        self.counts: Counter[str] = Counter()
        self.key = redaction_key() if key is None else key

    def __call__(self, text: str) -> str:
        """`text` with emails, phone numbers and introduced or titled names replaced by [EMAIL], [PHONE], [NAME]."""
        return self._replaced(text, lambda kind: TOKENS[kind])

    def pseudonymous(self, ident: str) -> str:
        """An identifier with each email, phone number and name in it replaced by its stable pseudonym
        ('email-1a2b3c4d5e'): equal values get equal pseudonyms, so links between ids survive."""
        return self._replaced(ident, lambda kind: lambda value: self.pseudonym(kind, value))

    def pseudonym(self, kind: str, value: str) -> str:
        """'<kind>-<first 10 hex of HMAC-SHA256(key, value)>'."""
        return f"{kind}-{hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()[:10]}"

    def _replaced(self, text: str, token: Callable[[str], str | Callable[[str], str]]) -> str:
        text, n = _sub(EMAIL, text, token("email"), lambda m: True, False)
        self.counts["email"] += n
        text, n = _sub(PHONE, text, token("phone"), _phone, False)
        self.counts["phone"] += n
        for pattern in (INTRODUCED, TITLED):
            text, n = _sub(pattern, text, token("name"), _name, True)
            self.counts["name"] += n
        return text

    def summary(self) -> dict[str, int]:
        """Replacements per kind (every kind listed, zeros included)."""
        return {kind: self.counts[kind] for kind in KINDS}


def redaction_text(counts: dict[str, int]) -> str:
    """'redacted 1 email, 1 phone number, 1 name' (every kind shown, zeros included)."""
    return (f"redacted {counts.get('email', 0)} email(s), {counts.get('phone', 0)} phone number(s), "
            f"{counts.get('name', 0)} name(s)")
