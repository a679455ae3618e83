"""deckhand's MCP server (``deckhand mcp``): an agent config's tools and memory over the Model Context Protocol.

:mod:`~deckhand.mcp.server` maps the calls of :mod:`deckhand.calls` to MCP tools,
:mod:`~deckhand.mcp.transports` serves them on stdio or streamable HTTP,
:mod:`~deckhand.mcp.watch` re-ingests changed sources, :mod:`~deckhand.mcp.sdk` holds what
differs between the ``mcp`` SDK's 1.x and 2.x lines and :mod:`~deckhand.mcp.serving` starts it all.
"""
