"""The redaction pass: emails, phone numbers and introduced or titled names replaced and counted; numbers that are
not phone numbers (dates, scores, timestamps, versions) left alone."""

from __future__ import annotations

import pytest

from core.ingest.importers.redaction import Redactor, redaction_text


@pytest.mark.parametrize(
    ("text", "expected", "counts"),
    [
        pytest.param("Hi, I'm Maria Keller (maria.keller@example.org). Can I return boots?",
                     "Hi, I'm [NAME] ([EMAIL]). Can I return boots?", {"email": 1, "phone": 0, "name": 1},
                     id="introduced-name-and-email"),
        pytest.param("My number is +44 20 7946 0958.", "My number is [PHONE].", {"email": 0, "phone": 1, "name": 0},
                     id="international-phone"),
        pytest.param("Call (555) 123-4567 or 555.123.4567", "Call [PHONE] or [PHONE]",
                     {"email": 0, "phone": 2, "name": 0}, id="us-phones"),
        pytest.param("Dr. Chen said so. Signed, Bob Smith", "Dr. [NAME] said so. Signed, [NAME]",
                     {"email": 0, "phone": 0, "name": 2}, id="titled-and-signed-names"),
        pytest.param("On 2023-12-11 at 17:43:23.306838 the score was 0.8022561073303223 (v1.33.1, 1544712660000000000)",
                     "On 2023-12-11 at 17:43:23.306838 the score was 0.8022561073303223 (v1.33.1, 1544712660000000000)",
                     {"email": 0, "phone": 0, "name": 0}, id="dates-scores-versions-kept"),
        pytest.param("I am here. I'm Not sure. my name is ana", "I am here. I'm Not sure. my name is ana",
                     {"email": 0, "phone": 0, "name": 0}, id="no-capitalised-name-kept"),
    ],
)
def test_redaction_replaces_and_counts(text, expected, counts) -> None:
    redactor = Redactor()
    assert redactor(text) == expected
    assert redactor.summary() == counts


def test_counts_add_up_over_texts_and_read_as_a_sentence() -> None:
    redactor = Redactor()
    for text in ("a@b.io and c@d.io", "+1 202 555 0143", "I'm Ana Ruiz"):
        redactor(text)
    assert redaction_text(redactor.summary()) == "redacted 2 email(s), 1 phone number(s), 1 name(s)"
