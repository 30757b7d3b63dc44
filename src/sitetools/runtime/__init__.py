"""The tool runtime: the sandboxed process, its pipe protocol and its egress proxy."""
