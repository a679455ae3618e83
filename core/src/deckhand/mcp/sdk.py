"""The parts of the ``mcp`` SDK that differ between its 1.x and 2.x lines (both validate camelCase dicts)."""

from __future__ import annotations

import asyncio
import contextlib
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


class PromptSource(Protocol):
    """What answers the prompt requests (:class:`deckhand.mcp.prompts.Prompts`), in wire form."""

    def listing(self) -> list[dict[str, Any]]: ...
    def get(self, name: str, arguments: dict[str, str] | None) -> dict[str, Any]: ...
    def complete(self, prompt: str, argument: str, prefix: str, context: dict[str, str]) -> dict[str, Any]: ...


class Subscriber(Protocol):
    """How a 2025-era session is told of a change (built here from the SDK's session)."""

    async def resource_updated(self, uri: str) -> None: ...
    async def resources_changed(self) -> None: ...


class ChangeHub(Protocol):
    """Who hears of changes (:class:`deckhand.mcp.notifications.Changes`): the sessions and their subscriptions."""

    listen: ListenStreams

    def attach(self) -> None: ...
    def subscribe(self, key: object, subscriber: Subscriber, uri: str) -> None: ...
    def unsubscribe(self, key: object, uri: str) -> None: ...


class ResourceSource(Protocol):
    """What answers the resource requests (:class:`deckhand.mcp.resources.Resources`), in wire form."""

    def listing(self) -> list[dict[str, Any]]: ...
    def templates(self) -> list[dict[str, Any]]: ...
    def read(self, uri: str) -> dict[str, Any]: ...
    def complete(self, template: str, argument: str, prefix: str) -> dict[str, Any]: ...


def _sdk_member(obj: Any, name: str, default: Any = None) -> Any:
    """``obj``'s member ``name`` (``default`` where the installed SDK's object has none): the one place deckhand
    reads what one SDK line has and the other lacks (the probe guard allows this reading, and no other, here)."""
    return getattr(obj, name, default)


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
    changes: ChangeHub | None = None,
    prompts: PromptSource | None = None,
    *,
    subscribe: bool = True,
) -> Any:
    """A low-level ``Server`` answering tools, resources, subscriptions and prompts with the given functions;
    ``subscribe`` False leaves ``resources/subscribe`` out. ``call`` must never raise."""
    if SDK_MAJOR >= 2:
        server = _build_v2(name, server_version, instructions, list_tools, call, resources, changes, prompts)
    else:
        server = _build_v1(name, server_version, instructions, list_tools, call, resources, changes, prompts)
    if changes is not None and resources is not None:
        _declare_changes(server, subscribe)
    return server


def _declare_changes(server: Any, subscribe: bool) -> None:
    """Make ``initialize`` say ``resources: {subscribe: <subscribe>, listChanged: true}`` (both lines otherwise leave
    the flags out, and 1.x says ``subscribe: false`` even with a handler)."""
    from mcp.server.lowlevel import NotificationOptions

    plain = server.create_initialization_options

    def options(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = plain(notification_options or NotificationOptions(resources_changed=True), *args, **kwargs)
        if made.capabilities.resources is not None:
            made.capabilities.resources.subscribe = subscribe
        return made

    server.create_initialization_options = options


class _SessionSubscriber:
    """A 2025-era session, told of changes outside any request (its standalone stream on HTTP)."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def resource_updated(self, uri: str) -> None:
        await self.session.send_resource_updated(uri)

    async def resources_changed(self) -> None:
        await self.session.send_resource_list_changed()


def _subscriber(changes: ChangeHub, session: Any) -> tuple[object, Subscriber]:
    """The key of a 2025-era session (on 2.x its connection) and how to tell it of changes."""
    changes.attach()
    return _sdk_member(session, "_connection", session), _SessionSubscriber(session)


class ListenStreams:
    """The open ``subscriptions/listen`` streams (2026-07-28, SDK 2.x only) and the resource URIs each asked for."""

    #: Most streams open at once.
    MAX_STREAMS = 256

    def __init__(self, on_open: Callable[[], None] | None = None) -> None:
        """``on_open`` is called as each stream opens."""
        self.on_open = on_open
        self.open = 0  # streams open now
        self._uris: dict[str, int] = {}
        self._bus: Any = None
        self._handler: Any = None
        if SDK_MAJOR >= 2:
            from mcp.server.subscriptions import (  # type: ignore[import-not-found,unused-ignore]
                InMemorySubscriptionBus,
                ListenHandler,
            )

            self._bus = InMemorySubscriptionBus()
            self._handler = ListenHandler(self._bus, max_subscriptions=self.MAX_STREAMS)

    def resource_uris(self) -> list[str]:
        """The resource URIs some open stream asked for."""
        return sorted(self._uris)

    async def serve(self, ctx: Any, params: Any) -> Any:
        """The ``subscriptions/listen`` handler: one stream, until the client closes it."""
        uris = list(params.notifications.resource_subscriptions or [])
        for uri in uris:
            self._uris[uri] = self._uris.get(uri, 0) + 1
        self.open += 1
        if self.on_open is not None:
            self.on_open()
        try:
            return await self._handler(ctx, params)
        finally:
            self.open -= 1
            for uri in uris:
                left = self._uris.get(uri, 1) - 1
                if left > 0:
                    self._uris[uri] = left
                else:
                    self._uris.pop(uri, None)

    async def resource_updated(self, uri: str) -> None:
        if self._bus is not None:
            from mcp.server.subscriptions import ResourceUpdated  # type: ignore[import-not-found,unused-ignore]

            await self._bus.publish(ResourceUpdated(uri=uri))

    async def resources_changed(self) -> None:
        if self._bus is not None:
            from mcp.server.subscriptions import ResourcesListChanged  # type: ignore[import-not-found,unused-ignore]

            await self._bus.publish(ResourcesListChanged())


def _build_v1(
    name: str,
    server_version: str,
    instructions: str,
    list_tools: ListTools,
    call: CallTool,
    resources: ResourceSource | None,
    changes: ChangeHub | None,
    prompts: PromptSource | None,
) -> Any:
    server: Any = Server(name, version=server_version, instructions=instructions)

    async def on_list() -> list[Any]:
        return [tool(d) for d in list_tools()]

    async def on_call(tool_name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        token = _sdk_member(ctx.meta, "progressToken") if ctx.meta is not None else None

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
            # a walk of the source or a look at a tool's sections: off the event loop
            found = await asyncio.to_thread(
                _completion, resources, prompts, ref, argument.name, argument.value, context
            )
            return mcp_types.Completion.model_validate(found)

        server.completion()(on_complete)
        server.list_resources()(on_list_resources)
        server.list_resource_templates()(on_templates)
        server.read_resource()(on_read)
        if changes is not None:
            hub = changes

            async def on_subscribe(uri: Any) -> None:
                hub.subscribe(*_subscriber(hub, server.request_context.session), str(uri))

            async def on_unsubscribe(uri: Any) -> None:
                hub.unsubscribe(_subscriber(hub, server.request_context.session)[0], str(uri))

            server.subscribe_resource()(on_subscribe)
            server.unsubscribe_resource()(on_unsubscribe)
    if prompts is not None:
        shown = prompts

        async def on_list_prompts() -> list[Any]:
            return [mcp_types.Prompt.model_validate(p) for p in shown.listing()]

        async def on_get_prompt(prompt_name: str, arguments: dict[str, str] | None) -> Any:
            return mcp_types.GetPromptResult.model_validate(shown.get(prompt_name, arguments))

        server.list_prompts()(on_list_prompts)
        server.get_prompt()(on_get_prompt)
    return server


def _build_v2(
    name: str,
    server_version: str,
    instructions: str,
    list_tools: ListTools,
    call: CallTool,
    resources: ResourceSource | None,
    changes: ChangeHub | None,
    prompts: PromptSource | None,
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
            argument = params.argument
            found = await asyncio.to_thread(
                _completion, resources, prompts, params.ref, argument.name, argument.value, params.context
            )
            return mcp_types.CompleteResult.model_validate({"completion": found})

        handlers = {
            "on_completion": on_complete,
            "on_list_resources": on_list_resources,
            "on_list_resource_templates": on_templates,
            "on_read_resource": on_read,
        }
        if changes is not None:
            hub = changes

            async def on_subscribe(ctx: Any, params: Any) -> Any:
                hub.subscribe(*_subscriber(hub, ctx.session), str(params.uri))
                return mcp_types.EmptyResult()

            async def on_unsubscribe(ctx: Any, params: Any) -> Any:
                hub.unsubscribe(_subscriber(hub, ctx.session)[0], str(params.uri))
                return mcp_types.EmptyResult()

            async def on_listen(ctx: Any, params: Any) -> Any:
                hub.attach()
                return await hub.listen.serve(ctx, params)

            handlers |= {
                "on_subscribe_resource": on_subscribe,
                "on_unsubscribe_resource": on_unsubscribe,
                "on_subscriptions_listen": on_listen,
            }
    if prompts is not None:
        shown = prompts

        async def on_list_prompts(ctx: Any, params: Any) -> Any:
            return mcp_types.ListPromptsResult.model_validate({"prompts": shown.listing()})

        async def on_get_prompt(ctx: Any, params: Any) -> Any:
            return mcp_types.GetPromptResult.model_validate(shown.get(params.name, params.arguments))

        handlers |= {"on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt}
    server_class: Any = Server
    return server_class(
        name,
        version=server_version,
        instructions=instructions,
        on_list_tools=on_list,
        on_call_tool=on_call,
        **handlers,
    )


def _completion(
    resources: ResourceSource, prompts: PromptSource | None, ref: Any, argument: str, value: str, context: Any
) -> dict[str, Any]:
    """The ``completion`` wire object for a resource template's or a prompt's reference."""
    if ref.type == "ref/resource":
        return resources.complete(str(ref.uri), argument, value)
    if ref.type == "ref/prompt" and prompts is not None:
        given = _sdk_member(context, "arguments") if context is not None else None
        return prompts.complete(str(ref.name), argument, value, dict(given or {}))
    return {"values": [], "hasMore": False}


def validate_message(line: str) -> None:
    """Raise (a pydantic ``ValidationError``) unless the SDK's stdio transport accepts ``line`` as a message."""
    adapter = _sdk_member(mcp_types, "jsonrpc_message_adapter")  # 2.x
    if adapter is not None:
        adapter.validate_json(line, by_name=False)
    else:  # 1.x
        message: Any = mcp_types.JSONRPCMessage
        message.model_validate_json(line)


def session_manager(app: Any, security: Any, *, stateless: bool = False) -> Any:
    """The SDK's streamable-HTTP manager, with its own session limits off (:mod:`deckhand.mcp.sessions` bounds them on
    both lines); ``stateless`` serves the 2025 revisions without sessions."""
    from mcp.server import streamable_http_manager as manager

    options: dict[str, Any] = {"app": app, "security_settings": security, "stateless": stateless}
    for name in ("session_idle_timeout", "max_sessions"):  # options of 1.30 and 2.x, each with its DEFAULT_
        if _sdk_member(manager, f"DEFAULT_{name.upper()}") is not None:
            options[name] = None
    return manager.StreamableHTTPSessionManager(**options)


def _handshake_versions() -> frozenset[str]:
    """The protocol revisions negotiated by ``initialize`` (2.x; 1.x knows no other kind)."""
    if SDK_MAJOR < 2:
        return frozenset()
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS  # type: ignore[import-not-found,unused-ignore]

    return frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


_HANDSHAKE_VERSIONS = _handshake_versions()


def sessionless(protocol_version: str | None) -> bool:
    """Whether a request of ``protocol_version`` is served without a session (2.x, 2026-07-28 and later)."""
    return SDK_MAJOR >= 2 and protocol_version is not None and protocol_version not in _HANDSHAKE_VERSIONS


def forget_session(manager: Any, session_id: str) -> None:
    """Drop a closed session from the manager's table, where 1.x would keep its transport for good."""
    instances = _sdk_member(manager, "_server_instances")
    if isinstance(instances, dict):
        instances.pop(session_id, None)


def on_close(key: object, callback: Callable[[], None]) -> bool:
    """Call ``callback`` when the 2025-era session ``key`` ends, however; False if its exit stack is not found."""
    stack = _sdk_member(key, "exit_stack") or _sdk_member(key, "_exit_stack")
    if not isinstance(stack, contextlib.AsyncExitStack):
        return False
    stack.callback(callback)
    return True


def live_sessions(manager: Any) -> int | None:
    """Sessions the manager holds (None where it does not say): for tests and diagnostics."""
    instances = _sdk_member(manager, "_server_instances")
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
