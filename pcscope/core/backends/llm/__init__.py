"""LLM clients: Claude (Messages API) and OpenAI-compatible servers, their turns,
retries, pacing, budgets, traces and redaction."""
