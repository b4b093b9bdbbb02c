"""The TypeScript client (clients/typescript) in the suite: its committed schema and types are the server's, and its
own tests (node's test runner) pass against a live server. npm installs its dev dependencies (typescript,
openapi-typescript) once, when node_modules is missing; the tests need node 20 or later."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from tests.conftest import OTHER_PROJECT, PROJECT

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
REGENERATE = "run `npm run generate` in clients/typescript and commit openapi.yaml and src/schema.ts"


def _run(*command: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=timeout)


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are not installed: the TypeScript client's tests need node 20 or later")
    version = _run(node, "--version").stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"node {version} is older than 20, which the TypeScript client needs (its global fetch)")
    if not (PACKAGE / "node_modules" / ".package-lock.json").exists():
        installed = _run(npm, "ci", "--no-audit", "--no-fund")
        assert installed.returncode == 0, installed.stdout + installed.stderr
    return node


def test_the_committed_schema_is_the_servers(tmp_path):
    # given the schema the server publishes now / when / then it is the one the client's types were generated from
    call_command("spectacular", "--file", str(tmp_path / "openapi.yaml"))
    now = yaml.safe_load((tmp_path / "openapi.yaml").read_text())
    committed = yaml.safe_load((PACKAGE / "openapi.yaml").read_text())
    assert committed == now, f"the server's schema changed: {REGENERATE}"


def test_the_committed_types_are_generated_from_the_committed_schema():
    node = _node()
    generated = _run(node, "node_modules/openapi-typescript/bin/cli.js", "openapi.yaml", "--default-non-nullable=false")
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == (PACKAGE / "src" / "schema.ts").read_text(), f"src/schema.ts is stale: {REGENERATE}"


def test_the_typescript_client_passes_its_tests_against_a_live_server(live_server, api_key, other_key):
    # given the client compiled with its tests
    node = _node()
    compiled = _run(node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    # when node's test runner runs them against the live server
    env = {**os.environ, "HAKI_URL": live_server.url, "HAKI_API_KEY": api_key, "HAKI_OTHER_KEY": other_key,
           "HAKI_PROJECT": PROJECT, "HAKI_OTHER_PROJECT": OTHER_PROJECT}
    tests = sorted(str(path.relative_to(PACKAGE)) for path in (PACKAGE / "dist" / "test").glob("*.test.js"))
    assert tests, "no compiled test file under dist/test"
    # The files run at once (their subjects are their own): the waits of the retry tests overlap the others.
    ran = _run(node, "--test", "--test-concurrency=4", "--test-reporter=spec", *tests, env=env)
    # then every test passed (the summary's lines say how many ran)
    summary = "\n".join(line for line in ran.stdout.splitlines() if line.startswith("ℹ"))
    failing = ran.stdout[ran.stdout.find("✖ failing tests"):] if "✖ failing tests" in ran.stdout else ran.stdout[-8000:]
    assert ran.returncode == 0, f"{failing}\n{summary}\n{ran.stderr}"
    assert "ℹ fail 0" in summary and "ℹ pass 0" not in summary, summary
