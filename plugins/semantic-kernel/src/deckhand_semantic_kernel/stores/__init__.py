"""Semantic Kernel's vector store connectors as deckhand stores, under the original platform's provider names.

:mod:`.providers` lists them (no heavy import), :mod:`.register` registers them with deckhand,
:mod:`.bridge` implements deckhand's store protocol over an SK collection, :mod:`.connectors`
holds one store class per connector, and :mod:`.scores` the one table that turns each
connector's scores into deckhand's [0, 1] similarity.
"""
