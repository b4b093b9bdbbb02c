"""The TypeScript client (clients/typescript) in the suite: its committed schema and types are the server's, and its
own tests (node's test runner) pass against a live server, as do those of its Vercel AI SDK example
(examples/ai-sdk). npm installs each package's locked dependencies once, when its node_modules is missing; the tests
need node 20 or later. They stay in this one file so that one worker builds the client that the example links to."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from tests.conftest import OTHER_PROJECT, PROJECT

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
AI_SDK_EXAMPLE = PACKAGE / "examples" / "ai-sdk"
REGENERATE = "run `npm run generate` in clients/typescript and commit openapi.yaml and src/schema.ts"


def _run(
    *command: str, env: dict | None = None, timeout: float = 300, cwd: Path = PACKAGE
) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _install(npm: str, package: Path) -> None:
    if not (package / "node_modules" / ".package-lock.json").exists():
        installed = _run(npm, "ci", "--no-audit", "--no-fund", cwd=package)
        assert installed.returncode == 0, installed.stdout + installed.stderr


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are not installed: the TypeScript client's tests need node 20 or later")
    version = _run(node, "--version").stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"node {version} is older than 20, which the TypeScript client needs (its global fetch)")
    _install(npm, PACKAGE)
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


def _compile(node: str, package: Path) -> None:
    compiled = _run(node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json", cwd=package)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def _test(node: str, package: Path, env: dict) -> None:
    """node's test runner on the package's compiled tests; every test passed (the summary's lines say how many ran)."""
    tests = sorted(str(path.relative_to(package)) for path in (package / "dist" / "test").glob("*.test.js"))
    assert tests, f"no compiled test file under {package.name}/dist/test"
    # The files run at once (their subjects are their own): the waits of the retry tests overlap the others.
    ran = _run(node, "--test", "--test-concurrency=4", "--test-reporter=spec", *tests, env=env, cwd=package)
    summary = "\n".join(line for line in ran.stdout.splitlines() if line.startswith("ℹ"))
    failing = (
        ran.stdout[ran.stdout.find("✖ failing tests") :] if "✖ failing tests" in ran.stdout else ran.stdout[-8000:]
    )
    assert ran.returncode == 0, f"{failing}\n{summary}\n{ran.stderr}"
    assert "ℹ fail 0" in summary and "ℹ pass 0" not in summary, summary


def test_the_typescript_client_passes_its_tests_against_a_live_server(live_server, api_key, other_key):
    # given the client compiled with its tests
    node = _node()
    _compile(node, PACKAGE)
    # when node's test runner runs them against the live server
    env = {
        **os.environ,
        "HAKI_URL": live_server.url,
        "HAKI_API_KEY": api_key,
        "HAKI_OTHER_KEY": other_key,
        "HAKI_PROJECT": PROJECT,
        "HAKI_OTHER_PROJECT": OTHER_PROJECT,
    }
    # then they all pass
    _test(node, PACKAGE, env)


def test_the_ai_sdk_example_writes_a_fact_through_a_tool_call_and_serves_it_back(live_server, api_key):
    # given the client built (the example links to it) and the example compiled, with the AI SDK's mock model in
    # place of an LLM
    node = _node()
    _compile(node, PACKAGE)
    _install(shutil.which("npm"), AI_SDK_EXAMPLE)
    _compile(node, AI_SDK_EXAMPLE)
    # when its tests run its turns against the live server / then they pass
    env = {**os.environ, "HAKI_URL": live_server.url, "HAKI_API_KEY": api_key, "HAKI_PROJECT": PROJECT}
    _test(node, AI_SDK_EXAMPLE, env)
