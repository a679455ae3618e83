"""Semantic Kernel for deckhand: the agent's tools as kernel functions, and SK's vector store connectors as stores.

```python
from deckhand_semantic_kernel import deckhand_plugin
kernel.add_plugin(deckhand_plugin("agent.yaml"))
```

The store bridge (:mod:`deckhand_semantic_kernel.stores`) registers through the ``deckhand``
entry point; this package imports ``semantic_kernel`` (about 1.5 s) only when one of the names
below is used or a bridged store is built, never when deckhand merely loads its plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deckhand_semantic_kernel.plugin import (
        DEFAULT_PLUGIN_NAME,
        deckhand_plugin,
        kernel_method,
        plugin_from_toolbox,
    )

__all__ = ["DEFAULT_PLUGIN_NAME", "deckhand_plugin", "kernel_method", "plugin_from_toolbox"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from deckhand_semantic_kernel import plugin

        return getattr(plugin, name)
    raise AttributeError(f"module 'deckhand_semantic_kernel' has no attribute {name!r}")
