"""deckhand's MCP server (``deckhand mcp``): an agent config's tools and memory over the Model Context Protocol."""
