#!/usr/bin/env node
// `npm test` after the build: runs every compiled test file (dist/test/*.test.js) with
// node's test runner against a real `bcs`. BASE_CONTEXT_BCS names the binary; when it is
// unset, this builds it (`cargo build -p session-cli`, the workspace at ../..) and uses
// the path cargo reports. TZ is UTC, as the reference's oracle runs.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const workspace = resolve(root, "..", "..");

function findBcs() {
  if (process.env.BASE_CONTEXT_BCS) return process.env.BASE_CONTEXT_BCS;
  const built = spawnSync("cargo", ["build", "-p", "session-cli", "--bin", "bcs", "--message-format=json-render-diagnostics"], {
    cwd: workspace,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 256 * 1024 * 1024,
  });
  if (built.status !== 0) {
    console.error("cargo build -p session-cli failed; set BASE_CONTEXT_BCS to a bcs binary instead");
    process.exit(built.status ?? 1);
  }
  let exe;
  for (const line of built.stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.reason === "compiler-artifact" && m.target?.name === "bcs" && m.executable) exe = m.executable;
  }
  if (!exe || !existsSync(exe)) {
    console.error("cargo did not report the bcs executable; set BASE_CONTEXT_BCS");
    process.exit(1);
  }
  return exe;
}

const bcs = findBcs();
const testDir = join(root, "dist", "test");
const only = process.argv.slice(2);
const files = readdirSync(testDir)
  .filter((f) => f.endsWith(".test.js"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
  .map((f) => join(testDir, f));
const run = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...files], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, BASE_CONTEXT_BCS: resolve(bcs), TZ: "UTC" },
});
process.exit(run.status ?? 1);
