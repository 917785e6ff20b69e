"""LLM judges over any OpenAI-compatible chat endpoint."""
