// Generates numbers.context.json: the context the reference
// (@mariozechner/pi-coding-agent 0.73.1) prints for numbers.jsonl, exactly as
// JSON.stringify spells it (1.0 → 1, -0.0 → 0, 1e-7, digits past 2^53 rounded).
//
// Regenerate from the workspace root, with the reference's oracle scripts in PEER
// (../shared/peer installed with its node_modules, e.g. target/peer or /work/peer):
//   TZ=UTC node crates/session-cli/tests/data/numbers.mjs PEER > crates/session-cli/tests/data/numbers.context.json
//
// Read by tests/it/read.rs (`bcs context --json` must print these bytes).
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";

const peer = process.argv[2] ?? "/work/peer";
const here = dirname(fileURLToPath(import.meta.url));
const out = execFileSync("node", [join(peer, "context.mjs"), join(here, "numbers.jsonl"), "--no-tree"], {
  env: { ...process.env, TZ: "UTC" },
});
process.stdout.write(JSON.stringify(JSON.parse(out.toString()).context) + "\n");
