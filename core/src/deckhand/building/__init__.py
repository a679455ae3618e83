"""Components built from agent.yaml's choices: an ``embedding_model:`` value resolved in the plugin
registry, its options validated, the embedder built once per process (:mod:`.embedders`), or only
described until it first embeds (:mod:`.lazy_embedders`); the executor an ``executor:`` choice names
(:mod:`.executors`).

The stages below (:mod:`deckhand.embedding`, :mod:`deckhand.ingest`, :mod:`deckhand.retrieval`,
:mod:`deckhand.stores`, ...) take
the built components and plain settings, never agent.yaml's models (a contract in pyproject.toml).
"""
