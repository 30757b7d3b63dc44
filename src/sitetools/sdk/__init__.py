"""The tool-facing SDK: what ``run(ctx, input)`` gets (docs/writing-tools.md).

``ctx.http`` is an httpx client bound to the run's egress proxy and the tool's site;
``ctx.page()`` opens a Playwright page in a fresh context of the system Chromium; ``ask``,
``confirm``, ``choose``, ``login`` and ``two_factor`` pause the run for an answer; ``progress``
and ``log`` report. Raise ``InputRejected`` when the site refuses a value,
``CredentialsRejected`` when it refuses the login, ``ToolError`` with a message safe to show
the person for anything else.
"""

from sitetools.sdk.context import Context, Login
from sitetools.sdk.errors import CredentialsRejected, InputRejected, ToolError

__all__ = ["Context", "CredentialsRejected", "InputRejected", "Login", "ToolError"]
