"""What ``deckhand_list_tools`` says: each tool's state, source, searchable item count and last ingest; the memory."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deckhand.calls.call_models import MemoryStatus, ToolStatus
from deckhand.calls.slots import Slot
from deckhand.calls.write_calls import is_writable
from deckhand.ingest.discovery import display_path
from deckhand.tools.tool_io import tool_function


def tool_status(name: str, slot: Slot, *, count: int, source: Path) -> ToolStatus:
    """What ``deckhand_list_tools`` says about tool ``name``, whose chunk count was just read as ``count``."""
    tool = slot.tool
    outage = slot.outage
    if outage is not None:
        state = "unreachable"  # also while a retry runs: the outage text says "retrying now"
    elif slot.ingesting:
        state = "ingesting"
    elif slot.ready:
        state = "ready"
    elif slot.error:
        state = "failed"
    else:
        state = "pending"
    said = None
    if outage is not None:
        kept = f"the last index ({count} searchable items) is kept" if slot.ready else "nothing is indexed yet"
        said = f"{outage.describe(time.monotonic())}; {kept}; searches answer again once it is back"
    stamp = tool.last_ingest_time
    report = tool.last_report
    return ToolStatus(
        name=name,
        type=tool.config.type,
        description=tool_function(tool)["description"],
        source=_shown(tool, source),
        state=state,
        provider=tool.provider,
        document_count=count,
        files=slot.entries[0] if slot.entries is not None else None,
        agent_documents=slot.entries[1] if slot.entries is not None else None,
        writable=is_writable(tool),
        last_ingest_time=datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds") if stamp else None,
        last_ingest=report.summary() if report is not None else None,
        error=slot.error,
        outage=said,
        search_note=slot.search_note,
    )


def _shown(tool: Any, source: Path) -> str:
    """The source as results show files: relative to agent.yaml's folder when inside it, else absolute."""
    path = Path(os.path.abspath(source))
    base = tool.base_dir
    return display_path(path, base) if base is not None else path.as_posix()


def listing_text(statuses: Sequence[ToolStatus], memory: MemoryStatus | None) -> str:
    """One line per tool (and one for the memory): the listing's text."""
    lines = []
    for s in statuses:
        when = s.last_ingest_time or ("unknown" if s.document_count else "never")
        count = f"{s.document_count} searchable items"
        if s.files is not None and s.agent_documents is not None:
            count += f" ({s.files} files, {s.agent_documents} added by agents; writable)"
        line = f"{s.name} ({s.type}): {s.state}, {count} from {s.source}, last ingest {when}"
        if s.outage:
            line += f"; {s.outage}"
        if s.error:
            line += f"; error: {s.error}"
        if s.search_note:
            line += f"; {s.search_note}"
        lines.append(line)
    if memory is not None:
        lines.append(f"memory ({memory.backend}): {memory.decisions} decision(s), agent {memory.agent_id}")
    return "\n".join(lines) or "no tools"
