"""The MCP surface: the account endpoint ``/mcp`` and one endpoint per integration, over
Streamable HTTP on the official ``mcp`` SDK, every tool executed through the operation registry."""
