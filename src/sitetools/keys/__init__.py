"""API keys: account keys and integration keys."""
