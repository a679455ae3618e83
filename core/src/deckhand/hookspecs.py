"""The hook plugins implement: :func:`deckhand_register`, which calls one typed method of the
:class:`~deckhand.registration.Registrar` it receives per component (an example: :mod:`deckhand.registration`).

One hook with a typed method per kind (tox 4's design) rather than a typed hook per kind: a plugin
providing several kinds writes one function, a new kind or a new keyword is a new method or
parameter (mypy checks every call against it, and an unknown keyword fails at load naming the
plugin), and each factory is typed by a Protocol of :mod:`deckhand.registration`. Components
are built lazily: registering is cheap and loads no model or connection. Builtin components
are registered through this same hook (see :mod:`deckhand.builtin`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from deckhand.registration import Registrar

PROJECT = "deckhand"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def deckhand_register(register: Registrar) -> None:
    """Register the plugin's components: ``register.loader(...)``, ``register.chunker(...)``,
    ``register.embedder(...)``, ``register.store(...)``, ``register.keyword_strategy(...)``,
    ``register.context_generator(...)``, ``register.reranker(...)``, ``register.memory_backend(...)``,
    ``register.tool(...)`` and ``register.executor(...)`` (see :class:`deckhand.registration.Registrar`)."""
