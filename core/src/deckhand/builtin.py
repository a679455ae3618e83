"""deckhand's own components, registered through the same hooks as external plugins.

Factories import their implementation when called, so registering loads no model; the options
models they declare are small pydantic models imported at registration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.hookspecs import Register, hookimpl


def _text_loader() -> Any:
    from deckhand.ingest.loaders import TextLoader

    return TextLoader()


def _table_loader() -> Any:
    from deckhand.ingest.loaders import TableLoader

    return TableLoader()


def _markitdown_loader() -> Any:
    from deckhand.ingest.loaders import MarkItDownLoader

    return MarkItDownLoader()


def _token_chunker(tokenizer: Any, chunk_size: int = 512, chunk_overlap: int = 50) -> Any:
    from deckhand.chunking.token import TokenChunker

    return TokenChunker(tokenizer, chunk_size=chunk_size, chunk_overlap=chunk_overlap)


def _bm25(store: Any, cache_path: Path | None = None, *, k1: float = 0.9, b: float = 0.4) -> Any:
    from deckhand.retrieval.bm25 import BM25Index

    return BM25Index(k1=k1, b=b, cache_path=cache_path)


def _structure_chunker(
    tokenizer: Any, max_chunk_tokens: int = 800, chunk_overlap: int = 0, chunk_size: int | None = None
) -> Any:
    """``chunk_size`` is another name for ``max_chunk_tokens`` (the vectorstore tool's)."""
    from deckhand.chunking.structure import StructureChunker

    limit = chunk_size if chunk_size is not None else max_chunk_tokens
    return StructureChunker(tokenizer, max_chunk_tokens=limit, chunk_overlap=chunk_overlap)


def _structural_context(base_dir: Path | None = None) -> Any:
    from deckhand.context.structural import build_structural_generator

    return build_structural_generator()


def _llm_context(base_dir: Path | None = None, **settings: Any) -> Any:
    """``settings`` are the validated fields of :class:`deckhand.context.llm.LLMContextSettings`."""
    from deckhand.context.llm import build_llm_generator

    return build_llm_generator(base_dir=base_dir, **settings)


def _llm_reranker(base_dir: Path | None = None, **options: Any) -> Any:
    """``options`` are the validated fields of :class:`deckhand.retrieval.llm_rerank.LLMRerankerOptions`."""
    from deckhand.retrieval.llm_rerank import build_llm_reranker

    return build_llm_reranker(base_dir, **options)


def _minilm(model: str | None = None, **options: Any) -> Any:
    from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder

    return MiniLMOnnxEmbedder(model, **options)


@hookimpl
def register_loaders(register: Register) -> None:
    from deckhand.ingest.loaders import MarkItDownLoader, TableLoader, TextLoader

    register(
        "text",
        _text_loader,
        description="plain text and markdown, encoding detected",
        extensions=sorted(TextLoader.extensions),
    )
    register(
        "table",
        _table_loader,
        description="CSV as a markdown table, JSON as a code block",
        extensions=sorted(TableLoader.extensions),
    )
    register(
        "markitdown",
        _markitdown_loader,
        description="PDF, Office and HTML via markitdown",
        extensions=sorted(MarkItDownLoader.extensions),
    )


@hookimpl
def register_chunkers(register: Register) -> None:
    from deckhand.chunking.structure import StructureChunkerOptions
    from deckhand.chunking.token import TokenChunkerOptions

    register(
        "token",
        _token_chunker,
        description="fixed token windows with overlap (embedder's tokenizer)",
        options=TokenChunkerOptions,
    )
    register(
        "structure",
        _structure_chunker,
        description="markdown heading tree: sections, section ids, definitions, cross-references",
        options=StructureChunkerOptions,
    )


@hookimpl
def register_context_generators(register: Register) -> None:
    from deckhand.context.llm import LLMContextSettings
    from deckhand.context.structural import StructuralContextOptions

    register(
        "structural",
        _structural_context,
        description="document title and heading chain (offline, default)",
        options=StructuralContextOptions,
    )
    register(
        "llm",
        _llm_context,
        description="LLM-written context via an OpenAI-compatible chat endpoint",
        options=LLMContextSettings,
    )


@hookimpl
def register_rerankers(register: Register) -> None:
    from deckhand.retrieval.llm_rerank import LLMRerankerOptions

    register(
        "llm",
        _llm_reranker,
        description="a chat model grades each candidate, via an OpenAI-compatible endpoint",
        options=LLMRerankerOptions,
    )


@hookimpl
def register_embedders(register: Register) -> None:
    from deckhand.embedding.minilm_onnx import DIMENSION, LEGACY_MODEL_ID, MAX_TOKENS

    register(
        "minilm",
        _minilm,
        description="all-MiniLM-L6-v2 on onnxruntime (fused graph, fp32, 512 tokens), offline (default); "
        "'minilm:OPTIONS' picks precision (int8), window, pooling and device",
        aliases=("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "default", "all-MiniLM-L6-v2-onnx-int8"),
        # Described here so a process that never embeds never loads the model (deckhand.embedding.lazy).
        model_id=LEGACY_MODEL_ID,
        dimension=DIMENSION,
        max_tokens=MAX_TOKENS,
    )


def _memory_backend(path: Any = None, **options: Any) -> Any:
    from deckhand.memory.inmemory import InMemoryBackend

    return InMemoryBackend(path, **options)


@hookimpl
def register_memory_backends(register: Register) -> None:
    register(
        "memory",
        _memory_backend,
        description="decisions kept in this process only (tests, ephemeral agents); nothing persists",
        aliases=("in-memory", "inmemory"),
    )


def _inmemory_store(config: Any, collection: str) -> Any:
    from deckhand.stores.inmemory import InMemoryStore

    return InMemoryStore.from_config(config, collection)


def _sqlite_store(config: Any, collection: str, *, base_dir: Any = None) -> Any:
    from deckhand.stores.sqlite import SQLiteStore

    return SQLiteStore.from_config(config, collection, base_dir=base_dir)


@hookimpl
def register_stores(register: Register) -> None:
    from deckhand.stores.sqlite_ann import SQLiteOptions

    register(
        "in-memory",
        _inmemory_store,
        description="exact NumPy search in this process; nothing persists",
        aliases=("inmemory", "memory"),
    )
    register(
        "sqlite",
        _sqlite_store,
        description="one SQLite file under .deckhand/index, persistent; exact NumPy search, HNSW past 50k records"
        " (default)",
        aliases=("sqlite3",),
        uses_base_dir=True,
        options=SQLiteOptions,
    )


@hookimpl
def register_keyword_strategies(register: Register) -> None:
    from deckhand.retrieval.bm25 import BM25Options

    register(
        "bm25",
        _bm25,
        description="in-process BM25 (sparse postings, English stemmer + stopwords)",
        options=BM25Options,
    )


def _vectorstore_tool(config: Any, *, base_dir: Any = None, registry: Any = None, progress: Any = None) -> Any:
    from deckhand.tools.vectorstore import VectorStoreTool

    return VectorStoreTool(config, base_dir=base_dir, registry=registry, progress=progress)


def _hierarchical_tool(config: Any, *, base_dir: Any = None, registry: Any = None, progress: Any = None) -> Any:
    from deckhand.tools.hierarchical import HierarchicalDocumentTool

    return HierarchicalDocumentTool(config, base_dir=base_dir, registry=registry, progress=progress)


@hookimpl
def register_tools(register: Register) -> None:
    from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
    from deckhand.config.vectorstore import VectorStoreToolConfig

    register(
        "vectorstore",
        _vectorstore_tool,
        description="semantic search over a file or directory",
        options=VectorStoreToolConfig,
    )
    register(
        "hierarchical_document",
        _hierarchical_tool,
        description="hybrid search (dense + keyword + exact) over structured documents",
        options=HierarchicalDocumentToolConfig,
    )
