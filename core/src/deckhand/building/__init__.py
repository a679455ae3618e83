"""Components built from agent.yaml's choices (embedders, executors). The stages below take the built components and
plain settings, never agent.yaml's models (a contract in pyproject.toml)."""
