"""A pytest kit that runs deckhand's tools end to end on one store: ingest, reuse, change, crash.

A store plugin subclasses :class:`ToolConformanceTests` and gives the ``database:`` block;
every ``test_*`` method then runs for both tool types that ingest a source
(``vectorstore`` and ``hierarchical_document``) on that store::

    import pytest
    from deckhand.config.models import DatabaseConfig
    from deckhand.testing.tool_conformance import ToolConformanceTests

    class TestMyStoreTools(ToolConformanceTests):
        provider = "mystore"

        @pytest.fixture
        def database(self, my_server_url: str) -> DatabaseConfig:
            return DatabaseConfig(provider="mystore", connection_string=my_server_url)

The tools are real: the default embedder (MiniLM, offline), the builtin loaders and
chunkers, six small markdown files. The embedding cache is off, so ``texts_embedded``
counts what the model really embedded. Each test gets its own ``index_name`` (a fresh
namespace on a shared server) and its own state directory (``DECKHAND_HOME``).

Which tests apply depends on the store's declared capabilities: every store must ingest,
search, re-initialise a tool without re-embedding, follow a modified and a deleted file
and force a re-ingest; a store declaring ``persistent`` must also serve a second process
without re-embedding, refuse an index built with another model until ``--force-ingest``
rebuilds it, and survive ``kill -9`` in the middle of an ingest (the previous index stays
searchable, the next run completes the work).

The kit is two mixins over a shared :class:`~deckhand.testing.tool_conformance.tool_fixtures.ToolKit`:
:class:`EveryStoreToolTests` and :class:`PersistentToolTests`; :class:`ToolConformanceTests`
is both.
"""

from __future__ import annotations

from deckhand.testing.tool_conformance.every_store import EveryStoreToolTests
from deckhand.testing.tool_conformance.persistent import PersistentToolTests
from deckhand.testing.tool_conformance.tool_fixtures import (
    PROCESS_TIMEOUT,
    REWRITTEN,
    TOOL_NAME,
    TOOL_TYPES,
    TOPICS,
    RenamedEmbedderPlugin,
    StoreView,
    ToolKit,
    names,
    rewrite,
    sha256_of,
    tool_config,
    write_corpus,
)

__all__ = [
    "PROCESS_TIMEOUT",
    "REWRITTEN",
    "TOOL_NAME",
    "TOOL_TYPES",
    "TOPICS",
    "EveryStoreToolTests",
    "PersistentToolTests",
    "RenamedEmbedderPlugin",
    "StoreView",
    "ToolConformanceTests",
    "ToolKit",
    "names",
    "rewrite",
    "sha256_of",
    "tool_config",
    "write_corpus",
]


class ToolConformanceTests(EveryStoreToolTests, PersistentToolTests):
    """The tool-level kit; subclass it as ``Test<Store>Tools`` and give the ``database`` fixture.

    Class attributes:

    * ``provider`` -- the store's registered name (what ``tool.provider`` must report:
      a tool that fell back to the in-memory store fails).
    * ``tool_types`` -- the tool types to run (both by default).
    * ``kill_cases`` -- ``(tool type, kill point)`` pairs of the crash test; kill points
      are those of :data:`deckhand.testing.tool_process.KILL_POINTS`. By default each kill
      point once, each with one tool type (a process start costs about a second).
    * ``xfail`` -- ``{"test_name[tool_type]": "reason"}``: known failures, marked strict
      (an unexpected pass fails, so the mark goes when the fault is fixed).
    """
