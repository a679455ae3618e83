"""What an agent can call, independent of the protocol that carries the call: the :class:`Toolbox` answering calls and
the catalog of them that the MCP server and the Semantic Kernel plugin expose."""
