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
