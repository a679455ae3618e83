"""A pytest conformance suite every :class:`~deckhand.bases.StoreBase` plugin runs.

A plugin subclasses :class:`StoreConformanceTests` in one of its test modules, names the
registered store (``provider``) and the entry point that registers it, and gives the
``database:`` block the tests use; pytest then collects every ``test_*`` method of the
kit against that store::

    import pytest
    from deckhand.config.models import DatabaseConfig
    from deckhand.testing.store_conformance import StoreConformanceTests
    from deckhand.types import Algorithm

    class TestMyStoreConformance(StoreConformanceTests):
        provider = "mystore"          # the name given to register.store()
        entry_point = "mystore"       # [project.entry-points.deckhand] name (None: a deckhand builtin)
        algorithms = (Algorithm.HNSW, Algorithm.FLAT)

        @pytest.fixture
        def database(self, my_server_url: str) -> DatabaseConfig:
            return DatabaseConfig(provider="mystore", connection_string=my_server_url)

Stores are built the way tools build them: the factory registered under ``provider``,
called through :func:`deckhand.stores.tool_store.create_store` (so the factory gets the test's agent
directory as ``base_dir``, and the validated options). Each call of ``store_factory(collection)``
is a *new connection*; the kit opens every collection itself, uses a fresh collection
name per test and drops it afterwards.

What the kit expects of a store depends on the capabilities the store class declares
(``capabilities``, see :class:`deckhand.capabilities.StoreCapability`): a declared capability
that does not work, or whose methods are missing, fails, and a store that implements a
capability's methods (``keyword_search``, ``verify_integrity``, ...) or keeps its data
across processes without declaring it fails too, so the declaration can be trusted (it is the only one:
``register.store`` takes none, ``deckhand plugins`` reads the class's).
Checks that need another process run ``python -m deckhand.testing.store_process``, which
resolves the store through the plugin registry, as ``deckhand`` does.

Scores are checked against :func:`deckhand.similarity.exact_scores`, the NumPy reference the
in-memory store also follows, so a score means the same thing whichever store answers.
Vectors are seeded random (clustered, so approximate indexes face realistic data).

The kit is composed of one mixin per capability, the way Haystack's ``DocumentStoreBaseTests``
is: :class:`CollectionLifecycleTests`, :class:`WriteTests`, :class:`SearchTests`,
:class:`FilterTests`, :class:`PersistenceTests`, :class:`KeywordSearchTests`,
:class:`DeclarationTests`, :class:`ConcurrencyTests` and :class:`NamingTests`, each in a module of
this package over the shared :class:`~deckhand.testing.store_conformance.store_fixtures.StoreKit`.
:class:`StoreConformanceTests` is all of them; a plugin that wants to run one part on its own
(while developing, say) subclasses that mixin instead.
"""

from __future__ import annotations

from deckhand.testing.store_conformance.concurrency import ConcurrencyTests
from deckhand.testing.store_conformance.declarations import DeclarationTests
from deckhand.testing.store_conformance.filters import FILTER_METADATA, FILTER_PATHS, FilterTests, filter_cases
from deckhand.testing.store_conformance.lifecycle import CollectionLifecycleTests
from deckhand.testing.store_conformance.naming import NamingTests
from deckhand.testing.store_conformance.native_keyword import KeywordSearchTests
from deckhand.testing.store_conformance.persistence import PersistenceTests
from deckhand.testing.store_conformance.search import SearchTests
from deckhand.testing.store_conformance.store_fixtures import (
    AWKWARD_SOURCES,
    PROCESS_TIMEOUT,
    SCORE_TOLERANCE,
    STRANGE_SOURCES,
    StoreFactory,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.testing.store_conformance.writes import WriteTests
from deckhand.types import record_id

__all__ = [
    "AWKWARD_SOURCES",
    "FILTER_METADATA",
    "FILTER_PATHS",
    "PROCESS_TIMEOUT",
    "SCORE_TOLERANCE",
    "STRANGE_SOURCES",
    "CollectionLifecycleTests",
    "ConcurrencyTests",
    "DeclarationTests",
    "FilterTests",
    "KeywordSearchTests",
    "NamingTests",
    "PersistenceTests",
    "SearchTests",
    "StoreConformanceTests",
    "StoreFactory",
    "StoreKit",
    "WriteTests",
    "file_state",
    "filter_cases",
    "make_records",
    "make_vectors",
    "record_id",
]


class StoreConformanceTests(
    CollectionLifecycleTests,
    WriteTests,
    SearchTests,
    FilterTests,
    PersistenceTests,
    KeywordSearchTests,
    DeclarationTests,
    ConcurrencyTests,
    NamingTests,
):
    """The conformance suite; subclass it as ``Test<Store>Conformance``.

    Class attributes to set:

    * ``provider`` -- the name the store is registered under (``database.provider``). Required.
    * ``entry_point`` -- the name of the ``deckhand`` entry point whose module registers the
      store; ``None`` only for stores deckhand itself registers.
    * ``algorithms`` -- index algorithms to run the whole kit with; a FLAT index must be
      exact, an HNSW index must reach ``min_recall``.
    * ``exact_algorithms`` -- algorithms whose results must equal the exact reference.
    * ``metrics`` -- metrics the ranking tests cover.
    * ``dimension`` -- vector length of the test collections.
    * ``large_batch`` -- records in the large-batch test.
    * ``min_recall`` -- recall@10 required of approximate indexes.

    What the store supports is not set here: it is read from the store class's
    ``capabilities`` (:class:`deckhand.capabilities.StoreCapability`).
    """
