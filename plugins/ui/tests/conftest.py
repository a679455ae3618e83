"""Fixtures: a project over the generated corpus, its workbench, and the application's test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _ui_corpus import AGENT, BASE, OTHER, write_corpus
from deckhand_ui.app import create_app
from deckhand_ui.workbench import Workbench
from starlette.testclient import TestClient


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workbench")
    write_corpus(root)
    (root / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (root / "other.yaml").write_text(OTHER, encoding="utf-8")
    (root / "secret.txt").write_text("TOP-SECRET-OUTSIDE-THE-SOURCE\n", encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def bench(project: Path) -> Iterator[Workbench]:
    workbench = Workbench.open(project / "agent.yaml", [project / "other.yaml"])
    yield workbench
    workbench.close()


@pytest.fixture(scope="session")
def client(bench: Workbench) -> Iterator[TestClient]:
    with TestClient(create_app(bench), base_url=BASE) as test_client:
        yield test_client
