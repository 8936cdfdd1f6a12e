"""Stress tests (RAGStress): MCQ accuracy when the knowledge base is corrupted, by corruption type and severity."""

from ui.auth import require_page
from ui.stress_tests_view import render

require_page(__file__)
render()
