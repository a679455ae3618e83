"""Helpers shared by core's tests: builders for ingestors and tools, and plugin test doubles."""

from __future__ import annotations

import logging
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.bases import EmbedderBase
from deckhand.chunking.token import TokenChunker
from deckhand.config.models import VectorStoreToolConfig
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache
from deckhand.hookspecs import hookimpl
from deckhand.ingest.pipeline import Ingestor, LoaderSet
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.registration import Registrar
from deckhand.stores.inmemory import InMemoryStore
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import CollectionSpec
from pydantic import BaseModel, ConfigDict, Field


def open_memory_store(minilm: Any, name: str = "test") -> InMemoryStore:
    store = InMemoryStore(name)
    store.open(CollectionSpec(name=name, dimension=minilm.dimension, embedding_model=minilm.model_id))
    return store


def make_ingestor(
    minilm: Any,
    store: Any,
    base: Path,
    *,
    chunk_size: int = 512,
    chunk_overlap: int = 50,
    cache_dir: Path | None = None,
) -> Ingestor:
    """An Ingestor over the real embedder (with an on-disk cache) and the builtin loaders."""
    cache = EmbeddingCache((cache_dir or base / ".cache") / "embeddings.sqlite")
    return Ingestor(
        store=store,
        embedder=CachedEmbedder(minilm, cache),
        chunker=TokenChunker(minilm.tokenizer, chunk_size=chunk_size, chunk_overlap=chunk_overlap),
        loaders=LoaderSet.from_registry(get_registry()),
        base_dir=base,
    )


def make_tool(
    base: Path, source: str | Path, registry: PluginRegistry | None = None, **options: Any
) -> VectorStoreTool:
    config = VectorStoreToolConfig.model_validate(
        {"type": "vectorstore", "name": options.pop("name", "kb"), "source": str(source), **options}
    )
    return VectorStoreTool(config, base_dir=base, registry=registry)


class FakeEmbedder(EmbedderBase):
    """Deterministic hashed bag-of-words vectors with the MiniLM tokenizer: another model id."""

    def __init__(self, tokenizer: Any, model_id: str = "fake-embedder-v2", dimension: int = 32) -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.max_tokens = 512
        self._tokenizer = tokenizer
        self.calls = 0

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def embed(self, texts: Any) -> Any:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dimension] += 1.0  # hash() differs per process
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class SharedStores:
    """A store plugin whose collections outlive the tool (a stand-in for a persistent database)."""

    def __init__(self) -> None:
        self.stores: dict[str, InMemoryStore] = {}

    def factory(self, config: Any, collection: str, options: None = None, *, base_dir: Any = None) -> InMemoryStore:
        store = self.stores.get(collection)
        if store is None:
            store = self.stores[collection] = InMemoryStore(collection)
            store.close = lambda: None
        return store

    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.store(
            "shared",
            self.factory,
            description="test double: persistent in-memory collections",
        )


def make_pdf(text: str) -> bytes:
    """A minimal valid one-page PDF showing ``text`` (Helvetica), written by hand."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return serialize_pdf(objects, root=1)


def serialize_pdf(objects: list[bytes], root: int) -> bytes:
    """PDF bytes for ``objects`` (numbered from 1), with the cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def contents(store: Any) -> str:
    """Every stored chunk's text, joined: to check what was (not) indexed."""
    return "\n".join(r.content for r in store.iter_records())


def warnings_of(caplog: Any, logger: str = "deckhand.ingest") -> list[str]:
    """The lines ``logger`` printed at the default level: warnings and errors (a failed file is an error)."""
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno >= logging.WARNING]


def skipped_of(caplog: Any) -> list[str]:
    """The per-file ``skipped`` lines, which only ``-v`` (info) shows."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "deckhand.ingest" and r.levelname == "INFO" and r.getMessage().startswith("skipped ")
    ]


class AcmeOptions(BaseModel):
    """Options of the test store ``acme`` (a stand-in for a server store plugin)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_size: int = Field(default=4, ge=1, le=64, description="Connections kept open.")
    tls: bool = False


class AcmeStorePlugin:
    """A store plugin as a third party writes one: options model and URL schemes declared."""

    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        from deckhand.stores.inmemory import InMemoryStore

        register.store(
            "acme",
            lambda config, collection, options, *, base_dir: InMemoryStore(collection),
            description="test store declaring options and URL schemes",
            options=AcmeOptions,
            url_schemes=("acme://", "acmes://", "unix://"),
        )
