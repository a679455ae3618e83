"""What an agent can call, independent of the protocol that carries the call.

:mod:`deckhand.calls.toolbox` holds an agent config's tools and memory and answers calls
(search, memory operations, housekeeping) with validated arguments and one-line errors;
:mod:`deckhand.calls.catalog` lists those calls with their schemas. The MCP server
(:mod:`deckhand.mcp`) and the Semantic Kernel plugin expose the same catalog.
"""
