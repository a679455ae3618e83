"""The benchmarks find their datasets where any clone can put them: no absolute path of one machine, and a
missing dataset is one line saying what to set (benchmarks/bench_datasets.py; docs/benchmarks.md, "Datasets")."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
#: System places a benchmark may read (its own memory, the CPU's name) or scratch in: not datasets.
SYSTEM = {"proc", "sys", "dev", "tmp", "usr"}  # (Debian's own paths, such as its fonts, are on every machine)
_DATASET_WORDS = re.compile(r"scifact|dataset|beir|qrels|\.jsonl", re.I)


def test_no_benchmark_names_an_absolute_path_of_one_machine() -> None:
    found = []
    for script in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/"):
                parts = node.value.strip("/").split("/")
                if len(parts) >= 2 and parts[0] not in SYSTEM and "?" not in node.value:  # (a URL's path, not a file)
                    found.append(f"{script.name}:{node.lineno}: {node.value}")
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")  # (URLs and /path/to/ placeholders aside)
    for match in re.finditer(r"(?<![\w.~/:])/(?!tmp/|proc/|usr\b|path/to/)[\w.-]+(?:/[\w.-]+)+", text):
        if _DATASET_WORDS.search(match.group()):
            found.append(f"docs/benchmarks.md:{text.count(chr(10), 0, match.start()) + 1}: {match.group()}")
    assert not found, found


def _datasets_module() -> object:
    spec = importlib.util.spec_from_file_location("bench_datasets", BENCHMARKS / "bench_datasets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scifact_is_looked_for_beside_the_repository_unless_the_variable_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = _datasets_module()
    assert ROOT.parent / "shared" / "datasets" / "scifact" == datasets.SCIFACT_DEFAULT  # type: ignore[attr-defined]
    (tmp_path / "corpus.jsonl").write_text("{}\n")
    monkeypatch.setenv("DECKHAND_SCIFACT", str(tmp_path))
    assert datasets.scifact() == tmp_path  # type: ignore[attr-defined]
    with pytest.raises(SystemExit) as missing:
        datasets.scifact(tmp_path / "given")  # type: ignore[attr-defined]  # --beir wins over the variable
    assert str(missing.value).startswith(f"SciFact not found: {tmp_path / 'given'} has no corpus.jsonl; ")


@pytest.mark.parametrize("script", ["scifact_fusion.py", "peer_bench.py"])
def test_a_missing_dataset_is_one_line_naming_the_variable(tmp_path: Path, script: str) -> None:
    env = {**os.environ, "DECKHAND_SCIFACT": str(tmp_path / "nowhere"), "DECKHAND_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"SciFact not found: {tmp_path / 'nowhere'} has no corpus.jsonl; set DECKHAND_SCIFACT=/path/to/scifact "
        '(docs/benchmarks.md, "Datasets", says how to get it)\n'
    )
