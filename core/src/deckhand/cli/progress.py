"""Progress bars for ingestion, drawn with rich on stderr (silent with --quiet or no terminal)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class RichProgress:
    """Implements the pipeline's ``Progress`` protocol with one bar per stage."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        console = Console(stderr=True)
        self.enabled = enabled and console.is_terminal
        self._bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not self.enabled,
        )
        self._label = label
        self._task: TaskID | None = None

    def __enter__(self) -> RichProgress:
        self._bars.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._bars.stop()

    def stage(self, name: str, total: int) -> None:
        if self._task is not None:
            self._bars.update(self._task, visible=False)
        self._task = self._bars.add_task(f"{self._label}: {name}", total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._bars.advance(self._task, n)
