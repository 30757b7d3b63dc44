"""Errors a tool raises to end its run with a specific code."""

from __future__ import annotations

__all__ = ["CredentialsRejected", "InputRejected", "ToolError"]


class ToolError(Exception):
    """The run failed (``execution_failed``); ``customer_message`` is shown to the person."""

    code = "execution_failed"

    def __init__(self, customer_message: str) -> None:
        self.customer_message = customer_message
        super().__init__(customer_message)


class InputRejected(ToolError):  # noqa: N818 - reads as what happened
    """The site refused a value (``input_rejected``): say which field and why."""

    code = "input_rejected"

    def __init__(
        self, reason: str, *, field: str | None = None, possible_commit: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.possible_commit = possible_commit


class CredentialsRejected(ToolError):  # noqa: N818
    """The site refused the login (``credentials_rejected``)."""

    code = "credentials_rejected"

    def __init__(self, field: str = "password", *, possible_commit: bool = False) -> None:
        super().__init__("The website did not accept the sign-in.")
        self.field = field
        self.possible_commit = possible_commit
