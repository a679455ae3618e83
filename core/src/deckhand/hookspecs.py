"""The one hook plugins implement, :func:`deckhand_register`: one typed method of the
:class:`~deckhand.registration.Registrar` per kind (tox 4's design); builtin components use it too."""

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
    """Register the plugin's components through ``register.<kind>(...)`` (:class:`~deckhand.registration.Registrar`)."""
