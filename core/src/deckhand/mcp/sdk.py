"""The parts of the ``mcp`` SDK that differ between its 1.x and 2.x lines, in one place.

deckhand supports ``mcp>=1.26,<3``. The wire protocol is the same; what changed at 2.0 is the
low-level server's registration (decorators in 1.x, ``on_*`` constructor arguments in 2.x),
how a handler reaches its request (a context variable in 1.x, a ``ctx`` argument in 2.x),
and the field names of the pydantic types (camelCase in 1.x, snake_case with camelCase
aliases in 2.x). Everything here builds SDK objects from camelCase dictionaries, which both
lines validate, so the rest of the server never touches a version-specific name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any, Protocol

import mcp.types as mcp_types
from mcp.server.lowlevel import Server

#: The installed SDK's version and major version.
SDK_VERSION = version("mcp")
SDK_MAJOR = int(SDK_VERSION.split(".", 1)[0])

#: Sends one progress notification for the current request (a no-op without a progress token).
Reporter = Callable[[float, float | None, str | None], Awaitable[None]]
ListTools = Callable[[], list[dict[str, Any]]]
CallTool = Callable[[str, dict[str, Any], Reporter], Awaitable[dict[str, Any]]]


class ResourceSource(Protocol):
    """What answers the resource requests (:class:`deckhand.mcp.resources.Resources`), in wire form."""

    def listing(self) -> list[dict[str, Any]]: ...
    def templates(self) -> list[dict[str, Any]]: ...
    def read(self, uri: str) -> dict[str, Any]: ...
    def complete(self, template: str, argument: str, prefix: str) -> dict[str, Any]: ...


def resource_error(code: int, message: str) -> Exception:
    """The SDK's exception that answers a request with a JSON-RPC error ``code`` and ``message``."""
    if SDK_MAJOR >= 2:
        from mcp.shared.exceptions import MCPError  # type: ignore[attr-defined,unused-ignore]

        return MCPError(code, message)  # type: ignore[no-any-return,unused-ignore]
    from mcp.shared.exceptions import McpError  # type: ignore[attr-defined,unused-ignore]

    return McpError(mcp_types.ErrorData(code=code, message=message))  # type: ignore[no-any-return,unused-ignore]


def tool(definition: dict[str, Any]) -> Any:
    """An SDK ``Tool`` from its wire form (camelCase keys)."""
    return mcp_types.Tool.model_validate(definition)


def call_result(payload: dict[str, Any]) -> Any:
    """An SDK ``CallToolResult`` from its wire form (``content``, ``structuredContent``, ``isError``)."""
    return mcp_types.CallToolResult.model_validate(payload)


def build_server(
    name: str,
    server_version: str,
    instructions: str,
    list_tools: ListTools,
    call: CallTool,
    resources: ResourceSource | None = None,
) -> Any:
    """A low-level ``Server`` answering ``tools/list`` and ``tools/call`` with the given functions,
    and the resource requests with ``resources`` when given.

    ``call`` must never raise: it returns the result's wire form, with ``isError`` for failures.
    """
    if SDK_MAJOR >= 2:
        return _build_v2(name, server_version, instructions, list_tools, call, resources)
    return _build_v1(name, server_version, instructions, list_tools, call, resources)


def _build_v1(
    name: str,
    server_version: str,
    instructions: str,
    list_tools: ListTools,
    call: CallTool,
    resources: ResourceSource | None,
) -> Any:
    server: Any = Server(name, version=server_version, instructions=instructions)

    async def on_list() -> list[Any]:
        return [tool(d) for d in list_tools()]

    async def on_call(tool_name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        token = getattr(ctx.meta, "progressToken", None) if ctx.meta is not None else None

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, progress, total, message, related_request_id=str(ctx.request_id)
                )

        return call_result(await call(tool_name, arguments or {}, report))

    server.list_tools()(on_list)
    # The arguments are validated by deckhand itself, so the messages are deckhand's one-liners.
    server.call_tool(validate_input=False)(on_call)
    if resources is not None:
        from mcp.server.lowlevel.helper_types import ReadResourceContents

        async def on_list_resources() -> list[Any]:
            listed = await asyncio.to_thread(resources.listing)  # a store may be asked (agent documents)
            return [mcp_types.Resource.model_validate(r) for r in listed]

        async def on_templates() -> list[Any]:
            return [mcp_types.ResourceTemplate.model_validate(t) for t in resources.templates()]

        async def on_read(uri: Any) -> list[Any]:
            contents = (await asyncio.to_thread(resources.read, str(uri)))["contents"]
            return [
                ReadResourceContents(content=c["text"], mime_type=c.get("mimeType"), meta=c.get("_meta"))
                for c in contents
            ]

        async def on_complete(ref: Any, argument: Any, context: Any) -> Any:
            return mcp_types.Completion.model_validate(_completion(resources, ref, argument.name, argument.value))

        server.completion()(on_complete)
        server.list_resources()(on_list_resources)
        server.list_resource_templates()(on_templates)
        server.read_resource()(on_read)
    return server


def _build_v2(
    name: str,
    server_version: str,
    instructions: str,
    list_tools: ListTools,
    call: CallTool,
    resources: ResourceSource | None,
) -> Any:
    async def on_list(ctx: Any, params: Any) -> Any:
        return mcp_types.ListToolsResult.model_validate({"tools": list_tools()})

    async def on_call(ctx: Any, params: Any) -> Any:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        return call_result(await call(params.name, params.arguments or {}, report))

    handlers: dict[str, Any] = {}
    if resources is not None:

        async def on_list_resources(ctx: Any, params: Any) -> Any:
            listed = await asyncio.to_thread(resources.listing)  # a store may be asked (agent documents)
            return mcp_types.ListResourcesResult.model_validate({"resources": listed})

        async def on_templates(ctx: Any, params: Any) -> Any:
            return mcp_types.ListResourceTemplatesResult.model_validate({"resourceTemplates": resources.templates()})

        async def on_read(ctx: Any, params: Any) -> Any:
            read = await asyncio.to_thread(resources.read, str(params.uri))  # a file read (or a conversion)
            return mcp_types.ReadResourceResult.model_validate(read)

        async def on_complete(ctx: Any, params: Any) -> Any:
            found = _completion(resources, params.ref, params.argument.name, params.argument.value)
            return mcp_types.CompleteResult.model_validate({"completion": found})

        handlers = {
            "on_completion": on_complete,
            "on_list_resources": on_list_resources,
            "on_list_resource_templates": on_templates,
            "on_read_resource": on_read,
        }
    server_class: Any = Server
    return server_class(
        name,
        version=server_version,
        instructions=instructions,
        on_list_tools=on_list,
        on_call_tool=on_call,
        **handlers,
    )


def _completion(resources: ResourceSource, ref: Any, argument: str, value: str) -> dict[str, Any]:
    """The ``completion`` wire object for a reference (only resource templates complete; prompts: none)."""
    template = ref.uri if ref.type == "ref/resource" else None
    if template is None:
        return {"values": [], "hasMore": False}
    return resources.complete(str(template), argument, value)


def validate_message(line: str) -> None:
    """Raise (a pydantic ``ValidationError``) unless the SDK's stdio transport accepts ``line`` as a message."""
    adapter = getattr(mcp_types, "jsonrpc_message_adapter", None)  # 2.x
    if adapter is not None:
        adapter.validate_json(line, by_name=False)
    else:  # 1.x
        message: Any = mcp_types.JSONRPCMessage
        message.model_validate_json(line)


def session_manager(app: Any, security: Any, *, stateless: bool = False) -> Any:
    """The SDK's streamable-HTTP manager, with its own session limits off (2.x has some).

    On 2.x it serves the 2026-07-28 revision's self-contained requests whatever ``stateless`` says;
    ``stateless`` decides how the 2025 revisions are served: with sessions (``Mcp-Session-Id``, which
    deckhand bounds itself, the same way on both lines: :mod:`deckhand.mcp.sessions`), or without
    (every POST answered on its own, so any replica can take any request).
    """
    import inspect

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    options: dict[str, Any] = {"app": app, "security_settings": security, "stateless": stateless}
    accepted = inspect.signature(StreamableHTTPSessionManager.__init__).parameters
    for name in ("session_idle_timeout", "max_sessions"):
        if name in accepted:
            options[name] = None
    return StreamableHTTPSessionManager(**options)


def _handshake_versions() -> frozenset[str]:
    """The protocol revisions negotiated by ``initialize`` (2.x; 1.x knows no other kind)."""
    if SDK_MAJOR < 2:
        return frozenset()
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS  # type: ignore[import-not-found,unused-ignore]

    return frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


_HANDSHAKE_VERSIONS = _handshake_versions()


def sessionless(protocol_version: str | None) -> bool:
    """Whether a request whose ``MCP-Protocol-Version`` header says ``protocol_version`` is served without a
    session by the SDK installed: on 2.x, any revision ``initialize`` does not negotiate (2026-07-28 and
    later; an unknown one is refused by the SDK, also without a session). 1.x serves every request in session
    mode."""
    return SDK_MAJOR >= 2 and protocol_version is not None and protocol_version not in _HANDSHAKE_VERSIONS


def forget_session(manager: Any, session_id: str) -> None:
    """Drop a closed session from the manager's table.

    1.x keeps a terminated session's transport in ``_server_instances`` for the life of the process
    (2.x removes it); this is the one place deckhand reaches into the manager, and a no-op where the
    table is gone.
    """
    instances = getattr(manager, "_server_instances", None)
    if isinstance(instances, dict):
        instances.pop(session_id, None)


def live_sessions(manager: Any) -> int | None:
    """Sessions the manager holds (None where it does not say): for tests and diagnostics."""
    instances = getattr(manager, "_server_instances", None)
    return len(instances) if isinstance(instances, dict) else None


def transport_security(allowed_hosts: list[str] | None) -> Any:
    """DNS-rebinding protection limited to ``allowed_hosts`` (``None``: off, for a server bound elsewhere)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if allowed_hosts is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [f"http://{h}" for h in allowed_hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts, allowed_origins=origins
    )
