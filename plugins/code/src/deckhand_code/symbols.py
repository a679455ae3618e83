"""What a source file's chunks define and what they refer to, in the metadata the hierarchical tool reads.

Documents give the hierarchical tool defined terms (``definitions``/``defined_terms``) and numbered sections
that other chunks refer to (``section_ids``/``references``); its definitions index, exact-match index and
cross-reference resolver are built from those keys of the stored records, whatever index stores them. Code
gives the same keys: a definition's chunk defines its name and its symbol path (``circle_area``,
``shapes.circle_area``), its definition being its signature, so an exact identifier finds it and a result
that uses the name carries it; a chunk's ``section_ids`` are its symbol path and the paths around it
(``shapes``, ``shapes.Circle``, ``shapes.Circle.area``); and its ``references`` are the symbols it calls or
imports, resolved to those paths: within the file (``area()``, ``self.area()``), or through the file's
imports of the repository's own modules (``from .shapes import circle_area`` makes ``circle_area(r)`` a
reference to ``shapes.circle_area``). Imports from outside the repository and calls it cannot resolve are
not references: they would name nothing indexed.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import tree_sitter
from deckhand.api import IDENTIFIER
from tree_sitter import Node

from deckhand_code.languages import LanguageSpec, grammar_of
from deckhand_code.syntax import text_of

#: Most references one chunk records (a long module's imports are many; the first ones say enough).
MAX_REFERENCES = 10
#: Shortest name defined as a term on its own (a two-letter name matches too many words).
MIN_TERM_CHARS = 3
#: Receivers that name the object whose class the calling code is in.
_SELF = frozenset({"self", "cls", "this"})

#: Per language family, a tree-sitter query whose matches are calls: ``@callee`` the name called, ``@object``
#: the plain name it is called on, when there is one (``self.area()``, ``shapes.area()``).
_CALLS = {
    "python": "(call function: [(identifier) @callee"
    " (attribute object: (identifier) @object attribute: (identifier) @callee)])",
    "javascript": "(call_expression function: [(identifier) @callee"
    " (member_expression object: [(identifier) (this)] @object property: (property_identifier) @callee)])"
    " (new_expression constructor: (identifier) @callee)",
    "go": "(call_expression function: [(identifier) @callee"
    " (selector_expression operand: (identifier) @object field: (field_identifier) @callee)])",
    "rust": "(call_expression function: [(identifier) @callee"
    " (scoped_identifier path: (identifier) @object name: (identifier) @callee)"
    " (field_expression value: (self) @object field: (field_identifier) @callee)])",
    "java": "(method_invocation object: (_)? @object name: (identifier) @callee)"
    " (object_creation_expression type: (type_identifier) @callee)",
    "c": "(call_expression function: (identifier) @callee)",
    "bash": "(command name: (command_name (word) @callee))",
    "cpp": "(call_expression function: [(identifier) @callee"
    " (field_expression argument: (this) @object field: (field_identifier) @callee)"
    " (qualified_identifier scope: (namespace_identifier) @object name: (identifier) @callee)])",
}
_FAMILY = {"typescript": "javascript", "tsx": "javascript"}


@dataclass(frozen=True)
class Mention:
    """A name used at character ``at``: called (``callee``, on ``owner`` when written ``owner.callee``) or
    imported (``target``: the symbol path it is bound to)."""

    at: int
    callee: str = ""
    owner: str = ""
    target: str = ""


def symbol_ids(symbol: str, package: str = "") -> list[str]:
    """The symbol paths a chunk of ``symbol`` lies in, outermost first: ``a.B.c`` → ``a``, ``a.B``, ``a.B.c``
    (as a document's chunk lies in its numbered sections); with the folder the file is in (``package``), the
    same paths under it too (``pkg.a``, ...), which ``from pkg import a`` then ``a.B()`` names."""
    parts = symbol.split(".")
    ids = [".".join(parts[: i + 1]) for i in range(len(parts))]
    return ids + [f"{package}.{i}" for i in ids] if package and package != parts[0] else ids


def package_of(source: str) -> str:
    """The folder a file is in (``src/pkg/shapes.py`` → ``pkg``); empty at the top."""
    parts = source.replace("\\", "/").split("/")
    return parts[-2] if len(parts) > 1 else ""


def defined_term(symbol: str) -> str:
    """The term a definition's chunk defines: its name when it is shaped like code (``parse_args``,
    ``CliRunner``: what a question names, and no word of prose), else its symbol path (``shapes.Circle.area``,
    ``_config.Timeout``, ``shapes.Circle.__init__``), so that a result whose prose says "timeout" or "area"
    does not list the definition of a ``Timeout`` class or an ``area`` method."""
    name = symbol.rsplit(".", 1)[-1]
    if len(name) < MIN_TERM_CHARS or (name.startswith("__") and name.endswith("__")) or not IDENTIFIER.fullmatch(name):
        return symbol
    return name


def module_of(path: str) -> str:
    """The module name an import path gives (``./shapes.js``, ``../lib/index`` → ``shapes``, ``lib``): the last
    part without its extension, a package's ``index``/``__init__``/``mod`` its folder (as the chunker names
    modules)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if not parts:
        return ""
    stem = parts[-1].split(".", 1)[0]
    if stem in ("__init__", "index", "mod") and len(parts) > 1:
        return parts[-2]
    return stem


class FileSymbols:
    """One file's definitions (symbol path → kind) and the mentions of names in it, resolved per chunk."""

    def __init__(
        self,
        spec: LanguageSpec,
        root: Node,
        source: str,
        definitions: Iterable[str],
        char: Callable[[int], int],
    ) -> None:
        self.spec = spec
        self.folders = frozenset(source.replace("\\", "/").split("/")[:-1])
        self.defined = frozenset(definitions)
        self.top: dict[str, str] = {}
        for symbol in self.defined:
            parts = symbol.split(".")
            if len(parts) == 2:
                self.top[parts[1]] = symbol
        self.bindings: dict[str, str] = {}
        mentions = self._imports(root, char) + self._calls(root, char)
        mentions.sort(key=lambda m: m.at)
        self.mentions = mentions
        self.starts = [m.at for m in mentions]

    def references(self, start: int, end: int, symbol: str) -> list[str]:
        """The symbols the code at characters ``start``..``end`` (of the chunk ``symbol``) calls or imports,
        resolved, each once, in order, at most :data:`MAX_REFERENCES` (the chunk's own symbol left out)."""
        found: dict[str, None] = {}
        first = bisect.bisect_left(self.starts, start)
        last = bisect.bisect_left(self.starts, end)
        for mention in self.mentions[first:last]:
            target = mention.target or self._resolve(mention, symbol)
            if target and target != symbol and not symbol.startswith(target + "."):
                found.setdefault(target, None)
                if len(found) == MAX_REFERENCES:
                    break
        return list(found)

    def _resolve(self, mention: Mention, symbol: str) -> str:
        """What a call names: a method of the calling class (``self.x()``), a module's function through an
        import (``shapes.area()``), an imported name, or a definition of this file; empty when unknown."""
        callee, owner = mention.callee, mention.owner
        if owner in _SELF or not owner:
            for scope in reversed(symbol_ids(symbol)[1:]):  # the calling class, then those around it
                candidate = f"{scope}.{callee}"
                if candidate in self.defined and candidate != symbol:
                    return candidate
            if owner:
                return ""
            return self.bindings.get(callee) or self.top.get(callee, "")
        module = self.bindings.get(owner)
        return f"{module}.{callee}" if module else ""

    # -- what the file mentions ---------------------------------------------------------------

    def _calls(self, root: Node, char: Callable[[int], int]) -> list[Mention]:
        query = calls_query(self.spec)
        if query is None:
            return []
        out = []
        for _, captures in tree_sitter.QueryCursor(query).matches(root):
            callees = captures.get("callee") or []
            owners = captures.get("object") or []
            if callees:
                owner = text_of(owners[0]) if owners else ""
                out.append(Mention(char(callees[0].start_byte), callee=text_of(callees[0]), owner=owner))
        return out

    def _imports(self, root: Node, char: Callable[[int], int]) -> list[Mention]:
        """The file's imports of the repository's own modules, as mentions of what they bind (and the bindings,
        for the calls that use them). Python's and JavaScript/TypeScript's; other languages' are not read."""
        out: list[Mention] = []
        for node in root.named_children:
            if self.spec.name == "python" and node.type in ("import_statement", "import_from_statement"):
                bound = self._python_import(node)
            elif _FAMILY.get(self.spec.name, self.spec.name) == "javascript" and node.type == "import_statement":
                bound = self._script_import(node)
            else:
                continue
            for local, target in bound:
                self.bindings[local] = target
                out.append(Mention(char(node.start_byte), target=target))
        return out

    def _own(self, dotted: str) -> bool:
        """Whether an absolute import names a module of this repository (its first part is a folder above)."""
        return dotted.split(".", 1)[0] in self.folders

    def _python_import(self, node: Node) -> list[tuple[str, str]]:
        bound: list[tuple[str, str]] = []
        if node.type == "import_from_statement":
            module = node.child_by_field_name("module_name")
            written = text_of(module) if module is not None else ""
            if not written.startswith(".") and not self._own(written):
                return []
            last = written.rsplit(".", 1)[-1]
            for name in node.children_by_field_name("name"):
                imported, local = _aliased(name)
                bound.append((local, f"{last}.{imported}" if last else imported))
            return bound
        for name in node.children_by_field_name("name"):
            imported, local = _aliased(name)
            if self._own(imported):
                bound.append((local, imported.rsplit(".", 1)[-1]))
        return bound

    def _script_import(self, node: Node) -> list[tuple[str, str]]:
        source = node.child_by_field_name("source")
        path = text_of(source).strip("'\"`") if source is not None else ""
        if not path.startswith("."):
            return []
        module = module_of(path)
        bound: list[tuple[str, str]] = []
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        for part in clause.named_children if clause is not None else []:
            if part.type == "identifier":  # the default export
                bound.append((text_of(part), module))
            elif part.type == "namespace_import":
                names = [c for c in part.named_children if c.type == "identifier"]
                bound += [(text_of(names[0]), module)] if names else []
            elif part.type == "named_imports":
                for specifier in part.named_children:
                    name = specifier.child_by_field_name("name")
                    alias = specifier.child_by_field_name("alias")
                    if name is not None:
                        local = text_of(alias if alias is not None else name)
                        bound.append((local, f"{module}.{text_of(name)}"))
        return bound


def _aliased(node: Node) -> tuple[str, str]:
    """``(imported name, local name)`` of a Python import's name (``a.b`` binds ``a``; ``x as y`` binds ``y``)."""
    if node.type == "aliased_import":
        name = node.child_by_field_name("name")
        alias = node.child_by_field_name("alias")
        imported = text_of(name) if name is not None else ""
        return imported, text_of(alias) if alias is not None else imported
    written = text_of(node)
    return written, written


def calls_query(spec: LanguageSpec) -> tree_sitter.Query | None:
    """The compiled query of :data:`_CALLS` for ``spec``'s grammar (None: no query for that language)."""
    family = _FAMILY.get(spec.name, spec.name)
    if family not in _CALLS:
        return None
    if spec.name not in _QUERIES:
        _QUERIES[spec.name] = tree_sitter.Query(grammar_of(spec), _CALLS[family])
    return _QUERIES[spec.name]


#: Compiled call queries, by language name.
_QUERIES: dict[str, tree_sitter.Query] = {}
