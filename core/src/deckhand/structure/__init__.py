"""Structure-aware document processing: headings, chunking, definitions, references, context.

* :mod:`deckhand.structure.headings` — markdown (ATX, setext) and implicit numbered headings,
  section ids ("§ 4.2" → "4.2").
* :mod:`deckhand.structure.blocks` — paragraphs, fenced code, tables and lists of a section body.
* :mod:`deckhand.structure.chunker` — the ``structure`` chunker.
* :mod:`deckhand.structure.definitions` — defined terms and the definitions index.
* :mod:`deckhand.structure.references` — cross-references and their resolution to chunks.
* :mod:`deckhand.structure.context` — the ``structural`` and ``llm`` context generators.
"""
