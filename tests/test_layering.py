"""The package layering (the import-linter contracts in pyproject.toml) holds.

CI runs ``lint-imports`` too; this test makes the README's test command check it as well.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    # lint-imports comes with the `test` extra, next to this interpreter in the venv.
    tool = Path(sys.executable).with_name("lint-imports")
    assert tool.exists(), f"{tool} is missing: install the test extra (pip install -e '.[test]')"
    r = subprocess.run([str(tool), "--no-logo", "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"import contracts broken:\n{r.stdout}{r.stderr}"
    assert "0 broken" in r.stdout, r.stdout


def test_entry_dispatch_imports_nothing_but_os_and_sys():
    # Every compile of a build runs sgcc.cli first: click and the commands load only for a tool command.
    code = ("import sys\nbefore = set(sys.modules)\nimport sgcc.cli\n"
            "print(' '.join(sorted(set(sys.modules) - before)))\n"
            "sgcc.cli.main(['sgcc', 'version'])\n"
            "print('click' in sys.modules, 'sgcc.cli.main' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded, version, after_command = r.stdout.splitlines()
    # __future__: the `from __future__ import annotations` line (os and sys are loaded at start-up).
    assert set(loaded.split()) <= {"__future__", "sgcc", "sgcc.cli"}, loaded
    assert version.startswith("sgcc ") and after_command == "True True"
