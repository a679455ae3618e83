"""The store kits' assertions are rewritten by pytest (their messages say what failed)."""

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance", "deckhand.testing.tool_conformance")


def pytest_configure(config: pytest.Config) -> None:
    # SK 1.45's Qdrant connector calls AsyncQdrantClient.search, which qdrant-client 1.15 marks deprecated
    # (and 1.16 removed: the qdrant extra pins <1.16). Known and handled; one line per search is noise.
    config.addinivalue_line("filterwarnings", "ignore:`search` method is deprecated:DeprecationWarning")
