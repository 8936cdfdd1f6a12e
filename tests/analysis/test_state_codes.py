"""state_codes (one factorize, then each distinct value's position in STATES) and key_state_codes (missing stored
states counted unjudged) give the codes of the categorical lookup they replace (each value's position in STATES, -1 for
anything else), whatever the column's dtype."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis.readmodel.decision_scores import key_state_codes, key_states
from core.analysis.readmodel.states import state_codes
from core.metrics import STATES

VALUES = {
    "every state": list(STATES),
    "missing values": ["scored", None, "skipped", None, "judge_error"],
    "a state the declarations do not know": ["scored", "later", "not_applicable"],
    "no row": [],
    "one state throughout": ["unjudged"] * 5,
}
DTYPES = {"object": object, "str": "str"}


def _reference(states: pd.Series) -> np.ndarray:
    """What the categorical lookup state_codes was gives, value by value: the position in STATES, else -1."""
    return np.array([STATES.index(s) if isinstance(s, str) and s in STATES else -1 for s in states], dtype=np.intp)


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("values", list(VALUES.values()), ids=list(VALUES))
def test_state_codes_match_the_categorical_lookup(values: list, dtype) -> None:
    states = pd.Series(values, dtype=dtype)
    np.testing.assert_array_equal(state_codes(states), _reference(states))


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("values", list(VALUES.values()), ids=list(VALUES))
def test_key_state_codes_match_the_states_read_as_strings(values: list, dtype) -> None:
    frame = pd.DataFrame({"faithfulness": np.zeros(len(values)), "faithfulness_state": pd.Series(values, dtype=dtype)})
    np.testing.assert_array_equal(key_state_codes(frame, "faithfulness"), _reference(key_states(frame, "faithfulness")))


STATUS_FRAMES = {
    "stored statuses, one of no state": ("faithfulness", pd.DataFrame({
        "faithfulness": [1.0, np.nan, 0.5, np.nan, np.nan, 0.0],
        "faithfulness_status": ["ok", "error", "ok", None, "skipped", "unparseable"]})),
    "IAS from the constraint counts": ("strict_ias", pd.DataFrame({
        "strict_ias": [1.0, np.nan, np.nan, np.nan, 0.0], "n_constraint_errors": [0, 1, 0, 0, 0],
        "n_constraint_unjudged": [0, 0, 1, 0, 0]})),
    "IAS on the protocol's rows of several": ("strict_ias", pd.DataFrame({
        "strict_ias": [1.0, np.nan, 0.3, np.nan], "n_constraint_errors": [0, 1, 0, 0],
        "n_constraint_unjudged": [0, 0, 0, 1], "protocol": ["enterprise_rag", "enterprise_rag", "other", "enterprise_rag"]})),
    "IAS every row the protocol's": ("strict_ias", pd.DataFrame({
        "strict_ias": [np.nan, 0.0, np.nan], "n_constraint_errors": [0, 0, 2], "n_constraint_unjudged": [1, 0, 0],
        "protocol": ["enterprise_rag"] * 3})),
    "a value without stored statuses": ("faithfulness", pd.DataFrame({"faithfulness": [1.0, np.nan, 0.2]})),
    "no row": ("faithfulness", pd.DataFrame({"faithfulness": pd.Series([], dtype=float),
                                            "faithfulness_status": pd.Series([], dtype=object)})),
}


@pytest.mark.parametrize("key, frame", list(STATUS_FRAMES.values()), ids=list(STATUS_FRAMES))
def test_key_state_codes_from_statuses_match_the_states_read_as_strings(key: str, frame: pd.DataFrame) -> None:
    """Without a stored `<key>_state` column the codes come from the statuses, each distinct one mapped once: the
    codes of the states key_states reads, row by row (a status of no state and a missing one unjudged)."""
    np.testing.assert_array_equal(key_state_codes(frame, key), _reference(key_states(frame, key)))
