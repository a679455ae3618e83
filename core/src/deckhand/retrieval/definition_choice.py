"""Which definitions a result carries (issue 31): only from its own document family (its file, its folder or one
above, a file it links to), as plain text, a ``See field.`` pointer replaced by what it points to or left out."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace

from deckhand.chunking.definitions import Definition
from deckhand.chunking.inline_markup import plain_text, redirect_target
from deckhand.retrieval.definition_lookup import DefinitionIndex

#: Redirects followed from one definition (``a``: see ``b``; ``b``: see ``c``) before giving up.
MAX_HOPS = 3
#: Link targets in a result's text: Markdown ``](target)``, RST ```text <target>`_``, ``:doc:``, ``{doc}``.
_LINK_TARGET = re.compile(
    r"\]\(([^()\s#]{1,300})|<([^<>\s`#]{1,300})>`_|(?:\{doc\}|:doc:)`(?:[^`<\n]{0,200}<)?([^`<>\n#]{1,300})>?`"
)


def _path(source: str) -> str:
    """``source`` as a POSIX path (Windows separators too)."""
    return source.replace("\\", "/")


def _stem(path: str) -> str:
    """``path`` without its file extension."""
    root, _ = posixpath.splitext(path)
    return root


def linked_documents(content: str, source: str) -> set[str]:
    """The documents ``content`` (of ``source``) links to, as extensionless paths resolved against its folder."""
    folder = posixpath.dirname(_path(source))
    found: set[str] = set()
    for match in _LINK_TARGET.finditer(content):
        target = next(g for g in match.groups() if g is not None)
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = posixpath.normpath(posixpath.join(folder, target.lstrip("/") if target.startswith("/") else target))
        found.add(_stem(resolved))
    return found


def in_family(definition_source: str, result_source: str, linked: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a definition made in ``definition_source`` may annotate a result of ``result_source`` (see the
    module's text; ``linked`` as :func:`linked_documents` gives them)."""
    definition_path, result_path = _path(definition_source), _path(result_source)
    if definition_path == result_path or _stem(definition_path) in linked:
        return True
    home = posixpath.dirname(definition_path)
    folder = posixpath.dirname(result_path)
    return folder == home or folder.startswith(home.rstrip("/") + "/") or home in ("", ".")


def followed(index: DefinitionIndex, definition: Definition, allow: Callable[[Definition], bool]) -> Definition | None:
    """``definition`` as an agent reads it: its text rendered, a redirect (``See field.``) replaced by the definition
    it points to (``"attribute": see field: …``) among those ``allow`` accepts; None when that is not known."""
    text = plain_text(definition.definition)
    seen = {definition.term.lower()}
    current = definition
    for _ in range(MAX_HOPS + 1):
        target = redirect_target(text)
        if target is None:
            return replace(definition, definition=text if current is definition else f"see {current.term}: {text}")
        if target.lower() in seen:
            return None
        seen.add(target.lower())
        found = index.lookup(target, allow)
        if found is None:
            return None
        current, text = found, plain_text(found.definition)
    return None


def chosen_definitions(
    index: DefinitionIndex, content: str, source: str, limit: int, *, own_terms: set[str] | frozenset[str] = frozenset()
) -> list[Definition]:
    """The definitions a result (``content`` of ``source``) carries, at most ``limit``: terms it uses but does not
    define itself (``own_terms``, lower case), from its own document family, rendered, redirects followed."""
    linked = linked_documents(content, source)
    cache: dict[str, bool] = {}

    def allow(definition: Definition) -> bool:
        if definition.source not in cache:
            cache[definition.source] = in_family(definition.source, source, linked)
        return cache[definition.source]

    found = index.relevant(content, limit=2 * limit + len(own_terms), allow=allow)  # room for redirects left out
    out: list[Definition] = []
    for entry in found:
        if entry.term.lower() in own_terms:
            continue
        shown = followed(index, entry, allow)
        if shown is not None and shown.definition:
            out.append(shown)
    return out[:limit]
