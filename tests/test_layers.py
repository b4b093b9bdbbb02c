"""The house keeps its layers (.importlinter): hakimem <- facts <- traces <- context | stats <- integrations <-
config. An import against that flow fails the suite, with lint-imports' report of the offending line as the message."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_imports_follow_the_layers():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
