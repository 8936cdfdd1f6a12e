"""Rule checkers: IFEval-compatible instructions plus enterprise RAG checks, in one registry."""

from core.scoring.checkers import enterprise, ifeval  # noqa: F401  (registers the checkers)
from core.scoring.checkers.base import CHECKERS, Checker, bind_ids, build_checker, kwargs_errors, kwargs_warnings

bind_ids()

__all__ = ["CHECKERS", "Checker", "build_checker", "kwargs_errors", "kwargs_warnings"]
