"""The house keeps its layers (.importlinter): hakimem <- facts <- traces | ingest | portability <- context | stats <-
privacy <- integrations <- config. An import against that flow fails the suite, with lint-imports' report of the
offending line as the message; an import inside a function, read from every app module's syntax tree, too."""

import ast
import configparser
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
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {m}"
                for m in modules
                if m == "scripts" or m.startswith("scripts.")
            ]
    assert offenders == []


def _layers() -> dict[str, tuple[int, int]]:
    """Each root package of .importlinter's layers contract -> (its layer, counted from the bottom; its place among
    the layer's siblings, which are independent: `a | b`)."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = [line.strip() for line in config["importlinter:contract:layers"]["layers"].splitlines() if line.strip()]
    return {
        package.strip(): (level, place)
        for level, line in enumerate(reversed(lines))
        for place, package in enumerate(line.split("|"))
    }


def _imported(node: ast.AST, module: str) -> list[str]:
    """The modules an import statement names, relative ones resolved against `module` (dotted, of the file)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".")[: -node.level]
        return [".".join([*base, node.module] if node.module else base)]
    return [node.module or ""]


def wrong_way_imports(source: str, module: str, layers: dict[str, tuple[int, int]]) -> list[str]:
    """The imports inside functions of `source` (the module `module`) that name a higher layer, or a sibling of
    its own: "line: imported module"."""
    own = layers.get(module.split(".")[0])
    if own is None:
        return []
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(node, module):
                other = layers.get(name.split(".")[0])
                if other is not None and other != own and other[0] >= own[0]:
                    found.append(f"{node.lineno}: {name}")
    return found


def test_no_import_inside_a_function_crosses_a_layer_the_wrong_way():
    """import-linter's contract reads the import graph; this reads the syntax of every module of every app, so an
    import deferred into a function (to dodge a circle at load time, say) cannot climb the layers unseen."""
    layers = _layers()
    offenders = []
    for package in layers:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            offenders += [
                f"{path.relative_to(ROOT)}:{hit}"
                for hit in wrong_way_imports(path.read_text(encoding="utf-8"), module, layers)
            ]
    assert offenders == []


def test_the_function_level_check_finds_an_upward_or_sibling_import():
    layers = _layers()
    source = """
import context.assembler  # module level: lint-imports' part


def erase():
    from privacy.services import subject_erase
    from facts import writes
    from .selectors import trace_get
    return subject_erase, writes, trace_get


def count():
    import stats.rollup
    return stats.rollup
"""
    assert wrong_way_imports(source, "context.replay", layers) == ["6: privacy.services", "13: stats.rollup"]
    assert wrong_way_imports(source, "traces.services", layers) == ["6: privacy.services", "13: stats.rollup"]
    assert wrong_way_imports(source, "config.urls", layers) == []
