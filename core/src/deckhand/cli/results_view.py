"""How ``deckhand search`` and ``deckhand chat`` show results to a person, on a terminal or in plain text."""

from __future__ import annotations

from collections.abc import Sequence

import click
from rich.console import Console
from rich.text import Text

from deckhand.cli.snippets import ELLIPSIS, QueryTerms, Segment, code_snippet, highlighted, snippet
from deckhand.ingest.lines import START_LINE
from deckhand.ingest.places import ATTACHMENT, END_PAGE, PAGE
from deckhand.printable import printable, printable_block
from deckhand.tools.hierarchical_results import listed_definitions
from deckhand.tools.tool_io import SearchResult, symbol_note

HIT = "bold yellow"
HEAD = "bold"
SOURCE = "cyan"
FAINT = "dim"


def where(result: SearchResult) -> str:
    """The result's file and place in it: ``docs/guide.md:42``, ``report.pdf (page 3)``, the attachment of a mail
    (``message.eml > report.pdf (page 2)``), or the path alone."""
    meta = result.metadata or {}
    text = printable(result.source)
    attachment = result.text(ATTACHMENT)
    if attachment is not None:
        text += f" > {printable(attachment)}"
    line, page = meta.get(START_LINE), meta.get(PAGE)
    if isinstance(line, int) and not isinstance(line, bool):
        return f"{text}:{line}"
    if isinstance(page, int) and not isinstance(page, bool):
        last = result.line(END_PAGE)
        return f"{text} (pages {page}-{last})" if last is not None and last > page else f"{text} (page {page})"
    return text


def result_text(result: SearchResult, terms: QueryTerms, *, full: bool = False) -> Text:
    """One result: its head line, then its best passage (or, with ``full``, its whole content)."""
    out = Text()
    out.append(f"[{result.rank}] Score: {result.score:.2f}", style=HEAD)
    out.append(" | Source: ")
    out.append(where(result), style=SOURCE)
    location = result.location
    section = result.section_label or result.section_id
    if location:
        out.append(f" | Location: {printable(location)}", style=FAINT)
    if section:
        out.append(f" | Section: {printable(section)}", style=FAINT)
    out.append(symbol_note(result), style=FAINT)
    out.append("\n")
    code = result.text("language") is not None or result.text("symbol") is not None
    if full:
        segments = highlighted(result.content, terms)
    elif code:  # source code reads by its lines: whole lines, breaks and indentation kept
        segments = code_snippet(result.content, terms)
    else:
        segments = snippet(result.content, terms)
    _append(out, segments, block=full or code)
    for line in _extras(result):
        out.append("\n" + line, style=FAINT)
    return out


def results_text(results: Sequence[SearchResult], query: str, *, full: bool = False) -> Text:
    """The count line, then each result, separated by blank lines."""
    terms = QueryTerms(query)
    out = Text(f"Found {len(results)} result(s):")
    for result in results:
        out.append("\n\n")
        out.append_text(result_text(result, terms, full=full))
    return out


def _append(out: Text, segments: list[Segment], *, block: bool) -> None:
    clean = printable_block if block else printable
    for segment in segments:
        if segment.hit:
            out.append(clean(segment.text), style=HIT)
        elif ELLIPSIS in segment.text and segment.text.strip() == ELLIPSIS:
            out.append(segment.text, style=FAINT)
        else:
            out.append(clean(segment.text))


def _extras(result: SearchResult) -> list[str]:
    """The definitions and resolved references of a ``hierarchical_document`` result, as agents see them."""
    lines: list[str] = []
    definitions, references = listed_definitions(result), result.references
    if definitions:
        lines.append("Definitions:")
        lines += [f'  - "{printable(d.term)}": {printable(d.definition)}' for d in definitions]
    if references:
        lines.append("References:")
        for ref in references:
            place = printable(ref.location) if ref.resolved else "not found in the indexed documents"
            lines.append(f"  - {printable(ref.section_id)}: {place}")
    return lines


class Output:
    """Where the CLI prints results: rich on a terminal, plain text elsewhere (the console made on first use)."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = Console(highlight=False, markup=False, emoji=False)
        return self._console

    @property
    def styled(self) -> bool:
        return self.console.is_terminal

    def print(self, text: Text | str, *, style: str | None = None) -> None:
        if isinstance(text, str):
            text = Text(text, style=style or "")
        if self.styled:
            self.console.print(text, overflow="fold")
        else:
            click.echo(text.plain)
