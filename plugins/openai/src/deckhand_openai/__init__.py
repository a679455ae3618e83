"""deckhand's remote components on the official OpenAI SDK: embedders, the ``llm`` context generator and the
``llm`` reranker, for OpenAI, Azure OpenAI and OpenAI-compatible servers."""
