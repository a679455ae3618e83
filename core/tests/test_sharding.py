"""``deckhand ingest --shard I/N``: a deterministic split of the files by path; shards run in any
order, and any one re-run, leave the index (records and manifest) one whole ingest leaves."""

from __future__ import annotations

import gc
import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.errors import ConfigError
from deckhand.ingest.sharding import Shard
from deckhand.stores.sqlite import SQLiteStore

TOPICS = ["keys", "ports", "billing", "backups", "logs", "tokens", "quotas", "regions", "alerts", "exports", "users"]
TOPICS += [f"{topic}-{n}" for topic in TOPICS[:6] for n in (2, 3)]


def test_parse_and_refuse() -> None:
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard.parse(" 1 / 3 ")) == "1/3"
    for bad in ("0/3", "4/3", "1", "a/b", "1/0", "-1/2"):
        with pytest.raises(ConfigError, match=r"^--shard "):
            Shard.parse(bad)


def test_every_path_belongs_to_exactly_one_shard() -> None:
    paths = [f"docs/{a}/{b}.md" for a, b in itertools.product("abcdefgh", range(50))]
    paths += ["caf\u00e9.md", "bad_\udcff.txt"]
    for count in (1, 2, 3, 7):
        owners = [[s for s in range(1, count + 1) if Shard(s, count).owns(p)] for p in paths]
        assert all(len(o) == 1 for o in owners)
        if count > 1:  # and the split is not degenerate
            assert len({o[0] for o in owners}) == count


def _project(root: Path, index: str) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for i, topic in enumerate(TOPICS):
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nHow {topic} work in Harbor, note {i}.\n")
    config = root / f"{index}.yaml"
    config.write_text(
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs/\n"
        f"    database: {{provider: sqlite, connection_string: {index}.sqlite}}\n"
    )
    return config


def _contents(path: Path) -> tuple[dict[str, tuple[str, str]], set[str]]:
    gc.collect()
    store = SQLiteStore(path, "kb")
    try:
        records = {r.id: (r.source, r.content) for r in store.iter_records()}
        return records, set(store.manifest())
    finally:
        store.close()


def test_shards_in_any_order_equal_one_ingest(tmp_path: Path, minilm: object) -> None:
    runner = CliRunner()
    whole = _project(tmp_path, "whole")
    assert runner.invoke(cli, ["-c", str(whole), "ingest"]).exit_code == 0
    expected = _contents(tmp_path / "whole.sqlite")
    assert len(expected[1]) == len(TOPICS)

    sharded = _project(tmp_path, "sharded")
    outputs = []
    for shard in ("3/3", "1/3", "2/3"):
        result = runner.invoke(cli, ["-c", str(sharded), "ingest", "--shard", shard])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert _contents(tmp_path / "sharded.sqlite") == expected
    ingested = [int(out.split(" ingested")[0].rsplit(" ", 1)[-1]) for out in outputs]
    assert sum(ingested) == len(TOPICS) and all(n > 0 for n in ingested)  # each file embedded by one shard

    again = runner.invoke(cli, ["-c", str(sharded), "ingest", "--shard", "2/3"])
    assert " 0 ingested" in again.output and f"{ingested[2]} unchanged" in again.output
    assert _contents(tmp_path / "sharded.sqlite") == expected

    # A file removed from the source is removed by its own shard, never by another one.
    victim = next(f"docs/{t}.md" for t in TOPICS if Shard(1, 3).owns(f"docs/{t}.md"))
    (tmp_path / victim).unlink()
    runner.invoke(cli, ["-c", str(sharded), "ingest", "--shard", "2/3"])
    assert victim in _contents(tmp_path / "sharded.sqlite")[1]
    assert "1 removed" in runner.invoke(cli, ["-c", str(sharded), "ingest", "--shard", "1/3"]).output
    assert victim not in _contents(tmp_path / "sharded.sqlite")[1]
    search = runner.invoke(cli, ["-c", str(sharded), "search", "How do quotas work?", "-k", "1"])
    assert search.exit_code == 0 and "quotas.md" in search.output


def test_shard_with_force_ingest_is_refused_in_one_line(tmp_path: Path, minilm: object) -> None:
    config = _project(tmp_path, "kb")
    result = CliRunner().invoke(cli, ["-c", str(config), "ingest", "--shard", "1/2", "--force-ingest"])
    assert result.exit_code != 0
    (line,) = [x for x in result.output.splitlines() if x.strip()]
    assert "--shard and --force-ingest do not go together" in line
    bad = CliRunner().invoke(cli, ["-c", str(config), "ingest", "--shard", "5/2"])
    assert bad.exit_code != 0 and "--shard 5/2: the shard must be between 1 and 2" in bad.output


def test_moving_to_another_store_embeds_nothing_again(tmp_path: Path, minilm: object) -> None:
    """The scale-out path's first step (docs/scaling.md): point the tool at a new store and ingest;
    every vector comes from the embedding cache."""
    runner = CliRunner()
    first = _project(tmp_path, "first")
    assert " embedded)" in runner.invoke(cli, ["-c", str(first), "ingest"]).output
    second = _project(tmp_path, "second")  # same files, another database
    moved = runner.invoke(cli, ["-c", str(second), "ingest"])
    assert moved.exit_code == 0 and f"{len(TOPICS)} ingested ({len(TOPICS)} chunks, 0 embedded)" in moved.output
    assert _contents(tmp_path / "second.sqlite") == _contents(tmp_path / "first.sqlite")
