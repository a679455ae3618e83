"""What an agent can call, whatever protocol carries the call: the :class:`Toolbox` and the catalog of its calls."""
