"""Hypothesis strategies of new messages as a store must keep them, text for text: any
printable or control character but NUL and lone surrogates, metadata and items of any JSON."""

from __future__ import annotations

from hypothesis import strategies as st

from tether.core.message import NewMessage, Role

TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
OBJECTS = st.dictionaries(TEXT, VALUES, max_size=4)
NEW_MESSAGE = st.builds(NewMessage, st.sampled_from(list(Role)), TEXT, OBJECTS, st.none() | OBJECTS)
