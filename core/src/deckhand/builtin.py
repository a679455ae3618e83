"""deckhand's own components, registered through the same hooks as external plugins."""

from __future__ import annotations

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


def _token_chunker(tokenizer: Any, chunk_size: int = 512, chunk_overlap: int = 50, **_: Any) -> Any:
    from deckhand.chunking.token import TokenChunker

    return TokenChunker(tokenizer, chunk_size=chunk_size, chunk_overlap=chunk_overlap)


def _bm25(store: Any = None, *, k1: float = 0.9, b: float = 0.4, cache_path: Any = None, **_: Any) -> Any:
    from deckhand.retrieval.bm25 import BM25Index

    return BM25Index(k1=k1, b=b, cache_path=cache_path)


def _structure_chunker(
    tokenizer: Any,
    max_chunk_tokens: int | None = None,
    chunk_overlap: int = 0,
    chunk_size: int | None = None,
    **_: Any,
) -> Any:
    from deckhand.chunking.structure import StructureChunker

    limit = max_chunk_tokens or chunk_size or 800  # chunk_size: the vectorstore option's name
    return StructureChunker(tokenizer, max_chunk_tokens=limit, chunk_overlap=chunk_overlap)


def _structural_context(**settings: Any) -> Any:
    from deckhand.context.structural import build_structural_generator

    return build_structural_generator(**settings)


def _llm_context(**settings: Any) -> Any:
    from deckhand.context.llm import build_llm_generator

    return build_llm_generator(**settings)


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
    register("token", _token_chunker, description="fixed token windows with overlap (embedder's tokenizer)")
    register(
        "structure",
        _structure_chunker,
        description="markdown heading tree: sections, section ids, definitions, cross-references",
    )


@hookimpl
def register_context_generators(register: Register) -> None:
    register("structural", _structural_context, description="document title and heading chain (offline, default)")
    register("llm", _llm_context, description="LLM-written context via an OpenAI-compatible chat endpoint")


@hookimpl
def register_embedders(register: Register) -> None:
    register(
        "minilm",
        _minilm,
        description="all-MiniLM-L6-v2, int8 ONNX on onnxruntime, offline (default)",
        aliases=("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "default"),
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
    register(
        "in-memory",
        _inmemory_store,
        description="exact NumPy search in this process; nothing persists",
        aliases=("inmemory", "memory"),
    )
    register(
        "sqlite",
        _sqlite_store,
        description="one SQLite file under .deckhand/index, persistent, exact NumPy search (default)",
        aliases=("sqlite3",),
        uses_base_dir=True,
    )


@hookimpl
def register_keyword_strategies(register: Register) -> None:
    register("bm25", _bm25, description="in-process BM25 (sparse postings, English stemmer + stopwords)")
