"""What the store declares: its capabilities, its registration and its entry point."""

from __future__ import annotations

import importlib.metadata
import typing
from pathlib import Path

import numpy as np
import pytest

from deckhand.capabilities import CAPABILITY_PROTOCOLS, StoreCapability, store_capabilities
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ComponentNotFoundError
from deckhand.hookspecs import PROJECT
from deckhand.plugins import get_registry
from deckhand.stores.tool_store import create_store
from deckhand.testing.store_conformance.store_fixtures import (
    StoreFactory,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)


def missing_methods(store: object, capability: StoreCapability) -> list[str]:
    """The methods ``capability`` promises that ``store`` lacks (empty when it has them all)."""
    protocol = CAPABILITY_PROTOCOLS[capability]
    if protocol is None:
        return []
    members = getattr(protocol, "__protocol_attrs__", None)  # Python 3.12+
    if members is None:
        members = typing._get_protocol_attrs(protocol)  # type: ignore[attr-defined]
    return [name for name in sorted(members) if not callable(getattr(store, name, None))]


def undeclared_capabilities(store: object) -> list[StoreCapability]:
    """Capabilities whose methods ``store`` implements without declaring them."""
    declared = store_capabilities(store)
    return [
        c
        for c, protocol in CAPABILITY_PROTOCOLS.items()
        if c not in declared and protocol is not None and not missing_methods(store, c)
    ]


class DeclarationTests(StoreKit):
    """What the store declares: its capabilities, its registration and its entry point."""

    # -- declarations: capabilities, registration, entry point -------------------------------
    def test_capabilities_are_declared(self, store_factory: StoreFactory, collection: str) -> None:
        if "persistent" in vars(type(self)):
            pytest.fail(
                f"{type(self).__name__}.persistent is no longer read: declare StoreCapability.PERSISTENT in the "
                "store class's capabilities instead, and remove the attribute from the test class"
            )
        store = store_factory(collection)
        try:
            cls = type(store)
            declared = getattr(cls, "capabilities", None)
            assert declared is not None, (
                f"{cls.__name__} declares no capabilities: add a class attribute such as "
                "capabilities = frozenset({StoreCapability.PERSISTENT}) (frozenset() when it supports none; "
                "see deckhand.capabilities.StoreCapability)"
            )
            assert isinstance(declared, (frozenset, set)), (
                f"{cls.__name__}.capabilities must be a frozenset of StoreCapability values, "
                f"not {type(declared).__name__}"
            )
            try:
                caps = store_capabilities(store)
            except ValueError as exc:
                pytest.fail(str(exc))
            # One mechanism: a capability's methods are called only when it is declared, and declared only
            # when they are there (deckhand.capabilities.CAPABILITY_PROTOCOLS ties each to its Protocol).
            for capability in sorted(caps):
                missing = missing_methods(store, capability)
                if missing:
                    protocol = CAPABILITY_PROTOCOLS[capability]
                    methods = ", ".join(f"{m}()" for m in missing)
                    pytest.fail(
                        f"{cls.__name__} declares {capability.value} but has no {methods} "
                        f"method{'s' if len(missing) > 1 else ''} ({protocol.__name__ if protocol else ''})"
                    )
            for capability in undeclared_capabilities(store):
                protocol = CAPABILITY_PROTOCOLS[capability]
                assert protocol is not None
                pytest.fail(
                    f"{cls.__name__} implements {capability.value} ({protocol.__name__}) but does not declare "
                    f"StoreCapability.{capability.name}: declare it, so deckhand uses it and this kit tests it"
                )
        finally:
            store.close()

    def test_registered_factory_and_entry_point(
        self,
        database: DatabaseConfig,
        base_dir: Path,
        store_factory: StoreFactory,
        collection: str,
        capabilities: frozenset[StoreCapability],
        rng: np.random.Generator,
    ) -> None:
        assert self.provider, f"{type(self).__name__}: set provider = '<name the store is registered under>'"
        try:
            component = get_registry().resolve("store", self.provider)
        except ComponentNotFoundError as exc:
            pytest.fail(f"the store is not registered: {exc}")
        assert get_registry().resolve("store", database.provider) is component, (
            f"the database fixture selects provider {database.provider!r}, which is not the store {self.provider!r}"
        )
        entry_points = {ep.name: ep for ep in importlib.metadata.entry_points(group=PROJECT)}
        if self.entry_point is not None:
            assert self.entry_point in entry_points, (
                f"no entry point {self.entry_point!r} in group {PROJECT!r}: add [project.entry-points.{PROJECT}] "
                f'{self.entry_point} = "<your_package>.plugin" to pyproject.toml and reinstall the package'
            )
            assert component.plugin == self.entry_point, (
                f"store {self.provider!r} is registered by {component.plugin!r}, not by entry point "
                f"{self.entry_point!r} ({entry_points[self.entry_point].value})"
            )
        else:
            assert component.plugin not in entry_points, (
                f"store {self.provider!r} comes from entry point {component.plugin!r}: set entry_point = "
                f"{component.plugin!r}"
            )
        spec = self._process_spec(collection)
        built = create_store(component, database, collection, base_dir=base_dir)
        direct = store_factory(collection)
        try:
            assert type(built) is type(direct), (
                f"the registered factory builds {type(built).__name__}, the kit's store_factory {type(direct).__name__}"
            )
            assert built.open(spec) is None
            records = make_records(make_vectors(rng, 3, self.dimension), "registered.md")
            built.replace_source("registered.md", records, file_state("registered.md", chunks=3))
            assert built.count() == 3
            if StoreCapability.PERSISTENT in capabilities:
                assert direct.open(spec) == spec, "the registered factory and store_factory reach different data"
                assert direct.count() == 3
        finally:
            built.close()
            direct.close()
