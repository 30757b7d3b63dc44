"""Tools and integrations: the catalog, tool packages and their versions."""
