"""deckhand's own components, registered through the same hook as external plugins.

Each factory is the implementation's own (``TokenChunker.from_options``, ``BM25Index.from_options``,
...), typed by the Protocols of :mod:`deckhand.registration`. Registering loads no model: the
modules imported here are those that define the options models anyway; the stores, the tools
and the memory backend are imported when first built (:func:`deckhand.registration.deferred`).
"""

from __future__ import annotations

from deckhand.hookspecs import hookimpl
from deckhand.registration import Registrar, deferred


@hookimpl
def deckhand_register(register: Registrar) -> None:
    from deckhand.chunking.structure import StructureChunker, StructureChunkerOptions
    from deckhand.chunking.token import TokenChunker, TokenChunkerOptions
    from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
    from deckhand.config.vectorstore import VectorStoreToolConfig
    from deckhand.context.structural import StructuralContextOptions, build_structural_generator
    from deckhand.embedding.devices import gpu_runtime_installed
    from deckhand.embedding.folder_embedder import FolderEmbedderOptions
    from deckhand.embedding.minilm_onnx import (
        DEFAULT_MODEL_ID,
        DIMENSION,
        LEGACY_MODEL_ID,
        MAX_TOKENS,
        MiniLMOnnxEmbedder,
        minilm_tokenizer,
    )
    from deckhand.ingest.executor import LOCAL, LocalExecutor
    from deckhand.ingest.loaders import MarkItDownLoader, TableLoader, TextLoader
    from deckhand.retrieval.bm25 import BM25Index, BM25Options
    from deckhand.retrieval.folder_rerank import FolderRerankerOptions
    from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
    from deckhand.stores.sqlite.options import SQLiteOptions

    register.loader("text", TextLoader, description="plain text and markdown, encoding detected")
    register.loader("table", TableLoader, description="CSV as a markdown table, JSON as a code block")
    register.loader("markitdown", MarkItDownLoader, description="PDF, Office and HTML via markitdown")

    register.chunker(
        "token",
        TokenChunker.from_options,
        description="fixed token windows with overlap (embedder's tokenizer)",
        options=TokenChunkerOptions,
    )
    register.chunker(
        "structure",
        StructureChunker.from_options,
        description="markdown heading tree: sections, section ids, definitions, cross-references",
        options=StructureChunkerOptions,
    )

    register.context_generator(
        "structural",
        build_structural_generator,
        description="document title and heading chain (offline, default)",
        options=StructuralContextOptions,
    )

    # Described here so a process that never embeds never loads the model (deckhand.building.lazy_embedders);
    # where a GPU runtime is installed the default may run in fp32 on the GPU, so it is described by loading it.
    gpu = gpu_runtime_installed()
    register.embedder(
        "minilm",
        MiniLMOnnxEmbedder.from_options,
        description="all-MiniLM-L6-v2 on onnxruntime (fused graph, int8 products with per-token scales on the "
        "CPU, fp32 on a GPU; 512 tokens), offline (default); 'minilm:OPTIONS' picks precision, window, pooling, device",
        aliases=("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "default"),
        model_id=None if gpu else DEFAULT_MODEL_ID,
        dimension=None if gpu else DIMENSION,
        max_tokens=None if gpu else MAX_TOKENS,
        tokenizer=minilm_tokenizer,
    )
    register.embedder(
        LEGACY_MODEL_ID,
        MiniLMOnnxEmbedder.from_options,
        description="all-MiniLM-L6-v2, its int8-quantized weights computed in fp32 (no int8 products; the name "
        "says int8 for the stored weights), one 512-token window: deckhand's earlier default, kept for the indexes "
        "built with it",
        model_id=LEGACY_MODEL_ID,
        dimension=DIMENSION,
        max_tokens=MAX_TOKENS,
        tokenizer=minilm_tokenizer,
    )

    register.embedder(
        "bert",
        deferred("deckhand.embedding.folder_embedder:FolderEmbedder.from_options"),
        description="a BERT-family model from a local folder (config.json, vocab, model.safetensors: bge, e5, "
        "MiniLM) on the default's fused graph; 'bert:/path/to/folder'",
        options=FolderEmbedderOptions,
    )
    register.reranker(
        "bert-cross-encoder",
        deferred("deckhand.retrieval.folder_rerank:FolderCrossEncoder.from_options"),
        description="a BERT cross-encoder from a local folder (model.safetensors) on onnxruntime, offline",
        options=FolderRerankerOptions,
    )

    register.memory_backend(
        "memory",
        deferred("deckhand.memory.dict_backend:InMemoryBackend.from_options"),
        description="decisions kept in this process only (tests, ephemeral agents); nothing persists",
        aliases=("in-memory", "inmemory"),
    )

    register.store(
        "in-memory",
        deferred("deckhand.stores.inmemory:InMemoryStore.from_config"),
        description="exact NumPy search in this process; nothing persists",
        aliases=("inmemory", "memory"),
    )
    register.store(
        "sqlite",
        deferred("deckhand.stores.sqlite:SQLiteStore.from_config"),
        description="one SQLite file under .deckhand/index, persistent; exact NumPy search, HNSW past 50k records"
        " (default)",
        aliases=("sqlite3",),
        options=SQLiteOptions,
    )

    register.keyword_strategy(
        "bm25",
        BM25Index.from_options,
        description="in-process BM25 (sparse postings, English stemmer + stopwords)",
        options=BM25Options,
    )
    register.keyword_strategy(
        "tantivy",
        TantivyIndex.from_options,
        description="BM25 on a tantivy index beside the store's file (fields, stemming, kept current from the"
        " store's record log)",
        options=TantivyOptions,
    )

    register.tool(
        "vectorstore",
        deferred("deckhand.tools.vectorstore_tool:VectorStoreTool"),
        description="semantic search over a file or directory",
        options=VectorStoreToolConfig,
    )
    register.tool(
        "hierarchical_document",
        deferred("deckhand.tools.hierarchical_tool:HierarchicalDocumentTool"),
        description="hybrid search (dense + keyword + exact) over structured documents",
        options=HierarchicalDocumentToolConfig,
    )

    register.executor(
        LOCAL,
        LocalExecutor.from_options,
        description="this process: a reader thread, chunk worker processes on many cores (default)",
    )
