"""Fixtures of the Weaviate plugin's tests: ``weaviate_url`` is ``$WEAVIATE_URL`` or a skip with the reason.

``pytest_plugins`` is only allowed in the root conftest, so the fixture is imported here.
"""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance", "deckhand.testing.tool_conformance")

from deckhand_weaviate.testing import weaviate_url  # noqa: E402, F401
