"""The issue-22 and issue-30 benchmark commands docs/benchmarks.md prints run as written, at a tiny size (the
full-size runs take from minutes to an hour and stay out of the tests): each prints the figures the docs quote."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(tmp_path: Path, script: str, *args: str) -> str:
    env = {**os.environ, "DECKHAND_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True, env=env, timeout=280
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_scale_bench_for_the_hierarchical_tool_reports_every_figure(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "scale_bench.py",
        *("--chunks", "100", "--per-file", "10", "--tool", "hierarchical"),
        *("--repeats", "1", "--queries", "5", "--workdir", str(tmp_path / "work")),
    )
    assert "side indexes built and kept in" in out
    assert re.search(r"start-up -?\d+\.\d+ s above --version \(medians of 1\); search peak RSS \d+ MB", out)
    assert len(re.findall(r"(semantic|hybrid) search, top 10, 5 queries: p50 [\d.]+ ms, p95 [\d.]+ ms", out)) == 4
    # issue 46: a warm searcher's peak RSS, and recall@10 of the store's search against an exact scan of it
    warm = r"peak RSS of that \(warm\) process after 20 searches: \d+ MB \(now RssAnon \d+ MB, RssFile \d+ MB\)"
    assert re.search(warm, out)
    assert len(re.findall(r"recall@10 against exact search, 5 [^:]+: (0|1)\.\d{3}", out)) == 2
    assert re.search(r"deckhand ingest, nothing changed: [\d.]+ s", out)
    assert "above embedding; the next search" in out and out.rstrip().splitlines()[-3].endswith("new text: True")
    # issue 30: the split of a dense query's time and a search's memory, on the same work folder
    split = _run(tmp_path, "dense_breakdown.py", "--workdir", str(tmp_path / "work"), "--queries", "5")
    assert re.search(r"deckhand search: after the store's search VmHWM \d+ MB, RssAnon \d+ MB, RssFile \d+ MB", split)
    assert re.search(r"whole query \(search_results_sync\) +[\d.]+ +[\d.]+ +[\d.]+", split)
    assert re.search(r"after 10 queries: VmRSS \d+ MB", split)

    # --search-only: steps 1 and 2 again on the same index, nothing written (the full run's last step wrote a file)
    def written() -> list[tuple[Path, int]]:  # the source and the index's records (not the query cache)
        files = [*(tmp_path / "work" / "docs").rglob("*.md"), *(tmp_path / "work").rglob("*vectors.sqlite")]
        return sorted((p, p.stat().st_mtime_ns) for p in files)

    before = written()
    again = _run(
        tmp_path,
        "scale_bench.py",
        *("--chunks", "100", "--per-file", "10", "--tool", "hierarchical", "--repeats", "1", "--queries", "5"),
        *("--workdir", str(tmp_path / "work"), "--search-only"),
    )
    assert re.search(r"start-up -?\d+\.\d+ s above --version \(medians of 1\); search peak RSS \d+ MB", again)
    assert len(re.findall(r"(semantic|hybrid) search, top 10, 5 queries", again)) == 4 and re.search(warm, again)
    assert "deckhand ingest" not in again and "source written" not in again
    assert written() == before
    # issue 46: a warm searcher under ann_mapped_mb (graph_budget.py), the option set for that process only
    budget = _run(
        tmp_path, "graph_budget.py", "--workdir", str(tmp_path / "work"), "--mapped-mb", "1", "--queries", "5"
    )
    assert len(re.findall(r"ann_mapped_mb 1, pass \d, (semantic|hybrid): p50 [\d.]+ ms, p95 [\d.]+ ms", budget)) == 4
    assert re.search(r"ann_mapped_mb 1: graph unmapped \d+ times", budget)


def test_scale_bench_sets_and_removes_ann_mapped_mb_in_the_work_folder(tmp_path: Path) -> None:
    import yaml

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import scale_bench
    finally:
        sys.path.remove(str(BENCHMARKS))
    for extra in ("", scale_bench.OPTIONS + "        ann_precision: b1\n"):
        plain = scale_bench.AGENT.format(kind="hierarchical_document", name="acts") + extra
        (tmp_path / "agent.yaml").write_text(plain, encoding="utf-8")
        scale_bench.set_mapped_mb(tmp_path, 64)
        scale_bench.set_mapped_mb(tmp_path, 384)
        options = yaml.safe_load((tmp_path / "agent.yaml").read_text(encoding="utf-8"))["tools"][0]["database"]
        assert options["options"]["ann_mapped_mb"] == 384
        assert options["options"].get("ann_precision") == ("b1" if extra else None)
        scale_bench.set_mapped_mb(tmp_path, 0)
        assert (tmp_path / "agent.yaml").read_text(encoding="utf-8") == plain


def test_index_check_bench_reports_full_and_stamped_checks(tmp_path: Path) -> None:
    out = _run(tmp_path, "index_check_bench.py", "--chunks", "500", "--dir", str(tmp_path))
    assert [line.split(":")[0] for line in out.splitlines()[1:]] == ["check 1", "check 2", "check 3", "stamped file"]


def test_side_feed_bench_reports_each_phase_the_build_and_the_look_ups(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "side_feed_bench.py",
        "--chunks",
        "500",
        "--workdir",
        str(tmp_path / "w"),
        "--phases",
        "--keeper",
        "--lookups",
        "20",
    )
    for step in ("records read", "tantivy documents built", "commit and merges", "first build", "a new process opens"):
        assert re.search(rf"{step}.* [\d.]+ s wall +[\d.]+ s CPU", out), step
    assert len(re.findall(r"p50 +[\d.]+ ms +p95 +[\d.]+ ms", out)) == 10


def test_chunk_shapes_bench_reports_each_shape(tmp_path: Path) -> None:
    """Issue 40: the worst shapes of file through ``deckhand ingest`` at the kit's own size, one line each."""
    # the code shapes need the code plugin, which core's own test session does not install
    shapes = (
        ["minified-js", "no-space-line"] if importlib.util.find_spec("deckhand_code") else ["lockfile", "no-space-line"]
    )
    out = _run(tmp_path, "chunk_shapes_bench.py", "--scale", "1", "--shapes", ",".join(shapes))
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == shapes
    assert all(re.search(r"peak RSS +\d+ MB .*1 ingested \(\d+ chunks", line) for line in lines), out


def test_identifier_qa_reports_first_top5_and_silent_per_setting(tmp_path: Path) -> None:
    """issue 47's benchmark at 22 chunks, two settings: every table row, and the default tool finds each planted
    identifier's holder first, plain and quoted, never silent."""
    out = _run(
        tmp_path,
        "identifier_qa.py",
        *("--sizes", "22", "--per-shape", "1", "--settings", "default", "keyword"),
        *("--workdir", str(tmp_path / "work")),
    )
    rows = re.findall(
        r"^\| (default|keyword) \| (plain|quoted|sentence) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", out, re.M
    )
    assert len(rows) == 6, out
    for setting, form, first, top5, silent in rows:
        if setting == "default" and form != "sentence":
            assert (float(first), float(top5), float(silent)) == (1.0, 1.0, 0.0), (setting, form, out)
    assert re.search(r"corpus and index: \d+ s .*default \d+ ms/query, keyword \d+ ms/query", out)


@pytest.mark.parametrize("far", [False, True])
def test_quantised_graph_bench_chooses_on_one_half_and_reports_the_other(tmp_path: Path, far: bool) -> None:
    """Issue 46's command (docs/benchmarks.md, "A graph over sign bits"), at 2,000 rows."""
    args = ["--size", "2000", "--queries", "40", "--kinds", "b1", "i8", "--expansions", "64", "256"]
    out = _run(tmp_path, "quantised_graph.py", *args, "--shortlists", "34", "200", *(["--far"] if far else []))
    assert re.search(r"^b1: built in [\d.]+ s, file \d+ MB", out, re.M)
    assert "20 tune / 20 report" in out
    rows = re.findall(r"^\| (i8 \(today\)|i8|b1) \| (\d+) \| (\d+) \| [\d.]+ \| \d+ \| ([\d.]+) \|", out, re.M)
    assert ("i8 (today)", "512", "34") in [row[:3] for row in rows]  # today's default, measured on the report half
    assert all(0.0 <= float(r[3]) <= 1.0 for r in rows)


@pytest.mark.slow
def test_keyword_before_after_reports_builds_searches_and_the_tools_ratios(tmp_path: Path) -> None:
    """Issue 43's cost command (docs/benchmarks.md, "The keyword default against BM25"), at 300 chunks, with the
    strategy's own module as "before" (an export of another commit's in the docs)."""
    module = BENCHMARKS.parent / "core" / "src" / "deckhand" / "retrieval" / "tantivy_keyword.py"
    out = _run(
        tmp_path,
        "keyword_before_after.py",
        *("--before", str(module), "--sizes", "300", "--hybrid-size", "300"),
        *("--queries", "5", "--rounds", "1", "--builds", "1"),
    )
    assert re.search(r"build CPU ratio after / before: [\d.]+", out)
    assert re.search(r"search CPU ratio after / before: p50 [\d.]+, p95 [\d.]+", out)
    assert len(re.findall(r"pass \d ratios after / before: hybrid p95 [\d.]+ \(p50 [\d.]+\), keyword p95", out)) == 2
