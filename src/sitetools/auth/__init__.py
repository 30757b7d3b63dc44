"""Who is calling: credential resolution, the Caller and permission checks."""
