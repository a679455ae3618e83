"""reStructuredText structure: titles of any adornment, sections, literal blocks and directives;
and HTML headings as markitdown gives them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deckhand.chunking import rst
from deckhand.chunking.headings import split_lines
from deckhand.types import Chunk

GUIDE = """\
.. _top:

##########
User Guide
##########

Intro paragraph.

*********
Chapter 1
*********

Installing
==========

Run the installer::

    $ ./install.sh --prefix /opt/app
    $ app --version

Then check the log.

.. code-block:: python
   :caption: settings.py

   DEBUG = False
   "TIMEOUT" means = 30

Configuring
===========

.. note::
   Settings are read once.

   Restart to apply them.

----

Advanced
--------

Plain text.

4.2 Limits
~~~~~~~~~~

Ten requests per second.

*********
Chapter 2
*********

Done.
"""


def chains(chunks: list[Chunk]) -> list[list[str]]:
    return [c.metadata["parent_chain"] for c in chunks]


def test_titles_levels_follow_first_appearance(chunk_file: Callable[..., list[Chunk]]) -> None:
    chunks = chunk_file("guide.rst", text=GUIDE)
    assert ["User Guide", "Chapter 1", "Installing"] in chains(chunks)
    assert ["User Guide", "Chapter 1", "Configuring", "Advanced", "4.2 Limits"] in chains(chunks)
    assert ["User Guide", "Chapter 2"] in chains(chunks)
    levels = {tuple(c.metadata["parent_chain"]): c.metadata["heading_level"] for c in chunks}
    # '#' overlined, '*' overlined, '=' underlined, '-' underlined, '~' underlined: levels 1..5
    assert levels[("User Guide", "Chapter 1", "Installing")] == 3
    assert levels[("User Guide", "Chapter 1", "Configuring", "Advanced", "4.2 Limits")] == 5
    limits = next(c for c in chunks if c.metadata["parent_chain"][-1] == "4.2 Limits")
    assert limits.metadata["section_id"] == "4.2"
    assert chunks[0].metadata["title"] == "User Guide"
    # the hyperlink target is markup, not a chunk; the transition (----) is not a title
    assert all(".. _top:" not in c.content for c in chunks)
    assert not any("----" in c.metadata["parent_chain"] for c in chunks)


def test_literal_blocks_and_directives_are_whole_and_not_prose(chunk_file: Callable[..., list[Chunk]]) -> None:
    chunks = chunk_file("guide.rst", text=GUIDE)
    installing = next(c for c in chunks if c.metadata["parent_chain"][-1] == "Installing")
    assert "$ ./install.sh --prefix /opt/app\n    $ app --version" in installing.content
    assert ".. code-block:: python\n   :caption: settings.py\n\n   DEBUG = False" in installing.content
    # "TIMEOUT" means … inside a code block defines nothing; directive options are no definitions
    assert all(c.metadata["defined_terms"] == [] for c in chunks)
    configuring = next(c for c in chunks if c.metadata["parent_chain"][-1] == "Configuring")
    assert ".. note::\n   Settings are read once.\n\n   Restart to apply them." in configuring.content


def test_oversized_directive_is_cut_between_lines_with_its_header(chunk_file: Callable[..., list[Chunk]]) -> None:
    body = "\n".join(f"   value_{i} = compute({i}, factor={i * 3})" for i in range(60))
    text = f"Title\n=====\n\n.. code-block:: python\n   :linenos:\n\n{body}\n\nAfter.\n"
    chunks = chunk_file("big.rst", text=text, max_chunk_tokens=120)
    code = [c for c in chunks if ".. code-block::" in c.content]
    assert len(code) > 2 and all(c.metadata["chunk_type"] == "code" for c in code[:-1])
    assert code[-1].content.endswith("After.")  # the next paragraph packed after the last piece
    header = ".. code-block:: python\n   :linenos:\n"
    assert code[0].content.startswith("Title\n=====\n\n" + header)  # the title glued to the first piece
    assert all(c.content.startswith(header) for c in code[1:])
    lines = [ln.strip() for c in code for ln in c.content.split(header, 1)[1].splitlines() if "value_" in ln]
    assert lines == [f"value_{i} = compute({i}, factor={i * 3})" for i in range(60)]  # no line cut or lost


def test_rst_tables_and_doctests_are_kept_whole(chunk_file: Callable[..., list[Chunk]]) -> None:
    text = (
        "Data\n====\n\n=====  ======\nName   Value\n=====  ======\nalpha  1\nbeta   2\n=====  ======\n\n"
        ">>> 1 + 1\n2\n\nEnd.\n"
    )
    found = rst.regions(split_lines(text))
    assert [(r.kind, r.first, r.last) for r in found] == [("table", 3, 8), ("code", 10, 11)]
    chunks = chunk_file("data.rst", text=text)
    assert "=====  ======\nalpha  1" in chunks[0].content
    assert [h for c in chunks for h in c.metadata["parent_chain"]] == ["Data"]  # the borders are not titles


def test_txt_files_are_read_as_rst_only_when_they_look_like_it(chunk_file: Callable[..., list[Chunk]]) -> None:
    text = "Intro\n~~~~~\n\nText.\n\n.. note:: careful\n\nUsage\n~~~~~\n\nMore.\n"
    assert rst.looks_like_rst(split_lines(text))
    assert ["Usage"] in chains(chunk_file("pep.txt", text=text))
    markdown = "# Title\n\nIntro\n~~~~~\n\n.. note:: careful\n"
    assert not rst.looks_like_rst(split_lines(markdown))
    plain = "Notes\n=====\n\nSome text.\n"  # also markdown setext: no RST-only signal
    assert not rst.looks_like_rst(split_lines(plain))
    assert rst.is_rst_source("docs/_sources/index.rst.txt") and not rst.is_rst_source("notes.md")


def test_short_underline_and_indented_lines_are_not_titles() -> None:
    text = "A long title here\n===\n\n   Indented\n   ========\n\nReal\n====\n"
    lines = split_lines(text)
    marks = rst.region_lines(len(lines), rst.regions(lines))
    assert [h.text for h in rst.headings(lines, marks)] == ["Real"]


def test_html_headings_from_markitdown(tmp_path: Path, chunk_file: Callable[..., list[Chunk]]) -> None:
    from deckhand.ingest.loaders import MarkItDownLoader

    page = tmp_path / "guide.html"
    page.write_text(
        "<html><head><title>Guide</title></head><body><h1>Install Guide</h1><p>Intro text.</p>"
        "<h2>Linux</h2><p>Use apt.</p><h3>Debian</h3><p>Run apt-get install tern.</p>"
        "<pre><code># not a heading\nmake install</code></pre>"
        "<h2>Glossary</h2><dl><dt>Partition</dt><dd>an ordered sequence of messages</dd></dl>"
        "</body></html>",
        encoding="utf-8",
    )
    text = MarkItDownLoader().load(page)
    chunks = chunk_file("guide.html", text=text)
    assert chains(chunks) == [
        ["Install Guide"],
        ["Install Guide", "Linux"],
        ["Install Guide", "Linux", "Debian"],
        ["Install Guide", "Glossary"],
    ]
    debian = chunks[2]
    assert "# not a heading\nmake install" in debian.content
    assert chunks[3].metadata["definitions"] == [{"term": "Partition", "definition": "an ordered sequence of messages"}]
