"""Test helpers deckhand ships for plugin authors: conformance kits, and ``servers`` (starts the
Redis and PostgreSQL test servers, whose launchers live in those plugins: ``deckhand_redis.server``,
``deckhand_postgres.server``).

Importing this package imports nothing heavy; each module is loaded on its own
(``deckhand.testing.store_conformance``, ``deckhand.testing.tool_conformance``,
``deckhand.testing.memory_conformance``, ...). Under pytest the kits' modules are registered
for assertion rewriting here, before they are imported, so a failing check shows the
values it compared without any conftest line.
"""

import sys

#: The kits whose plain ``assert`` statements pytest should explain.
KIT_MODULES = (
    "deckhand.testing.store_conformance",
    "deckhand.testing.tool_conformance",
    "deckhand.testing.memory_conformance",
)

_pytest = sys.modules.get("pytest")  # None when absent (or blocked): the package never imports pytest itself
if _pytest is not None:  # only under pytest
    _pytest.register_assert_rewrite(*[m for m in KIT_MODULES if m not in sys.modules])
