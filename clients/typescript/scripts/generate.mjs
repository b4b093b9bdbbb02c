// Regenerates the types from the server's OpenAPI schema: `manage.py spectacular` writes openapi.yaml (the schema
// GET /v1/schema serves), then openapi-typescript turns it into src/schema.ts (a field with a default stays
// optional in a request). Both files are committed, so that
// building the client needs neither Python nor the server; the suite fails when they no longer match the server.
//
//     npm run generate                 # from clients/typescript, with the repository's .venv
//     PYTHON=python3 npm run generate  # another Python with hakimem's requirements
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const repo = resolve(pkg, "..", "..");
const venvPython = join(repo, ".venv", "bin", "python");
const python = process.env.PYTHON ?? (existsSync(venvPython) ? venvPython : "python3");
const schemaFile = join(pkg, "openapi.yaml");

execFileSync(python, ["manage.py", "spectacular", "--file", schemaFile, "--validate", "--fail-on-warn"], {
  cwd: repo,
  stdio: "inherit",
});
const types = execFileSync(process.execPath, [join(pkg, "node_modules", "openapi-typescript", "bin", "cli.js"), schemaFile, "--default-non-nullable=false"], {
  cwd: pkg,
  encoding: "utf8",
});
writeFileSync(join(pkg, "src", "schema.ts"), types);
console.log(`wrote openapi.yaml and src/schema.ts from ${python} manage.py spectacular`);
