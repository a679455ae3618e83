"""Reading definitions out of a tree-sitter syntax tree: which node is a definition, its name, its body and
its signature, whatever the language (the differences are in :mod:`deckhand_code.languages`)."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from deckhand_code.languages import LanguageSpec

#: Node types that name a C/C++ function at the end of its declarator chain.
_DECLARATOR_NAMES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name", "type_identifier"}
)
#: Values that make a JavaScript/TypeScript variable a function (or class) definition.
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class", "class_expression"}
)
#: Longest signature kept (characters): a signature is context, not the code.
SIGNATURE_CHARS = 240


@dataclass(frozen=True)
class Definition:
    """A definition found at a syntax node: ``node`` is the definition itself (inside any wrapper)."""

    node: Node
    kind: str
    name: str
    body: Node | None


def text_of(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def definition_at(node: Node, spec: LanguageSpec) -> Definition | None:
    """The definition ``node`` is (or wraps: a decorated function, an exported class); ``None`` for any other code."""
    if node.type in spec.wrappers:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        candidates = [inner] if inner is not None else list(node.named_children)
        for candidate in candidates:
            found = definition_at(candidate, spec)
            if found is not None:
                return found
        return None
    kind = spec.definitions.get(node.type)
    if kind is None:
        return None
    if node.type in ("lexical_declaration", "variable_declaration"):
        return _variable_function(node, kind)
    name = _name(node, spec)
    if not name:
        return None
    return Definition(node, kind, name, _body(node))


def _variable_function(node: Node, kind: str) -> Definition | None:
    """``const f = (x) => ...`` (JavaScript, TypeScript): a definition when its value is a function or class."""
    for declarator in node.named_children:
        value = declarator.child_by_field_name("value")
        name = declarator.child_by_field_name("name")
        if value is not None and name is not None and value.type in _FUNCTION_VALUES:
            return Definition(node, "class" if "class" in value.type else kind, text_of(name), _body(value))
    return None


def _name(node: Node, spec: LanguageSpec) -> str:
    if node.type == "method_declaration" and spec.name == "go":
        receiver = node.child_by_field_name("receiver")
        name = node.child_by_field_name("name")
        owner = _go_receiver(receiver) if receiver is not None else ""
        return f"{owner}.{text_of(name)}" if owner and name is not None else text_of(name) if name else ""
    if node.type == "type_declaration":  # Go: type X struct {...}
        spec_node = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        name = spec_node.child_by_field_name("name") if spec_node is not None else None
        return text_of(name) if name is not None else ""
    if node.type == "impl_item":  # Rust: impl [Trait for] Type
        target = node.child_by_field_name("type")
        return text_of(target) if target is not None else ""
    name = node.child_by_field_name("name")
    if name is not None:
        return text_of(name).replace("::", ".")
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in _DECLARATOR_NAMES:
        declarator = declarator.child_by_field_name("declarator") or declarator.child_by_field_name("name")
    return text_of(declarator).replace("::", ".") if declarator is not None else ""


def _go_receiver(receiver: Node) -> str:
    """The type a Go method is defined on: ``(s *Server)`` → ``Server``."""
    for parameter in receiver.named_children:
        kind = parameter.child_by_field_name("type")
        while kind is not None and kind.type in ("pointer_type", "generic_type"):
            kind = next((c for c in kind.named_children if "type" in c.type), None)
        if kind is not None:
            return text_of(kind)
    return ""


def _body(node: Node) -> Node | None:
    return node.child_by_field_name("body")


def body_statements(body: Node, spec: LanguageSpec) -> list[Node]:
    """The statements (or members) directly inside ``body``; a Go block's single statement list is opened."""
    children = [c for c in body.named_children]
    if len(children) == 1 and children[0].type == "statement_list":
        children = list(children[0].named_children)
    return children


def signature_of(definition: Definition, source: str, start: int, body_start: int | None) -> str:
    """What a definition says before its body (``def parse(args: list[str]) -> Namespace:``), one line, capped.

    ``start``/``body_start`` are character offsets into ``source`` (the definition's and its body's)."""
    whole = body_start is not None and body_start > start
    head = source[start:body_start] if whole else source[start:].split("\n", 1)[0]
    flat = " ".join(head.split()).rstrip("{ ").rstrip()
    return flat if len(flat) <= SIGNATURE_CHARS else flat[: SIGNATURE_CHARS - 1] + "…"


#: What a chunk that only declares its symbol is (its ``declaration`` metadata): an ``@overload`` signature, a
#: definition in a stub file (``.pyi``, ``.d.ts``), an ``@abstractmethod`` with no body of its own.
OVERLOAD, STUB, ABSTRACT = "overload", "stub", "abstract"
#: Files that only declare what other files implement.
_STUB_SUFFIXES = (".pyi", ".d.ts", ".d.mts", ".d.cts")
#: Statements of a body that does nothing (Python): ``...``, ``pass``, a docstring, ``raise NotImplementedError``.
_EMPTY_STATEMENTS = frozenset({"pass_statement", "expression_statement", "raise_statement", "comment"})


def declaration_of(node: Node, definition: Definition, source: str, language: str) -> str | None:
    """What ``definition`` (found at ``node``, its wrapper if any) only declares, else None: ``stub`` in a stub
    file, ``overload`` for a Python ``@overload`` signature, ``abstract`` for an ``@abstractmethod`` whose body
    does nothing. Such a chunk names what an implementation elsewhere (the next ``def``, a ``.py`` file, a
    subclass) does; search ranks it after that implementation."""
    if is_stub_file(source):
        return STUB
    if language != "python":
        return None
    decorators = [text_of(c).lstrip("@").split("(", 1)[0].strip() for c in node.named_children if c.type == "decorator"]
    names = {d.rsplit(".", 1)[-1] for d in decorators}
    if "overload" in names:
        return OVERLOAD
    if "abstractmethod" in names and _does_nothing(definition.body):
        return ABSTRACT
    return None


def is_stub_file(source: str) -> bool:
    """Whether ``source`` is a stub file (``.pyi``, ``.d.ts``): every chunk of it only declares."""
    return source.lower().endswith(_STUB_SUFFIXES)


def _does_nothing(body: Node | None) -> bool:
    """Whether a Python body holds only a docstring, ``...``, ``pass`` or ``raise NotImplementedError``."""
    if body is None:
        return True
    for statement in body.named_children:
        if statement.type not in _EMPTY_STATEMENTS:
            return False
        if statement.type == "raise_statement" and "NotImplementedError" not in text_of(statement):
            return False
        if statement.type == "expression_statement":
            inner = statement.named_children[0] if statement.named_children else None
            if inner is None or inner.type not in ("string", "ellipsis", "concatenated_string"):
                return False
    return True
