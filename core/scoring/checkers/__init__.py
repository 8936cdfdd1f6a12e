"""Rule checkers in one registry: IFEval-compatible instructions (ifeval.py) here, and the checkers each protocol
declares in its package (`Protocol.checkers`, 'module' names imported now: EnterpriseRAG's `enterprise:` namespace)."""

import importlib

from core.protocols import PROTOCOLS
from core.scoring.checkers import ifeval  # noqa: F401  (registers the checkers)
from core.scoring.checkers.base import CHECKERS, Checker, build_checker, kwargs_errors, kwargs_warnings


def load_declared() -> None:
    """Import the checker modules every registered protocol declares (each registers its checkers once)."""
    for _, protocol in PROTOCOLS.items():
        for module in protocol.checkers:
            importlib.import_module(module)


load_declared()

__all__ = ["CHECKERS", "Checker", "build_checker", "kwargs_errors", "kwargs_warnings", "load_declared"]
