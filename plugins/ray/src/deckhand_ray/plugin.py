"""Registers executor ``ray`` (entry point ``ray``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deckhand.api import Registrar, hookimpl

from deckhand_ray.options import RayOptions

if TYPE_CHECKING:
    from deckhand.api import ExecutorBase


def _ray(options: RayOptions) -> ExecutorBase:
    """Imports Ray only when an ingest uses it (``deckhand plugins`` and every other command stay fast)."""
    from deckhand_ray.executor import RayExecutor

    return RayExecutor(options)


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.executor(
        "ray",
        _ray,
        description="read and chunk as Ray tasks, embed in Ray actors (GPUs where there are), on a local Ray "
        "or the cluster at $RAY_ADDRESS",
        options=RayOptions,
    )
