"""No module of core asks a component whether it has a member: optional members have defaults in
:mod:`deckhand.bases`, choices that must be visible are capabilities (:mod:`deckhand.capabilities`).

The test reads every module under ``core/src/deckhand`` (except the kits in ``deckhand.testing``,
whose job is to check components for what they must have) and of the front-end plugins, and lists
each probe: ``getattr`` and ``hasattr``; ``isinstance`` against a runtime-checkable Protocol of
:mod:`deckhand.capabilities` or through a variable (``isinstance(store, protocol)``); ``inspect.signature``;
reading ``__module__``; and, in the front ends (the CLI, the MCP server, the toolbox, the Ray
plugin), ``isinstance`` against a class core's component modules define (``SourceTool``). Each must be
in :data:`ALLOWED` with its reason; a new one fails, and so does an allowed one that is gone (the list
stays short and true).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import deckhand
import deckhand.capabilities

SOURCE = Path(deckhand.__file__).parent
ROOT = Path(__file__).resolve().parents[2]

#: ``(module path under deckhand/, the call as ast.unparse writes it)``: why it is allowed.
ALLOWED: dict[tuple[str, str], str] = {
    # the mechanism itself
    ("registration.py", "isinstance(built, base)"): "a new component subclasses its kind's base, checked once",
    ("capabilities.py", "getattr(store, 'capabilities', frozenset())"): "reading what a store declares",
    ("tools/__init__.py", "inspect.signature(method)"): "a tool class's own search, checked once where it is defined",
    # not components: libraries
    ("encoding.py", "getattr(info, '_is_text_encoding', True)"): "a codecs.CodecInfo flag",
    ("ingest/loaders.py", "getattr(converters, name)"): "markitdown's converter classes by name",
    ("mcp/sdk.py", "getattr(obj, name, default)"): "the MCP SDK's objects: the one reading of what 1.x or 2.x lacks",
}

#: ``getattr(<name>, ...)``/``hasattr`` on these are no components: platform flags, exception details, and an
#: object's own attributes.
NOT_COMPONENTS = {"os", "mmap", "exc", "self"}
#: ``isinstance(x, <lower-case name>)`` against these is no probe through a variable.
BUILTIN_TYPES = {"bool", "bytes", "dict", "float", "frozenset", "int", "list", "object", "set", "str", "tuple", "type"}
#: Where components are defined (their classes are what a front end must not check a component against).
COMPONENT_MODULES = (
    "tools/",
    "index/",
    "stores/",
    "ingest/",
    "config/",
    "chunking/",
    "embedding/",
    "retrieval/",
    "context/",
)
#: The front ends: what they are given is a component through its contract, never a concrete class.
FRONT_ENDS = ("cli/", "mcp/", "calls/", "plugins/")
#: Plugins that are front ends (they drive tools built by core), scanned like core's front ends.
FRONT_END_PLUGINS = ("ray",)


def _runtime_protocols() -> set[str]:
    return {
        name
        for name, value in vars(deckhand.capabilities).items()
        if inspect.isclass(value) and getattr(value, "_is_runtime_protocol", False)
    }


def _concrete_classes() -> set[str]:
    """The classes core's component modules define (tools, stores, the ingest, configuration models...), errors
    aside: a front end checking a tool against one of them treats tools not built on it differently."""
    return {
        node.name
        for path in SOURCE.rglob("*.py")
        if path.relative_to(SOURCE).as_posix().startswith(COMPONENT_MODULES)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef) and not node.name.endswith("Error")
    }


def _names(node: ast.expr) -> list[ast.expr]:
    return [n for element in node.elts for n in _names(element)] if isinstance(node, ast.Tuple) else [node]


def _probe(node: ast.AST, relative: str, protocols: set[str], concrete: set[str]) -> bool:
    """Whether ``node`` asks something what it is or has (see the module docstring)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "__module__" and isinstance(node.ctx, ast.Load)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr == "signature" and isinstance(func.value, ast.Name) and func.value.id == "inspect"
    if not isinstance(func, ast.Name):
        return False
    subject = node.args[0] if node.args else None
    if func.id in {"getattr", "hasattr"}:
        return not (isinstance(subject, ast.Name) and subject.id in NOT_COMPONENTS)
    if func.id == "signature":
        return True
    if func.id != "isinstance" or len(node.args) != 2:
        return False
    for kind in _names(node.args[1]):
        name = kind.id if isinstance(kind, ast.Name) else kind.attr if isinstance(kind, ast.Attribute) else ""
        if name in protocols or (isinstance(kind, ast.Name) and name[:1].islower() and name not in BUILTIN_TYPES):
            return True
        if relative.startswith(FRONT_ENDS) and name in concrete:
            return True
    return False


def probes() -> set[tuple[str, str]]:
    """Every probe (see the module docstring) in core's modules and the front-end plugins'."""
    protocols, concrete = _runtime_protocols(), _concrete_classes()
    found: set[tuple[str, str]] = set()
    sources = [(SOURCE, ""), *((ROOT / "plugins" / name / "src", f"plugins/{name}/") for name in FRONT_END_PLUGINS)]
    for top, prefix in sources:
        for path in sorted(top.rglob("*.py")):
            relative = prefix + path.relative_to(top).as_posix()
            if relative.startswith("testing/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if _probe(node, relative, protocols, concrete):
                    found.add((relative, ast.unparse(node)))
    return found


def test_no_new_component_probe() -> None:
    new = sorted(probes() - ALLOWED.keys())
    assert not new, (
        "core probes components (give the member a default in deckhand.bases, or declare a capability): "
        + "; ".join(f"{path}: {code}" for path, code in new)
    )


def test_allowlist_has_no_stale_entry() -> None:
    stale = sorted(ALLOWED.keys() - probes())
    assert not stale, "remove from ALLOWED (no longer in the code): " + "; ".join(f"{p}: {c}" for p, c in stale)


def test_the_scan_finds_a_probe() -> None:
    """The scan itself works: it sees the one check that a new component subclasses its kind's base."""
    assert ("registration.py", "isinstance(built, base)") in probes()


def test_the_scan_sees_every_kind_of_probe() -> None:
    """Through a variable, a signature, a module name, and a concrete class in a front end; not a class's own
    attribute, a plain type, or a concrete class where components are built."""
    protocols, concrete = _runtime_protocols(), {"SourceTool"}

    def seen(code: str, where: str = "calls/x.py") -> bool:
        return any(_probe(node, where, protocols, concrete) for node in ast.walk(ast.parse(code)))

    assert seen("isinstance(store, protocol)")
    assert seen("isinstance(store, (Record, protocol))")
    assert seen("inspect.signature(tool.search_results_sync)")
    assert seen("signature(tool.search)")
    assert seen("type(tool).format_results.__module__.startswith('deckhand.')")
    assert seen("isinstance(tool, SourceTool)") and seen("isinstance(tool, base.SourceTool)")
    assert seen("isinstance(index, NativeKeywordSearch)", "tools/x.py") and seen(
        "getattr(tool, 'x', None)", "tools/x.py"
    )
    assert not seen("isinstance(tool, SourceTool)", "tools/x.py")
    assert not seen("getattr(self, field)") and not seen("isinstance(value, (str, int))")
    assert not seen("factory.__module__ = module")


def test_a_new_probe_is_not_allowed_beside_an_allowed_one() -> None:
    """The allowlist names calls, not modules: a second SDK reading in ``mcp/sdk.py`` written any other way than
    through its one function, or a signature read back in ``tools/tool_io.py``, is a new probe."""
    protocols, concrete = _runtime_protocols(), _concrete_classes()
    for where, code in (
        ("mcp/sdk.py", "getattr(session, '_connection', session)"),
        ("mcp/sdk.py", "inspect.signature(StreamableHTTPSessionManager.__init__)"),
        ("tools/tool_io.py", "inspect.signature(tool.search_results_sync)"),
        ("tools/__init__.py", "inspect.signature(tool.search_text_sync)"),
        ("cli/tools.py", "hasattr(tool, 'filter')"),
    ):
        found = {(where, ast.unparse(n)) for n in ast.walk(ast.parse(code)) if _probe(n, where, protocols, concrete)}
        assert found and not found & ALLOWED.keys(), (where, code)


def test_the_allowlist_is_short() -> None:
    assert len(ALLOWED) <= 10, sorted(ALLOWED)
