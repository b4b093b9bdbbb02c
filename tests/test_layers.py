"""The house keeps its layers (.importlinter): hakimem <- facts <- traces | portability <- context | stats <-
integrations <- config. An import against that flow fails the suite, with lint-imports' report of the offending
line as the message."""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_imports_follow_the_layers():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_tests_import_the_bench_package_never_the_command_lines():
    """scripts/ holds only command lines over bench/: a test that needs a harness imports it from bench."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            else:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} imports {m}" for m in modules
                          if m == "scripts" or m.startswith("scripts.")]
    assert offenders == []
