"""Result budgets and cursors: an answer cut to the client's budget, with a signed cursor to the next page."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

from deckhand.calls.call_models import CallError, ResultOut, SearchArguments, SearchOutput
from deckhand.calls.output import stale_line
from deckhand.limits import DEFAULT_RESULT_BUDGET, MAX_CURSOR_CHARS
from deckhand.tools.hierarchical_results import format_hierarchical_results
from deckhand.tools.tool_io import format_results
from deckhand.types import DefinitionRef, SearchResult, SectionRef

#: Characters per token of the estimate (a conservative average for English text and code).
CHARS_PER_TOKEN = 4
#: Seconds a cursor stays valid.
CURSOR_TTL = 3600
#: Marker that ends a result cut to fit the budget.
CUT_MARKER = "[... cut to fit the result budget; deckhand_read its uri for the rest]"

_KEY = secrets.token_bytes(32)  # per process (a cursor from an earlier server is refused) until use_cursor_secret
#: What a shared secret is bound to before it becomes the signing key (so the key signs cursors and nothing else).
_KEY_PURPOSE = b"deckhand search cursor key v1"
_DIGEST = 8  # bytes naming one given result


def use_cursor_secret(secret: str | None) -> None:
    """Sign cursors with a key derived from ``secret`` (processes given the same secret accept each other's
    cursors), or, with None, with a new random key of this process. The secret itself is never kept."""
    global _KEY
    _KEY = secrets.token_bytes(32) if secret is None else hmac.new(secret.encode(), _KEY_PURPOSE, "sha256").digest()


def budget_chars(tokens: int) -> int:
    """The characters a budget of ``tokens`` allows (the estimate of :data:`CHARS_PER_TOKEN`)."""
    return tokens * CHARS_PER_TOKEN


def _search_key(tool: str, args: SearchArguments) -> bytes:
    bound = {
        "tool": tool,
        "query": args.query,
        "top_k": args.top_k,
        "filter": None if args.filter is None else args.filter.model_dump(mode="json", exclude_none=True),
    }
    return hashlib.sha256(json.dumps(bound, sort_keys=True, ensure_ascii=True).encode()).digest()[:16]


def _hit_key(hit: ResultOut) -> bytes:
    text = f"{hit.source}\0{hit.chunk_index}\0{hit.content}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).digest()[:_DIGEST]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_cursor(tool: str, args: SearchArguments, given: Sequence[bytes], now: float | None = None) -> str:
    """A signed cursor for the page after the results named by ``given``."""
    body = _search_key(tool, args) + int(now if now is not None else time.time()).to_bytes(8, "big") + b"".join(given)
    return _b64(body + hmac.new(_KEY, body, hashlib.sha256).digest()[:16])


def open_cursor(tool: str, args: SearchArguments, cursor: str, now: float | None = None) -> set[bytes]:
    """The results a cursor says were given; :class:`CallError` (one line) for a bad, stale or foreign one."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise CallError(f"{tool}: cursor: longer than {MAX_CURSOR_CHARS} characters; pass next_cursor unchanged")
    try:
        raw = _unb64(cursor) if cursor.isascii() else b""
    except ValueError:
        raw = b""
    if _b64(raw) != cursor:  # the last character's unused bits (or stray characters) changed: not as given
        raw = b""
    body, mac = raw[:-16], raw[-16:]
    if (
        len(raw) < 40
        or (len(body) - 24) % _DIGEST
        or not hmac.compare_digest(mac, hmac.new(_KEY, body, hashlib.sha256).digest()[:16])
    ):
        raise CallError(
            f"{tool}: cursor: not one this server gave (or from before a restart, or from a replica with another "
            "DECKHAND_CURSOR_KEY); run the search without a cursor"
        )
    if not hmac.compare_digest(body[:16], _search_key(tool, args)):
        raise CallError(
            f"{tool}: cursor: belongs to another search; send the same query, top_k and filter as the first page"
        )
    issued = int.from_bytes(body[16:24], "big")
    if (now if now is not None else time.time()) - issued > CURSOR_TTL:
        raise CallError(f"{tool}: cursor: expired (older than {CURSOR_TTL} s); run the search again")
    return {body[i : i + _DIGEST] for i in range(24, len(body), _DIGEST)}


def _cost(hit: ResultOut) -> int:
    """Characters ``hit`` takes in the answer as sent (JSON): its structured form, text block and resource link."""
    block = f"[{hit.rank}] Score: {hit.score:.2f} | Source: {hit.source}\n{hit.content}\n\n"
    link = len(json.dumps(hit.uri)) + len(json.dumps(hit.source)) + 160 if hit.uri else 0
    return len(hit.model_dump_json(exclude_none=True)) + 2 + len(json.dumps(block)) + link


def _reserve(tool: str, args: SearchArguments, results: int, found: SearchOutput) -> int:
    """Characters of an answer besides its hits: envelope, query, cursor and note, and any stale-index text."""
    cursor = (24 + 16 + _DIGEST * results) * 4 // 3 + 4
    stale = len(found.stale.model_dump_json()) + 3 * len(found.note or "") if found.stale is not None else 0
    # the cursor three times: next_cursor, the text's last line and the note's
    return 260 + len(tool) + 2 * len(json.dumps(args.query)) + 3 * cursor + len(_more(tool, "")) + stale


def _more(tool: str, cursor: str) -> str:
    """How to get the next page, in the structured answer's note."""
    return (
        f"More results: call {tool} again with the same query, top_k and filter and cursor set to next_cursor "
        f"({cursor})."
    )


def _cut(hit: ResultOut, room: int) -> ResultOut:
    """``hit`` with its content cut (and marked) so that it takes at most ``room`` characters, or as few as it can."""
    low, high = 0, len(hit.content)
    while low < high:  # the longest kept prefix that fits
        middle = (low + high + 1) // 2
        if _cost(hit.model_copy(update={"content": hit.content[:middle] + "\n" + CUT_MARKER, "cut": True})) <= room:
            low = middle
        else:
            high = middle - 1
    return hit.model_copy(update={"content": hit.content[:low] + "\n" + CUT_MARKER, "cut": True})


def page(
    tool: str, args: SearchArguments, text: str, found: SearchOutput, tokens: int, given: set[bytes]
) -> tuple[str, SearchOutput]:
    """The page of ``found`` fitting ``tokens`` after the results ``given``, and its cursor."""
    fresh = [hit for hit in found.results if _hit_key(hit) not in given]
    # After an ingest some given results may be gone from the ranking: never more than top_k in all.
    fresh = fresh[: max(0, len(found.results) - len(given))]
    room = budget_chars(tokens) - _reserve(tool, args, len(found.results) + len(given), found)
    shown: list[ResultOut] = []
    for hit in fresh:
        cost = _cost(hit)
        if shown and cost > room:
            break
        if not shown and cost > room:  # one result larger than the budget: cut it, never drop it
            hit, cost = _cut(hit, room), room
        shown.append(hit)
        room -= cost
    for offset, hit in enumerate(shown, start=len(given) + 1):
        hit.rank = offset
    more = len(shown) < len(fresh)
    cursor = None
    if more:
        delivered = [*given, *(_hit_key(h) for h in fresh[: len(shown)])]
        cursor = make_cursor(tool, args, delivered)
    out = SearchOutput(tool=found.tool, query=found.query, results=shown, next_cursor=cursor, stale=found.stale)
    if not more and not given and not any(hit.cut for hit in shown):
        out.note = found.note  # everything fits: the tool's own text and note, as they are
        return text, out
    stale = stale_line(found.stale) if found.stale is not None else None
    notes = [stale] if stale is not None else []
    if given and shown:
        notes.append(f"These results come after the {len(given)} already given on earlier pages.")
    if cursor is not None:
        notes.append(_more(tool, cursor))
    if not shown:
        notes.append(f"No more results: the {len(given)} found were already given on the earlier pages.")
    out.note = " ".join(notes) or None
    paged = _page_text(shown, len(given), cursor)
    return (f"{stale}\n\n{paged}" if stale is not None else paged), out


def _page_text(shown: list[ResultOut], before: int, cursor: str | None) -> str:
    """A page in the tools' own text format (hierarchical when the hits carry places), then the cursor line."""
    results = [_result(h) for h in shown]
    if any(r.location or r.section_id or r.definitions or r.references for r in results):
        text = format_hierarchical_results(results)
    else:
        text = format_results(results)
    if before:
        text = text.replace(
            f"Found {len(shown)} result(s):", f"Found {len(shown)} result(s) after the {before} already given:", 1
        )
    if cursor is not None:
        text += f"\n\nMore results: call again with the same arguments and cursor: {cursor}"
    return text


def _result(hit: ResultOut) -> SearchResult:
    """``hit`` as the result the text formats read: its line range, symbol and language go back into metadata
    (where :meth:`~deckhand.calls.output.hit_of` lifted them from), so a later page reads as the first."""
    lifted = {"start_line": hit.start_line, "end_line": hit.end_line, "symbol": hit.symbol, "language": hit.language}
    return SearchResult(
        rank=hit.rank,
        score=hit.score,
        source=hit.source,
        chunk_index=hit.chunk_index,
        content=hit.content,
        location=hit.location or "",
        section_id=hit.section_id,
        section_label=hit.section_label,
        definitions=[DefinitionRef(term=d.term, definition=d.definition, source=d.source) for d in hit.definitions],
        references=[
            SectionRef(section_id=r.section_id, location=r.location, source=r.source, resolved=r.resolved)
            for r in hit.references
        ],
        metadata={key: value for key, value in lifted.items() if value is not None},
    )


def budget_of(tool: Any, server_default: int | None) -> int:
    """The budget in tokens of ``tool``'s answers: its ``result_budget:``, else the server's, else the default."""
    own: int | None = tool.config.result_budget
    if own is not None:
        return own
    return server_default if server_default is not None else DEFAULT_RESULT_BUDGET
