import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")
