"""The store kits' assertions are rewritten by pytest (their messages say what failed)."""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance", "deckhand.testing.tool_conformance")
