"""No module of core asks a component whether it has a member: optional members have defaults in
:mod:`deckhand.bases`, choices that must be visible are capabilities (:mod:`deckhand.capabilities`).

The test reads every module under ``core/src/deckhand`` (except the kits in ``deckhand.testing``,
whose job is to check components for what they must have) and lists each ``getattr``, ``hasattr``
and ``isinstance`` against a runtime-checkable Protocol of :mod:`deckhand.protocols`. Each must be
in :data:`ALLOWED` with the reason it is no component probe; a new one fails, and so does an
allowed one that is gone (the list stays short and true).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import deckhand
import deckhand.protocols

SOURCE = Path(deckhand.__file__).parent

#: ``(module path under deckhand/, the call as ast.unparse writes it)``: why it is allowed.
ALLOWED: dict[tuple[str, str], str] = {
    # the mechanism itself
    ("bases.py", "getattr(component, name, None)"): "the adapters: the one reading of optional members",
    ("capabilities.py", "getattr(store, name, None)"): "the kit's check that a declared capability's methods exist",
    ("capabilities.py", "getattr(protocol, '__protocol_attrs__', None)"): "a Protocol's members (Python 3.12+)",
    ("protocols.py", "getattr(store, 'capabilities', frozenset())"): "reading what a store declares",
    ("tools/__init__.py", "isinstance(tool, Tool)"): "build_tool checks a new tool once",
    ("tools/__init__.py", "hasattr(tool, m)"): "its one-line error names what it lacks",
    ("tools/__init__.py", "getattr(Tool, '__annotations__', {})"): "the Tool Protocol's own members",
    # not components: configuration models, modules, libraries
    ("builtin.py", "getattr(target, part)"): "resolves a dotted import path",
    ("plugins.py", "getattr(self.pm.hook, hook_name)"): "pluggy's hook caller by name",
    ("config/base.py", "getattr(self, field)"): "a pydantic model's own declared field",
    ("config/options.py", "getattr(options, name)"): "a pydantic model's declared fields",
    ("encoding.py", "getattr(info, '_is_text_encoding', True)"): "a codecs.CodecInfo flag",
    ("ingest/loaders.py", "getattr(converters, name)"): "markitdown's converter classes by name",
    ("mcp/sdk.py", "getattr(ctx.meta, 'progressToken', None)"): "the MCP SDK's request metadata",
    ("mcp/sdk.py", "getattr(manager, '_server_instances', None)"): "the MCP SDK's session manager (1.x)",
    ("mcp/sdk.py", "getattr(mcp_types, 'jsonrpc_message_adapter', None)"): "the MCP SDK's types module (2.x)",
    ("mcp/sdk.py", "getattr(context, 'arguments', None)"): "the MCP SDK's completion context (absent on 1.x)",
    ("mcp/sdk.py", "getattr(session, '_connection', session)"): "the MCP SDK's session object (2.x wraps it)",
    ("mcp/sdk.py", "getattr(key, 'exit_stack', None)"): "the MCP SDK's connection (2.x): when its session ends",
    ("mcp/sdk.py", "getattr(key, '_exit_stack', None)"): "the MCP SDK's session (1.x): when it ends",
    ("stores/sqlite/store.py", "getattr(config, 'options', None)"): "a database: block or None, not a component",
    ("stores/sqlite/file.py", "getattr(config, 'connection_string', None)"): "a database: block or None",
    ("stores/sqlite/file.py", "getattr(config, 'index_name', 'deckhand_vectors')"): "a database: block or None",
    # a tool type's settings: its config is its plugin's own model, of any shape (ToolConfig lists four fields)
    ("agents/catalog.py", "getattr(tool.config, 'top_k', None)"): "a top_k setting shown as the default",
    ("cli/retrieval_cases.py", "getattr(tool.config, 'top_k', None)"): "a top_k setting, for the report",
    ("agents/reading.py", "getattr(tool.config, 'encoding', 'auto')"): "an encoding setting the reader honours",
    ("agents/reading.py", "getattr(tool.config, 'max_file_size', None)"): "a max_file_size the reader honours",
    ("agents/toolbox.py", "getattr(tool.config, 'database', None)"): "a database: block whose URL secrets are masked",
    ("agents/toolbox.py", "getattr(database, 'connection_string', None)"): "the same block's URL",
}

#: ``getattr(<name>, ...)``/``hasattr`` on these are no components: platform flags and exception details.
NOT_COMPONENTS = {"os", "mmap", "exc"}


def _runtime_protocols() -> set[str]:
    return {
        name
        for name, value in vars(deckhand.protocols).items()
        if inspect.isclass(value) and getattr(value, "_is_runtime_protocol", False)
    }


def _names(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Tuple):
        return [n for element in node.elts for n in _names(element)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def probes() -> set[tuple[str, str]]:
    """Every getattr/hasattr call, and every isinstance against a runtime Protocol, in core's modules."""
    protocols = _runtime_protocols()
    found: set[tuple[str, str]] = set()
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE).as_posix()
        if relative.startswith("testing/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            name = node.func.id
            subject = node.args[0] if node.args else None
            if name in {"getattr", "hasattr"} and isinstance(subject, ast.Name) and subject.id in NOT_COMPONENTS:
                continue
            if name in {"getattr", "hasattr"} or (
                name == "isinstance" and len(node.args) == 2 and protocols & set(_names(node.args[1]))
            ):
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
    """The scan itself works: it sees the adapters' one reading of optional members."""
    assert ("bases.py", "getattr(component, name, None)") in probes()
