"""Semantic Kernel functions for a deckhand agent config.

```python
from deckhand_semantic_kernel import deckhand_plugin
kernel.add_plugin(deckhand_plugin("agent.yaml"))
```
"""

from __future__ import annotations

from deckhand_semantic_kernel.plugin import DEFAULT_PLUGIN_NAME, deckhand_plugin, kernel_method, plugin_from_toolbox

__all__ = ["DEFAULT_PLUGIN_NAME", "deckhand_plugin", "kernel_method", "plugin_from_toolbox"]
