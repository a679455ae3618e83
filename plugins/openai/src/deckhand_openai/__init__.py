"""deckhand embedders on the official OpenAI SDK: OpenAI, Azure OpenAI and OpenAI-compatible servers."""
