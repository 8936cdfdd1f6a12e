"""Misleading evidence (RAG-Stress): how often evidence with one edited assertion overrides an answer a model knew,
by source-priority policy and position of the edited sentence; MR against clean accuracy; the paired audit of two
checkpoints; and a drill-down to the edited evidence with the edit highlighted."""

from ui.auth import require_page
from ui.misleading_evidence_view import render

require_page(__file__)
render()
