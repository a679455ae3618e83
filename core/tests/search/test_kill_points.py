"""kill -9 at random points of an ingest and of a one-file change (issue 30): the next open searches right.

One driver process (imports once, never writes: it stays single-threaded, so forking it is safe) forks a
child per point. The child writes what a hierarchical ingest writes (the store's records file by file, then
the keeper's refresh: tantivy's commit and position, the side index file) and SIGKILLs itself at its
``point``-th call of a deckhand function; the driver then forks a fresh "next process" that opens the store,
refreshes (no manual repair) and checks every answer against the records the store holds: each record's own
word finds it and only it (no stale text, no missing new text), its quoted phrase and its section find it, no
search returns a record the store does not hold. Points are drawn at random (seeded) over the calls a whole
run makes; the first and last calls are always among them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_DRIVER = textwrap.dedent(
    r"""
    import json, os, random, signal, sys
    import numpy as np
    from deckhand.retrieval.keeper import IndexKeeper
    from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.types import CollectionSpec, FileState, Record

    root, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    unit = np.ones(3, dtype=np.float32) / np.sqrt(3)
    SPEC = CollectionSpec("acts", 3, "test")

    def records(source, tag, n):
        stem = source.split(".")[0]
        return [
            Record(f"{source}#{i}", source, i, f"The {tag}{stem}x{i} clause of {stem}. Keep {tag} watch {i}.", unit,
                   {"parent_chain": [stem], "section_id": f"{ord(stem[0])}.{i}",
                    "section_ids": [f"{ord(stem[0])}.{i}"]})
            for i in range(n)
        ]

    FIRST = [(s, records(s, "old", 3)) for s in ("alpha.md", "bravo.md", "charlie.md")]
    CHANGE = [("bravo.md", records("bravo.md", "new", 2))]

    def store():
        s = SQLiteStore(os.path.join(root, "index.sqlite"), "acts")
        s.open(SPEC)
        return s

    def write(files):
        s = store()
        for source, recs in files:
            s.replace_source(source, recs, FileState(source, 1.0, 1, "h", "test", len(recs)))
        IndexKeeper(lambda st: (TantivyIndex.from_options(st, None, TantivyOptions()), "tantivy"), name="t").refresh(s)

    def counting(kill_at):
        calls = [0]
        def profile(frame, event, arg):
            if event == "call" and "/deckhand/" in frame.f_code.co_filename:
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
        return calls, profile

    def check():
        s = store()
        keeper = IndexKeeper(lambda st: (TantivyIndex.from_options(st, None, TantivyOptions()), "tantivy"), name="t")
        ix = keeper.refresh(s)
        held = {r.id: r for r in s.iter_records()}
        problems = []
        for rid, r in held.items():
            word = r.content.split()[1]
            if [i for i, _ in ix.keyword.search(word, 10)] != [rid]:
                problems.append(f"{word}: {ix.keyword.search(word, 10)} for {rid}")
            if [i for i, _ in ix.exact.search(f'"{word} clause"', 10)] != [rid]:
                problems.append(f"phrase {word}: {ix.exact.search(chr(34) + word + ' clause' + chr(34), 10)}")
            section = r.metadata["section_id"]
            if ix.exact.section_of_query(section) != [rid]:
                problems.append(f"section {section}: {ix.exact.section_of_query(section)}")
        for word in ("watch", "clause", "keep"):
            found = {i for i, _ in ix.keyword.search(word, 100)}
            if found != set(held):
                problems.append(f"{word}: {sorted(found ^ set(held))} differ")
        return problems

    def fork(body):
        pid = os.fork()
        if pid == 0:
            try:
                code = body()
            except BaseException as exc:
                print(f"child failed: {exc!r}", file=sys.stderr, flush=True)
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    def run(files, kill_at):
        calls, profile = counting(kill_at)
        sys.setprofile(profile)
        write(files)
        sys.setprofile(None)
        print(json.dumps({"calls": calls[0]}), flush=True)
        return 0

    def reset(files):
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if os.path.isdir(path):
                import shutil; shutil.rmtree(path)
            else:
                os.unlink(path)
        if files:
            assert fork(lambda: (write(files), 0)[1]) == 0

    rng = random.Random(seed)
    report = {}
    for scenario, before, files in (("ingest", [], FIRST), ("change", FIRST, CHANGE)):
        reset(before)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.dup2(w, 1)
            run(files, -1)
            os._exit(0)
        os.close(w)
        total = json.loads(os.read(r, 1000).decode())["calls"]
        os.waitpid(pid, 0)
        points = sorted({1, total, *rng.sample(range(2, total), count - 2)})
        outcomes = []
        for point in points:
            reset(before)
            killed = fork(lambda: run(files, point))
            def verify():
                problems = check()
                if problems:
                    print(json.dumps({"point": point, "problems": problems}), flush=True)
                return 1 if problems else 0
            outcomes.append([point, killed, fork(verify)])
        report[scenario] = {"calls": total, "outcomes": outcomes}
    print("REPORT " + json.dumps(report), flush=True)
    """
)


@pytest.mark.timeout(300)
def test_kill_9_at_random_points_of_an_ingest_and_a_one_file_change(tmp_path: Path) -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(tmp_path), "30", "12"], capture_output=True, text=True, timeout=280, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.split("REPORT ", 1)[1])
    for scenario, found in report.items():
        outcomes = found["outcomes"]
        assert len(outcomes) >= 10, scenario
        killed = [point for point, status, _ in outcomes if status == -9]
        assert len(killed) >= 10, f"{scenario}: killed at {killed} of {found['calls']} calls"
        wrong = [(point, verified) for point, _, verified in outcomes if verified != 0]
        assert not wrong, f"{scenario}: the next open searched wrong after kills at {wrong}\n{done.stdout}"
