"""Contracts and policies every other room builds on; imports nothing else from harness."""
