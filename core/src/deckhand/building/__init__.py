"""Components built from agent.yaml's choices; the stages below never see agent.yaml's models."""
