"""``deckhand_ingest`` with ``wait: false``: the re-ingest runs in a daemon thread and the call answers at once."""

from __future__ import annotations

import logging
import threading
from typing import Any

from deckhand.calls.call_models import CallError, IngestArguments, IngestOutput

log = logging.getLogger("deckhand.calls")


def start_reingest(toolbox: Any, args: IngestArguments) -> tuple[str, IngestOutput]:
    """Start re-ingesting ``args.tool`` (or every tool) in the background; what was started."""
    if args.tool is not None and args.tool not in toolbox.tool_names:
        known = ", ".join(toolbox.tool_names) or "none"
        raise CallError(f"deckhand_ingest: tool: no tool named {args.tool!r} (tools: {known})")
    names = [args.tool] if args.tool else list(toolbox.tool_names)

    def run() -> None:
        try:
            toolbox.reingest(args)
        except CallError as exc:  # the tool's state and error show in deckhand_list_tools
            log.warning("background ingest: %s", exc)
        except Exception as exc:
            log.error("background ingest failed: %s", toolbox.error_line(exc))

    threading.Thread(target=run, name="deckhand-ingest-call", daemon=True).start()
    text = (
        f"started ingesting {', '.join(names)} in the background; deckhand_list_tools shows the state and, when "
        "done, the last ingest (searches of these tools wait for it)"
    )
    return text, IngestOutput(tools=[], started=names, note=text)
