"""The size and depth limits on the untrusted arguments an LLM sends deckhand, in one place (docs/security.md)."""

from __future__ import annotations

from typing import Any

#: Most characters of a search query (a question is a few hundred; embedders read 256-512 tokens).
MAX_QUERY_CHARS = 8_000
#: Most characters of all the strings and keys of one call's arguments (a memory decision is at most 100 KB).
MAX_ARGUMENTS_CHARS = 256_000
#: Deepest nesting of objects and lists in one call's arguments (a filter needs 4).
MAX_DEPTH = 32
#: Most entries of one list or object in a call's arguments.
MAX_ITEMS = 1_000
#: Most characters of one filter, its keys and values together.
MAX_FILTER_CHARS = 16_000
#: Most characters of one glob pattern of a filter (``path``, a field's ``glob``).
MAX_GLOB_CHARS = 512
#: Most characters of a resource URI (``resources/read``, ``deckhand_read``).
MAX_URI_CHARS = 4_096
#: Most characters of a short name argument (a tool's name).
MAX_NAME_CHARS = 256
#: Most bytes one ``resources/read`` or ``deckhand_read`` loads from a file (also at most ``max_file_size``).
MAX_READ_BYTES = 32_000_000


class LimitExceeded(ValueError):
    """A value is larger or deeper than its limit; the message is one line naming where and the limit."""


def check_shape(value: Any, where: str, *, max_chars: int = MAX_ARGUMENTS_CHARS) -> None:
    """:class:`LimitExceeded` naming ``where`` when ``value`` nests deeper than :data:`MAX_DEPTH`, holds more than
    :data:`MAX_ITEMS` entries or more than ``max_chars`` characters; iterative, stopping at the first excess."""
    chars = 0
    pending: list[tuple[Any, int, str]] = [(value, 0, where)]
    while pending:
        item, depth, place = pending.pop()
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise LimitExceeded(f"{place}: nested more than {MAX_DEPTH} levels deep; send a flatter value")
            if len(item) > MAX_ITEMS:
                raise LimitExceeded(f"{place}: {len(item):,} entries in one list or object; at most {MAX_ITEMS:,}")
            if isinstance(item, dict):
                chars += sum(len(k) if isinstance(k, str) else 0 for k in item)
                pending.extend((v, depth + 1, str(k) if depth == 0 else place) for k, v in item.items())
            else:
                pending.extend((v, depth + 1, place) for v in item)
        if chars > max_chars:
            raise LimitExceeded(f"{place}: more than {max_chars:,} characters in all; send less")


#: Most characters of a search's ``cursor`` argument (one names at most ``top_k`` results already given).
MAX_CURSOR_CHARS = 4_096
#: Tokens a search answer or a resource read may take unless configured (MCP clients cut at about 25k).
DEFAULT_RESULT_BUDGET = 20_000
#: Fewest tokens a result budget may be set to (the envelope of an answer takes about 150).
MIN_RESULT_BUDGET = 200
#: Most tokens a result budget (``result_budget:``, ``--result-budget``) may be set to.
MAX_RESULT_BUDGET = 1_000_000

#: Most characters of a document an agent adds (``deckhand_add``'s ``text``).
MAX_DOCUMENT_CHARS = 100_000
#: Most characters of an added document's ``title``.
MAX_TITLE_CHARS = 512
#: Most fields of an added document's ``metadata``, and characters of its keys and values together.
MAX_METADATA_FIELDS = 32
MAX_METADATA_CHARS = 4_000
#: Most characters of a document id (``deckhand_add``'s ``id``, ``deckhand_delete``'s ``id``).
MAX_DOCUMENT_ID_CHARS = 64
#: Writes (``deckhand_add``, ``deckhand_delete``) one tool takes per minute unless ``writes_per_minute`` says.
WRITES_PER_MINUTE = 60
#: Most writes per minute ``writes_per_minute`` may allow.
MAX_WRITES_PER_MINUTE = 100_000
