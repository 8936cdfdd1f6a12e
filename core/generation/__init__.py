"""Generation: providers, the LLM client, rate limits, prompts, baselines and the run executor."""
