"""Device sign-in: an agent without credentials gets an API key a person approved."""
