"""The Index page: what each tool holds (from the ``deckhand_list_tools`` listing) and its ingests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deckhand_ui.workbench import IngestJob, Workbench

#: Skipped or failed files listed per tool (the count says how many more there are).
MAX_SKIPPED = 200
#: The retrieval settings shown per tool (what a person tuning retrieval changes; never the database's, which
#: may hold a connection string).
SETTINGS = (
    "top_k", "search_mode", "weights", "fusion", "rrf_k", "results", "min_score", "keyword_strategy", "chunker",
    "chunk_size", "chunk_overlap", "reranker", "rerank_top_n", "contextual_embeddings", "writable",
)  # fmt: skip


@dataclass
class ToolRow:
    name: str
    status: Any
    model: str
    store: str
    settings: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    more_skipped: int = 0
    job: IngestJob | None = None


def index_page(bench: Workbench) -> dict[str, Any]:
    """Each tool of the main config: its listing entry, model, store and the files its last ingest skipped."""
    box = bench.main
    _, listing = box.list_tools()
    rows = []
    for status in listing.tools:
        tool = box.tool(status.name)
        config = tool.config
        model = getattr(config, "embedding_model", None)
        database = getattr(config, "database", None)
        report = getattr(tool, "last_report", None)
        left = [*report.failed, *report.skipped] if report is not None else []
        rows.append(
            ToolRow(
                name=status.name,
                status=status,
                model=str(getattr(model, "name", model) or "the default embedder"),
                store=status.provider or str(getattr(database, "provider", "") or "?"),
                settings=settings_of(config, box.redact),
                skipped=[box.redact(f"{s.display}: {s.reason}") for s in left[:MAX_SKIPPED]],
                more_skipped=max(len(left) - MAX_SKIPPED, 0),
                job=bench.jobs.get(status.name),
            )
        )
    return {"rows": rows, "memory": listing.memory, "config": bench.main_label}


def settings_of(config: Any, redact: Any) -> list[tuple[str, str]]:
    """The tool's retrieval settings of :data:`SETTINGS` as agent.yaml (or its defaults) gives them."""
    shown = []
    for key in SETTINGS:
        if not hasattr(config, key):
            continue
        value = getattr(config, key)
        if value is None:
            continue
        if hasattr(value, "model_dump"):
            value = value.model_dump(exclude_none=True, mode="json")
        elif hasattr(value, "value"):  # an enum
            value = value.value
        shown.append((key, redact(str(value))[:300]))
    return shown
