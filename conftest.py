"""Fixtures for the whole workspace's tests."""
