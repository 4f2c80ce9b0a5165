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


PACKAGES = ("cli", "lab", "project", "engine", "candidates", "llm", "dropin", "config", "cache", "verify", "asm",
            "gcc")
SHARED = ("errors", "fsutil", "proc", "stages", "progress", "dirs")


def _table() -> dict[str, set[str]]:
    """README's layering table: package → the packages its "may import" cell names."""
    import re

    text = (ROOT / "README.md").read_text()
    rows = {}
    for line in text[text.index("| package | holds | may import |"):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.fullmatch(r"`sgcc/(\w+)(?:/|\.py)`", cells[0])
        if m:
            # After a ";" come exceptions for one module (an ignore_imports line of the contract).
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", cells[-1].split(";")[0]))
    return rows


VERIFY_PARTS = ("static", "box", "function", "timing")


def _verify_parts() -> dict[str, set[str]]:
    """README's rows for verify's parts: part → the other parts its "may import" cell names."""
    import re

    text = (ROOT / "README.md").read_text()
    rows = {}
    for line in text[text.index("| package | holds | may import |"):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.fullmatch(r"`sgcc/verify/(\w+)/`", cells[0])
        if m:
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", cells[-1]))
    return rows


def _contracts() -> dict[str, dict]:
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return {c["id"]: c for c in conf}


def test_every_row_of_the_layering_table_is_a_contract_that_says_the_same():
    table, contracts = _table(), _contracts()
    assert set(table) == set(PACKAGES), sorted(table)
    del table["cli"]  # may import anything; the protected contract keeps everyone else off it
    for pkg, allowed in table.items():
        contract = contracts.get(f"row-{pkg}")
        assert contract is not None, f"no contract row-{pkg} in pyproject.toml"
        assert contract["source_modules"] == [f"sgcc.{pkg}"]
        forbidden = {m.removeprefix("sgcc.") for m in contract["forbidden_modules"]}
        may = set(PACKAGES + SHARED) - forbidden - {pkg}
        if pkg in ("asm", "gcc"):  # rows that name which shared modules they may use
            assert may == allowed, (pkg, may, allowed)
        else:
            assert may == allowed | set(SHARED), (pkg, sorted(may), sorted(allowed))
    assert contracts["cli-on-top"]["type"] == "protected"
    shared = contracts["row-shared"]
    assert set(shared["source_modules"]) == {f"sgcc.{m}" for m in SHARED}
    assert {m.removeprefix("sgcc.") for m in shared["forbidden_modules"]} == set(PACKAGES)


def test_verify_is_cut_into_parts_whose_rows_are_contracts():
    parts, contracts = _verify_parts(), _contracts()
    assert set(parts) == set(VERIFY_PARTS), sorted(parts)
    on_disk = {p.name for p in (ROOT / "sgcc" / "verify").iterdir() if (p / "__init__.py").exists()}
    assert on_disk == set(VERIFY_PARTS), sorted(on_disk)
    for part, allowed in parts.items():
        contract = contracts.get(f"row-verify-{part}")
        assert contract is not None, f"no contract row-verify-{part} in pyproject.toml"
        assert contract["source_modules"] == [f"sgcc.verify.{part}"]
        forbidden = {m.removeprefix("sgcc.verify.") for m in contract["forbidden_modules"]}
        assert set(VERIFY_PARTS) - forbidden - {part} == allowed, (part, sorted(forbidden), sorted(allowed))


def test_the_readmes_set_up_and_test_commands_are_what_ci_runs():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    readme = (ROOT / "README.md").read_text()
    setup = next(line for line in ci if line.startswith("python3 -m venv"))
    tests = next(line for line in ci if "pytest" in line)
    assert f"\n{setup}\n" in readme and f"\n{tests}\n" in readme


def test_only_the_entry_module_spells_a_cache_entrys_fields():
    """Cache entries are code that ships into builds: one module owns their shape
    (sgcc.cache.entry); nothing else builds or reads an entry's fields by hand."""
    import re

    fields = re.compile(r"""["'](apply|verdicts|winner)["']""")
    owner = ROOT / "sgcc" / "cache" / "entry.py"
    by_hand = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "sgcc").rglob("*.py"))
               if p != owner and fields.search(p.read_text(encoding="utf-8"))]
    assert by_hand == [], by_hand
