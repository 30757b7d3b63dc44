"""Server-rendered Dashboard pages (Jinja2, no front-end build)."""
