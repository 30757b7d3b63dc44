"""The OAuth 2.1 authorization server of the MCP endpoints, and connected apps."""
