"""The layering of docs/architecture.md, checked by import-linter's contracts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_contracts_hold() -> None:
    linter = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(linter)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout
    assert "0 broken" in result.stdout
