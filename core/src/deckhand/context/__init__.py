"""Context generators for contextual embeddings (the contextualise step): structural and llm."""
