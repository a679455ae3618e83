"""Turn a deckhand agent config into a Semantic Kernel plugin.

Every call of :func:`deckhand.calls.catalog.operations` becomes a kernel function: one search
per retrieval tool (named after the tool, described by its ``description``), the ``memory_*``
calls when a memory is configured, and ``deckhand_list_tools`` / ``deckhand_ingest``. Each
parameter is ``Annotated`` with its description and its exact JSON Schema, so the function
definition Semantic Kernel sends to a model is the same one MCP clients see.

A function returns the text an agent reads (the contract's result format for searches). Bad
arguments and failures raise :class:`deckhand.calls.call_models.CallError` with one line; Semantic
Kernel hands that line to the model when it called the function.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Annotated, Any

from deckhand.api import Operation, Toolbox, operations
from semantic_kernel.functions import KernelFunctionFromMethod, KernelPlugin, kernel_function

#: The plugin name used when none is given (functions are then ``deckhand-<name>`` to a model).
DEFAULT_PLUGIN_NAME = "deckhand"


def deckhand_plugin(
    config: str | Path,
    *,
    plugin_name: str = DEFAULT_PLUGIN_NAME,
    ingest: bool = False,
    memory: bool = True,
) -> KernelPlugin:
    """A kernel plugin with the tools (and memory) of the agent config at ``config``.

    Sources are ingested on each tool's first search, or right away with ``ingest=True``.
    ``memory=False`` leaves the memory functions out even when agent.yaml configures one.
    Raises deckhand's ``ConfigError`` (one line) for a bad config.
    """
    toolbox = Toolbox.from_config(config, memory=memory)
    if ingest:
        for name in toolbox.tool_names:
            toolbox.ingest(name)
    return plugin_from_toolbox(toolbox, plugin_name=plugin_name)


def plugin_from_toolbox(
    toolbox: Toolbox, *, plugin_name: str = DEFAULT_PLUGIN_NAME, description: str | None = None
) -> KernelPlugin:
    """A kernel plugin over an existing toolbox (close it with ``toolbox.close()`` when done)."""
    functions = [
        KernelFunctionFromMethod(method=kernel_method(op), plugin_name=plugin_name) for op in operations(toolbox)
    ]
    summary = description or "Retrieval tools over the agent's documents" + (
        " and its long-term memory of decisions" if toolbox.memory is not None else ""
    )
    return KernelPlugin(name=plugin_name, description=summary, functions=functions)


def kernel_method(op: Operation) -> Any:
    """An async function decorated with ``@kernel_function`` whose parameters are ``op``'s arguments."""
    properties: dict[str, Any] = op.input_schema.get("properties", {})
    required = set(op.input_schema.get("required", []))
    parameters = []
    for name, field in op.arguments.model_fields.items():
        if name not in properties:
            continue  # an argument the tool does not offer (a search without filter)
        schema = dict(properties[name])
        # Semantic Kernel reads a string as the description and a dict's keys as parameter metadata;
        # schema_data is the JSON Schema it sends to the model, so it is the catalog's, unchanged.
        metadata = {"description": schema.get("description", ""), "schema_data": schema}
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if name in required else field.default,
                annotation=Annotated[field.annotation, metadata],
            )
        )

    async def call(**kwargs: Any) -> str:
        # Unset optional parameters arrive as None (or not at all): leave them out so defaults apply.
        arguments = {k: v for k, v in kwargs.items() if v is not None or k in required}
        text, _ = await asyncio.to_thread(op.call, arguments)
        return text

    call.__name__ = op.name
    call.__doc__ = op.description
    returns = Annotated[str, "The answer as text (for searches: ranked results with score and source)."]
    call.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    return kernel_function(call, name=op.name, description=op.description)
