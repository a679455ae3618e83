"""What the pages share: the agent configs' toolboxes, the question sets, and the ingests started from the page."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from deckhand_ui.core_api import (
    CallError,
    ConfigError,
    RetrievalTestCase,
    Toolbox,
    corpus_stems,
    load_agent_config,
    load_beir,
)

#: Most questions of one set a comparison asks (each is a search of each side).
MAX_QUESTIONS = 1000


@dataclass
class IngestJob:
    """An ingest started from the Index page, followed by its progress listener."""

    tool: str
    force: bool
    started: float = field(default_factory=time.monotonic)
    units: float = 0.0
    message: str = "starting"
    finished: float | None = None
    summary: str | None = None
    error: str | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.finished is None

    @property
    def seconds(self) -> float:
        return (self.finished or time.monotonic()) - self.started


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a tool of one of the loaded configs."""

    config: str
    tool: str

    @property
    def key(self) -> str:
        return f"{self.config}:{self.tool}"


class SortedFiles:
    """Each tool's stored files, sorted, kept until what the tool holds changes (its change stamp): paging through
    a large index does not read and sort its manifest again for every page."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Any, list[str], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def of(self, side: str, tool: Any) -> tuple[list[str], dict[str, Any]]:
        stamp = tool.index.change_stamp()
        with self._lock:
            kept = self._kept.get(side)
        if kept is not None and stamp is not None and kept[0] == stamp:
            return kept[1], kept[2]
        manifest = tool.index.stored_files()
        names = sorted(manifest)
        with self._lock:
            self._kept[side] = (stamp, names, manifest)
        return names, manifest


class Workbench:
    """The loaded agent configs (the first is ``--config``), their tools, and the question sets."""

    def __init__(self, toolboxes: dict[str, Toolbox], questions: dict[str, list[RetrievalTestCase]]) -> None:
        if not toolboxes:
            raise ConfigError("deckhand ui: no agent config to serve")
        self.toolboxes = toolboxes
        self.questions = questions
        self.jobs: dict[str, IngestJob] = {}
        #: Each tool's sorted file list, for the Documents page.
        self.files = SortedFiles()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, config: Path, others: Sequence[Path] = (), question_files: Sequence[Path] = ()) -> Workbench:
        """Toolboxes of ``config`` and ``others`` (labelled by file name), and the question sets: each config's
        ``tests:`` and each of ``question_files`` (a YAML file with a ``tests:`` list, as agent.yaml writes it)."""
        toolboxes: dict[str, Toolbox] = {}
        questions: dict[str, list[RetrievalTestCase]] = {}
        for path in [config, *others]:
            label = _label(path, toolboxes)
            toolboxes[label] = Toolbox.from_config(path)
            tests = load_agent_config(path).tests
            if tests:
                questions[f"{label} tests"] = tests[:MAX_QUESTIONS]
        for path in question_files:
            questions[_label(path, questions)] = beir_questions(path) if path.is_dir() else read_questions(path)
        return cls(toolboxes, questions)

    @property
    def main(self) -> Toolbox:
        return next(iter(self.toolboxes.values()))

    @property
    def main_label(self) -> str:
        return next(iter(self.toolboxes))

    def sides(self) -> list[Side]:
        """Every tool of every loaded config."""
        return [Side(label, name) for label, box in self.toolboxes.items() for name in box.tool_names]

    def side(self, key: str) -> tuple[Toolbox, str]:
        """The toolbox and tool name of ``config:tool`` (a one-line error for an unknown one)."""
        label, _, name = key.partition(":")
        box = self.toolboxes.get(label)
        if box is None or name not in box.tool_names:
            raise CallError(f"no tool {key!r}; choose one of: {', '.join(s.key for s in self.sides())}")
        return box, name

    # -- ingests --------------------------------------------------------------------------------
    def start_ingest(self, name: str, force: bool) -> IngestJob:
        """Ingest tool ``name`` of the main config in a thread (one at a time per tool); its job."""
        box = self.main
        if name not in box.tool_names:
            raise CallError(f"unknown tool {name!r} (tools: {', '.join(box.tool_names)})")
        with self._lock:
            job = self.jobs.get(name)
            if job is not None and job.running:
                return job
            job = self.jobs[name] = IngestJob(name, force)

        def listen(units: float, message: str) -> None:
            job.units, job.message = units, message

        def run() -> None:
            try:
                report = box.ingest(name, force, listen)
            except CallError as exc:
                job.error = str(exc)
            except Exception as exc:  # the page must learn how it ended, whatever happened
                job.error = box.error_line(exc)
            else:
                job.summary = report.summary()
                job.skipped = [box.redact(f"{s.display}: {s.reason}") for s in [*report.failed, *report.skipped]]
            finally:
                job.finished = time.monotonic()

        threading.Thread(target=run, name=f"deckhand-ui-ingest-{name}", daemon=True).start()
        return job

    def close(self) -> None:
        for box in self.toolboxes.values():
            box.close()


def _label(path: Path, taken: dict[str, Any]) -> str:
    label = path.stem or "config"
    n = 2
    while label in taken:
        label, n = f"{path.stem}-{n}", n + 1
    return label


def beir_questions(directory: Path, split: str = "test") -> list[RetrievalTestCase]:
    """A BEIR folder's judged queries (``deckhand eval --beir``'s), each expecting the files ``deckhand eval``
    writes its relevant documents to (``<stem>.md``; a tool compared on them indexes that corpus folder)."""
    dataset = load_beir(directory, split)
    stem_of = {doc_id: stem for stem, doc_id in corpus_stems(dataset.corpus).items()}
    cases = []
    for query_id, text in dataset.queries.items():
        relevant = [
            f"{stem_of[d]}.md" for d, score in dataset.qrels.get(query_id, {}).items() if score > 0 and d in stem_of
        ]
        if text.strip() and relevant:
            cases.append(RetrievalTestCase(query=text, expected_sources=relevant))
        if len(cases) == MAX_QUESTIONS:
            break
    if not cases:
        raise ConfigError(f"{directory}: no judged query with a relevant document in the corpus")
    return cases


def read_questions(path: Path) -> list[RetrievalTestCase]:
    """The ``tests:`` list of a YAML file (``deckhand test``'s format), validated; a one-line error naming the
    file and the entry otherwise."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the questions: {str(exc).splitlines()[0]}") from None
    tests = data.get("tests") if isinstance(data, dict) else data
    if not isinstance(tests, list) or not tests:
        raise ConfigError(f"{path}: tests: expected a list of {{query, expected_sources}} entries")
    cases = []
    for i, entry in enumerate(tests[:MAX_QUESTIONS]):
        try:
            cases.append(RetrievalTestCase.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in first["loc"])
            raise ConfigError(f"{path}: tests[{i}]{where}: {first['msg']}") from None
    return cases
