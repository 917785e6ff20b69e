"""Chat requests to an OpenAI-compatible endpoint: ``chat`` (the transport), ``sending``
(the request loop and its retries), ``pacing`` (how many are in flight)."""
