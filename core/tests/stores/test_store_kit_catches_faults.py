"""The store conformance kit fails stores with the faults it is meant to catch.

The stores of ``faulty_stores.py`` become a throwaway plugin: the module and a
``*.dist-info`` with an entry point in the ``deckhand`` group are written to a temporary
directory put on ``PYTHONPATH``, so the kit's other processes find the stores through
the registry exactly as they find an installed plugin's. The kit then runs in its own
pytest process against each faulty store, and the outcome of each chosen test is read
from the JUnit XML report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).parent

PASSED = ""

#: (test class, provider, test) -> PASSED, or a piece of the failure message the fault must cause.
#: The passes show the fault is the only thing wrong: the same-process checks the kit had
#: before could not see it.
EXPECTED: dict[tuple[str, str, str], str] = {
    ("TestUndeclaredKeyword", "faulty-undeclared-keyword", "test_capabilities_are_declared"): (
        "implements keyword_search (NativeKeywordSearch) but does not declare StoreCapability.KEYWORD_SEARCH"
    ),
    ("TestBrokenKeyword", "faulty-broken-keyword", "test_capabilities_are_declared"): PASSED,
    ("TestUndeclaredIntegrity", "faulty-undeclared-integrity", "test_capabilities_are_declared"): (
        "implements integrity_check (IntegrityCheck) but does not declare StoreCapability.INTEGRITY_CHECK"
    ),
    ("TestMissingSideIndex", "faulty-missing-side-index", "test_capabilities_are_declared"): (
        "declares side_indexes but has no load_side_index(), records_version(), save_side_index() methods"
    ),
    ("TestBrokenKeyword", "faulty-broken-keyword", "test_native_keyword_search[FLAT]"): (
        "keyword_search('windlass') found []"
    ),
    ("TestMissingKeyword", "faulty-missing-keyword", "test_capabilities_are_declared"): (
        "declares keyword_search but has no keyword_search() method"
    ),
    ("TestMissingKeyword", "faulty-missing-keyword", "test_native_keyword_search[FLAT]"): (
        "declares keyword_search but has no keyword_search(query, k, *, sources) method"
    ),
    ("TestIgnoredFilter", "faulty-ignored-filter", "test_sources_filter[FLAT]"): PASSED,
    ("TestIgnoredFilter", "faulty-ignored-filter", "test_filters[FLAT]"): "do not satisfy it",
    ("TestIgnoredFilter", "faulty-ignored-filter", "test_filters_rank_and_combine[FLAT]"): "the filter excludes",
    ("TestUndeclaredIgnoredFilter", "faulty-undeclared-ignored-filter", "test_filters_refused_when_undeclared[FLAT]"): (
        "ignored the filter and returned unfiltered hits"
    ),
    ("TestUndeclaredFilter", "faulty-undeclared-filter", "test_filters_refused_when_undeclared[FLAT]"): (
        "applies filters (search(where=...)) without declaring StoreCapability.FILTERS"
    ),
    ("TestModuleDict", "faulty-module-dict", "test_data_visible_from_second_connection[FLAT]"): PASSED,
    ("TestModuleDict", "faulty-module-dict", "test_persistence_from_another_process"): (
        "another process opening the collection must get the spec it was created with"
    ),
    ("TestNoNamespace", "faulty-no-namespace", "test_collections_are_isolated[FLAT]"): PASSED,
    ("TestNoNamespace", "faulty-no-namespace", "test_index_name_separates_collections"): "sees the one under",
    ("TestStaleReader", "faulty-stale-reader", "test_data_visible_from_second_connection[FLAT]"): PASSED,
    ("TestStaleReader", "faulty-stale-reader", "test_reader_sees_later_writes"): (
        "a reader that already searched must see another connection's later writes (search)"
    ),
    ("TestThreadBound", "faulty-thread-bound", "test_replace_source_swaps_records_and_manifest[FLAT]"): PASSED,
    ("TestThreadBound", "faulty-thread-bound", "test_calls_from_other_threads"): (
        "can only be used in that same thread"
    ),
    ("TestCwd", "faulty-cwd", "test_writes_nothing_into_the_working_directory"): "into the current directory",
    ("TestJsonFile", "faulty-json-file", "test_concurrent_processes"): (
        "2 of 2 processes opening a new collection at once report creating it"
    ),
    ("TestUndeclaredJsonFile", "faulty-undeclared-json-file", "test_persistence_from_another_process"): (
        "the data outlives the process, so declare StoreCapability.PERSISTENT"
    ),
    ("TestWrongEntryPoint", "faulty-cwd", "test_registered_factory_and_entry_point"): (
        "no entry point 'faulty-typo' in group 'deckhand'"
    ),
    ("TestLegacyAttribute", "faulty-broken-keyword", "test_capabilities_are_declared"): (
        "TestLegacyAttribute.persistent is no longer read"
    ),
}

#: Class attributes beyond provider and entry point.
EXTRA = {
    "TestWrongEntryPoint": 'entry_point = "faulty-typo"',
    "TestLegacyAttribute": "persistent = True",
}

DIST_INFO = "deckhand_faulty_stores-0.0.0.dist-info"


def _plugin_dir(root: Path) -> Path:
    """The faulty stores as an importable module plus an entry point, without installing anything."""
    site = root / "site"
    site.mkdir()
    shutil.copy(HERE / "faulty_stores.py", site / "deckhand_faulty_stores.py")
    info = site / DIST_INFO
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: deckhand-faulty-stores\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text("[deckhand]\nfaulty = deckhand_faulty_stores\n")
    return site


def _test_module() -> str:
    classes = {}
    for cls, provider, _ in EXPECTED:
        classes[cls] = provider
    lines = [
        "import pytest",
        "from deckhand.testing.store_conformance import StoreConformanceTests",
    ]
    for cls, provider in classes.items():
        lines += [
            "",
            "",
            f"class {cls}(StoreConformanceTests):",
            f"    provider = {provider!r}",
            "    entry_point = 'faulty'",
            "    large_batch = 100",
        ]
        if cls in EXTRA:
            lines.append(f"    {EXTRA[cls]}")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_the_kit_fails_each_faulty_store(tmp_path: Path) -> None:
    site = _plugin_dir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "test_faulty_kit.py").write_text(_test_module(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_HOME"}
    env["DECKHAND_PLUGINS"] = "faulty"  # the other installed plugins are not needed: load only this one
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    report = tmp_path / "report.xml"
    nodes = [f"test_faulty_kit.py::{cls}::{test}" for cls, _, test in EXPECTED]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}", "-o", "addopts=",
         *nodes],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert report.is_file(), f"pytest wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr}"
    outcomes: dict[tuple[str, str], str | None] = {}  # None: passed; else the failure text
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is None:
            failure = case.find("skipped")  # a skip is never what is expected: report it as text
        outcomes[(cls, case.get("name", ""))] = (
            None if failure is None else f"{failure.tag}: {failure.get('message', '')} {failure.text or ''}"
        )
    wrong = []
    for (cls, _, test), expected in EXPECTED.items():
        if (cls, test) not in outcomes:
            wrong.append(f"{cls}::{test}: did not run")
            continue
        got = outcomes[(cls, test)]
        if expected == PASSED and got is not None:
            wrong.append(f"{cls}::{test}: expected to pass, got {textwrap.shorten(got, 400)}")
        elif expected != PASSED and (got is None or not got.startswith("failure") or expected not in got):
            shown = "passed" if got is None else textwrap.shorten(got, 400)
            wrong.append(f"{cls}::{test}: expected a failure saying {expected!r}, got {shown}")
    assert not wrong, "\n".join(wrong) + f"\n\n{done.stdout[-4000:]}"
