"""The bridge's parts without a database: the score table, the catalog, the search requests, names,
registration, install hints and configuration (agent.yaml blocks written for the original platform)."""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip(
    "deckhand_semantic_kernel", reason="the plugin is not installed here: nox -s \"tests(package='semantic-kernel')\""
)

from deckhand.config import load_agent_config
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ComponentNotFoundError, ConfigError
from deckhand.install_hints import Installation
from deckhand.install_hints import install_command as install_requirements
from deckhand.plugins import PluginRegistry
from deckhand.similarity import exact_scores
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, record_id
from deckhand_semantic_kernel.stores import register as registration
from deckhand_semantic_kernel.stores.bridge import NameRule, storage_name
from deckhand_semantic_kernel.stores.catalog import Catalog, SourceIds
from deckhand_semantic_kernel.stores.providers import BY_NAME, PRIORITY, PROVIDERS, install_command, plugin_extras
from deckhand_semantic_kernel.stores.query import FilterStyle, build_search, source_filter, source_key
from deckhand_semantic_kernel.stores.records import storage_key
from deckhand_semantic_kernel.stores.scores import SCORE_RULES, to_score


# -- scores ---------------------------------------------------------------------------------
# What each database returns for a pair of vectors, written from its documentation (not from the
# table's inverse functions): cos, ip and d are the cosine, the inner product and the L2 distance.
def _azure_dot(ip: float) -> float:
    return 1.0 + ip if ip >= 0 else 1.0 / (1.0 - ip)


RETURNS = {
    "chromadb": {
        Metric.COSINE: lambda c, i, d: 1 - c,
        Metric.L2: lambda c, i, d: d * d,
        Metric.IP: lambda c, i, d: 1 - i,
    },
    "qdrant": {Metric.COSINE: lambda c, i, d: c, Metric.L2: lambda c, i, d: d, Metric.IP: lambda c, i, d: i},
    "azure-ai-search": {
        Metric.COSINE: lambda c, i, d: 1 / (1 + (1 - c)),
        Metric.L2: lambda c, i, d: 1 / (1 + d),
        Metric.IP: lambda c, i, d: _azure_dot(i),
    },
    "pinecone": {Metric.COSINE: lambda c, i, d: c, Metric.L2: lambda c, i, d: d * d, Metric.IP: lambda c, i, d: i},
    "mongodb": {
        Metric.COSINE: lambda c, i, d: (1 + c) / 2,
        Metric.L2: lambda c, i, d: 1 / (1 + d),
        Metric.IP: lambda c, i, d: (1 + i) / 2,
    },
    "azure-cosmos-nosql": {
        Metric.COSINE: lambda c, i, d: c,
        Metric.L2: lambda c, i, d: d,
        Metric.IP: lambda c, i, d: i,
    },
    "azure-cosmos-mongo": {
        Metric.COSINE: lambda c, i, d: c,
        Metric.L2: lambda c, i, d: d,
        Metric.IP: lambda c, i, d: i,
    },
    "sql-server": {Metric.COSINE: lambda c, i, d: 1 - c, Metric.L2: lambda c, i, d: d, Metric.IP: lambda c, i, d: -i},
    # FAISS has no cosine index: the bridge stores unit vectors, so the inner product is the cosine.
    "faiss": {Metric.COSINE: lambda c, i, d: c, Metric.L2: lambda c, i, d: d * d, Metric.IP: lambda c, i, d: i},
}


def test_every_provider_has_a_rule_for_every_metric() -> None:
    assert set(SCORE_RULES) == set(BY_NAME) == set(RETURNS)
    for provider, rules in SCORE_RULES.items():
        assert set(rules) == set(Metric), f"{provider} lacks a metric"


@pytest.mark.parametrize("provider", sorted(SCORE_RULES))
@pytest.mark.parametrize("metric", list(Metric), ids=[m.value for m in Metric])
def test_connector_scores_become_deckhand_scores(provider: str, metric: Metric) -> None:
    """For vectors from identical to opposite, the converted score equals deckhand's reference score."""
    rng = np.random.default_rng(7)
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    others = [query, -query, *rng.normal(size=(30, 16)).astype(np.float32)]
    matrix = np.asarray(
        [o / np.linalg.norm(o) * s for o, s in zip(others, rng.uniform(0.6, 1.4, len(others)), strict=True)]
    )
    if metric is Metric.COSINE:
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    _, expected = exact_scores(metric, matrix, query)
    for row, want in zip(matrix, expected, strict=True):
        cos = float(row @ query / (np.linalg.norm(row) * np.linalg.norm(query)))
        ip, dist = float(row @ query), float(np.linalg.norm(row - query))
        returned = RETURNS[provider][metric](cos, ip, dist)
        got = to_score(provider, metric, returned)
        assert 0.0 <= got <= 1.0
        assert math.isclose(got, float(want), abs_tol=1e-5), (
            f"{provider}/{metric.value}: {returned} -> {got}, want {want}"
        )


def test_distance_functions_are_semantic_kernels() -> None:
    pytest.importorskip("semantic_kernel")
    from semantic_kernel.connectors.chroma import DISTANCE_FUNCTION_MAP as CHROMA
    from semantic_kernel.connectors.qdrant import DISTANCE_FUNCTION_MAP as QDRANT
    from semantic_kernel.data.vector import DistanceFunction

    for rules in SCORE_RULES.values():
        for rule in rules.values():
            DistanceFunction(rule.distance_function)
    for provider, supported in (("chromadb", CHROMA), ("qdrant", QDRANT)):
        for rule in SCORE_RULES[provider].values():
            assert DistanceFunction(rule.distance_function) in supported, provider


# -- catalog, keys, names, requests ---------------------------------------------------------
def test_catalog_round_trip_and_compact_ids() -> None:
    spec = CollectionSpec("kb", 384, "all-MiniLM-L6-v2", Metric.L2, Algorithm.FLAT)
    catalog = Catalog(spec)
    catalog.add("a b/'q'.md", [record_id("a b/'q'.md", i) for i in range(10_000)])
    catalog.add("a b/'q'.md", [record_id("a b/'q'.md", 10_000), "custom-id"])
    catalog.manifest["x.md"] = FileState("x.md", 1_700_000_000.123456, 10, "ab" * 32, "m", 0)
    text = catalog.dumps()
    assert len(text) < 600, "chunk ids are kept as ranges"
    again = Catalog.loads(text)
    assert again.spec == spec and again.manifest == catalog.manifest
    assert again.count() == 10_002
    assert again.ids_of("a b/'q'.md")[-1] == "custom-id"
    again.set("a b/'q'.md", [])
    assert again.count() == 0 and again.ids == {}
    assert SourceIds.of("s", ["s_chunk_2", "s_chunk_1", "s_chunk_01"]).to_json() == {
        "ranges": [[1, 3]],
        "other": ["s_chunk_01"],
    }


def test_keys_are_uuids_and_deterministic() -> None:
    import uuid

    key = storage_key("docs/ü 'x'.md_chunk_3")
    assert uuid.UUID(key).version == 5 and key == storage_key("docs/ü 'x'.md_chunk_3")
    assert key != storage_key("docs/ü 'x'.md_chunk_4")


def test_source_filters_use_hex_keys() -> None:
    one = source_filter(["it's.md"], FilterStyle.EQUALITIES)
    key = source_key("it's.md")
    assert one == f"lambda x: x.source_key == '{key}'"
    assert "'" not in source_key("it's.md")
    compound = source_filter(["a.md"], FilterStyle.COMPOUND)
    assert compound.count(" or ") == 1, "a lone source is compared twice for Qdrant"
    request = build_search(np.ones(3, dtype=np.float32), 4, sources=["a.md", "b.md"], style=FilterStyle.EQUALITIES)
    assert request.arguments()["top"] == 4 and request.arguments()["filter"].count(" or ") == 1
    assert "filter" not in build_search([1.0], 2, sources=None, style=FilterStyle.COMPOUND).arguments()


def test_storage_names_fit_each_database() -> None:
    assert storage_name("deckhand_vectors", "kb", "", NameRule()) == "dh-deckhand_vectors-kb"
    pinecone = storage_name("Deckhand_Vectors", "knowledge_base_" + "x" * 60, "-catalog", NameRule(True, 45))
    assert len(pinecone) <= 45 and pinecone == pinecone.lower() and "_" not in pinecone
    other = storage_name("Deckhand_Vectors", "knowledge_base_" + "x" * 61, "-catalog", NameRule(True, 45))
    assert pinecone != other, "truncated names keep a digest of the full name"


# -- registration, hints, configuration -----------------------------------------------------
def test_every_provider_is_registered_below_native_plugins() -> None:
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(registration, "semantic-kernel")
    for provider in PROVIDERS:
        component = registry.resolve("store", provider.name)
        assert component.plugin == "semantic-kernel" and component.priority == PRIORITY < 0
        assert component.options is registration.OPTIONS[provider.name]
        # Every bridged store is given the agent's directory (chromadb and qdrant keep files under it).
        assert "base_dir" in inspect.signature(component.factory).parameters
        # A plain function building one of several classes: `deckhand plugins` says its store declares them.
        assert component.capabilities is None


def test_a_native_plugin_wins_the_name() -> None:
    from deckhand.hookspecs import hookimpl
    from deckhand.registration import Registrar

    class Native:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.store("qdrant", lambda *args, **kwargs: None, description="a native qdrant plugin")

    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(registration, "semantic-kernel")
    registry.register_plugin(Native(), "qdrant-native")
    assert registry.resolve("store", "qdrant").plugin == "qdrant-native"
    assert registry.resolve("store", "chromadb").plugin == "semantic-kernel"


def test_extras_exist_for_every_provider() -> None:
    extras = plugin_extras()
    if not extras:
        pytest.skip("deckhand-ai-semantic-kernel is not installed (no metadata to read the extras from)")
    root = Path(__file__).resolve().parents[3]
    clone = Installation("pip", root, False)  # deckhand installed from this clone: the names resolve nowhere
    for provider in PROVIDERS:
        assert provider.extra in extras, provider.name
        requirement = f"deckhand-ai-semantic-kernel[{provider.extra}]"
        assert install_command(provider, where=Installation()) == f'pip install "{requirement}"'
        target = f"{root.as_posix()}/plugins/semantic-kernel[{provider.extra}]"
        assert install_command(provider, where=clone) == f'pip install "{target}"'
        assert install_command(provider) == install_requirements(requirement)  # where this environment's deckhand is


def test_missing_connector_packages_give_the_install_hint(tmp_path: Path) -> None:
    provider = BY_NAME["pinecone"]
    fake = replace(provider, modules=("deckhand_no_such_module",))
    with pytest.raises(ComponentNotFoundError) as err:
        registration.build(fake, DatabaseConfig(provider="pinecone"), "kb", base_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        "store 'pinecone' needs deckhand_no_such_module, which is not installed; install it with: "
        + install_command(provider)
    )


def test_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    pytest.importorskip("semantic_kernel")
    with pytest.raises(ConfigError, match=r"^database\.options\.ef_search: .*\(provider chromadb\)$"):
        registration.build(
            BY_NAME["chromadb"],
            DatabaseConfig.model_construct(provider="chromadb", options={"ef_search": 0}),
            "kb",
            base_dir=tmp_path,
        )


def test_original_platform_database_blocks_validate(tmp_path: Path) -> None:
    """``database:`` blocks of the original platform's guides, as written there."""
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(registration, "semantic-kernel")
    (tmp_path / "docs").mkdir()
    blocks = {
        "{provider: chromadb, persist_directory: ./data/chromadb}": (
            "chromadb",
            {"persist_directory": "./data/chromadb"},
        ),
        "{provider: chromadb, connection_string: 'http://localhost:8000'}": ("chromadb", {}),
        "{provider: qdrant, connection_string: 'http://localhost:6333', api_key: secret}": (
            "qdrant",
            {"api_key": "secret"},
        ),
        "{provider: pinecone, api_key: k, namespace: my-namespace}": (
            "pinecone",
            {"api_key": "k", "namespace": "my-namespace"},
        ),
        "{provider: azure-ai-search, connection_string: 'https://x.search.windows.net', api_key: k}": (
            "azure-ai-search",
            {"api_key": "k"},
        ),
    }
    for block, (provider, options) in blocks.items():
        path = tmp_path / "agent.yaml"
        path.write_text(
            "name: support-agent\ntools:\n  - name: search_kb\n    description: Search the knowledge base\n"
            f"    type: vectorstore\n    source: docs/\n    database: {block}\n"
        )
        database = load_agent_config(path, registry).tools[0].database
        assert (database.provider, database.options) == (provider, options), block
    path.write_text(
        "tools:\n  - {name: kb, type: vectorstore, source: docs/,\n"
        "     database: {provider: chromadb, persist_directry: x}}\n"
    )
    with pytest.raises(ConfigError, match="persist_directry"):
        load_agent_config(path, registry)


def test_loading_the_plugin_imports_no_connector() -> None:
    """deckhand loads every entry point on start: the bridge's must not import Semantic Kernel (1.5 s) or an engine."""
    import subprocess
    import sys

    code = (
        "import sys; from deckhand.plugins import get_registry; "
        "names = [c.name for c in get_registry().list('store')]; "
        "heavy = [m for m in ('semantic_kernel', 'chromadb', 'qdrant_client', 'pinecone', 'pymongo') "
        "if m in sys.modules]; "
        "print(','.join(names)); print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    names, heavy = out.stdout.splitlines()
    assert {p.name for p in PROVIDERS} <= set(names.split(","))
    assert heavy == "", f"loading the plugins imported {heavy}"


def test_a_filter_is_refused_in_one_line_not_ignored() -> None:
    """The bridge declares no 'filters': its search takes ``where=`` (the VectorStore protocol) and refuses one."""
    from deckhand.errors import FilterError
    from deckhand.filters.conditions import Filter, Op, condition
    from deckhand_semantic_kernel.stores.bridge import BridgeStore

    store = BridgeStore(DatabaseConfig.model_construct(provider="chromadb", options={}), "kb")
    where = Filter((condition("author", Op.EQ, ["x"]),))
    with pytest.raises(FilterError, match="cannot apply search filters") as refused:
        store.search(np.zeros(4, dtype=np.float32), 3, where=where)
    assert "\n" not in str(refused.value)
