// Issue 18 point 3, measured beside the reference in one run:
//   - open the 100k-entry session and rebuild its context: the package (through the owner)
//     against the reference's in-process open + buildSessionContext;
//   - listAll over the 2,000 generated sessions: the package against the reference;
//   - a durable appendMessage round trip: the package against a bare JSON-RPC client of
//     the same owner (the owner's own figure as a client sees it).
// Data: ../peer's generated set (`node gen.mjs`): --data DIR (default /work/peer/data).
// The store is built in --home DIR (default a temporary one, imported first and kept
// with --keep). BASE_CONTEXT_BCS should name a release build of bcs.
//
//   npm run build && BASE_CONTEXT_BCS=…/target/release/bcs node dist/bench/bench.js --data /work/peer/data

import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

import { SessionManager, connectOwner } from "../src/index.js";

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i]!;
  if (a.startsWith("--")) args.set(a.slice(2), process.argv[i + 1]?.startsWith("--") === false ? process.argv[++i]! : "true");
}
const data = args.get("data") ?? "/work/peer/data";
const runs = Number(args.get("runs") ?? 5);
const refRuns = Number(args.get("ref-runs") ?? 3);
const appends = Number(args.get("appends") ?? 300);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(3));
const rows: string[][] = [];
const row = (...cells: string[]) => {
  rows.push(cells);
  console.error(cells.join(" | "));
};

async function time<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

const home = args.get("home") ?? (await mkdtemp(join(tmpdir(), "bcs-ts-bench-")));
SessionManager.configure({ home });
const big = join(data, "big", "100k.jsonl");
const agentSessions = join(data, "agent", "sessions");

// ---- the store: the 100k session and the 2,000 sessions, imported -------------------
const [importBig, bigImport] = await time(() => SessionManager.importLegacy(big));
row("setup", "import 100k.jsonl", fmt(importBig), bigImport.alreadyImported ? "(already imported)" : `${bigImport.entries} entries`);
const [importMany, many] = await time(() => SessionManager.importLegacyTree(agentSessions));
row("setup", `import ${many.imported.length} sessions`, fmt(importMany), `${many.failed.length} failed`);

// ---- the reference, in process ---------------------------------------------------------
process.env.PI_CODING_AGENT_DIR = join(data, "agent");
const entry = import.meta.resolve("@mariozechner/pi-coding-agent");
const { SessionManager: Ref } = (await import(new URL("./core/session-manager.js", entry).href)) as { SessionManager: any };

await SessionManager.listAll(); // the owner is up and the catalog fresh before timing

// ---- open + context, and listAll: the reference (in process) and the package (through
// the owner) alternately, so that drift in the machine's load falls on both alike -------
const refOpen: number[] = [];
let refMessages = 0;
const ours: number[] = [];
let ourMessages = 0;
// The package's reps first: after the reference's in-process open of the 100k file this
// process holds a heap of ~1.6 GB, and the package's own JSON.parse of the context then
// pays for that heap's collections (54 ms a rep instead of ~10 in a quiet run of
// 2026-12-01); alternating the sides measured node's garbage, not the owner.
for (let i = 0; i < runs; i++) {
  const [ms, ctx] = await time(async () => {
    const sm = await SessionManager.openById(bigImport.sessionId);
    const c = await sm.buildSessionContext();
    await sm.close();
    return c;
  });
  ours.push(ms);
  ourMessages = ctx.messages.length;
}
for (let i = 0; i < refRuns; i++) {
  const [ms, ctx] = await time(async () => Ref.open(big).buildSessionContext());
  refOpen.push(ms);
  refMessages = ctx.messages.length;
  (globalThis as { gc?: () => void }).gc?.();
}
// listAll: the reference and the package alternately.
const refList: number[] = [];
let refCount = 0;
const ourList: number[] = [];
let ourCount = 0;
for (let i = 0; i < Math.max(runs, refRuns); i++) {
  if (i < refRuns) {
    const [ms, l] = await time(() => Ref.listAll() as Promise<unknown[]>);
    refList.push(ms);
    refCount = l.length;
  }
  if (i < runs) {
    const [ms, l] = await time(() => SessionManager.listAll());
    ourList.push(ms);
    ourCount = l.length;
  }
}

// ---- durable appends: the package and a bare client of the same owner ------------------
const message = (i: number) => ({ role: "user", content: `message ${i}`, timestamp: 1_735_689_600_000 + i });
// Samples alternate between the two clients, so that drift in the machine's load falls
// on both alike.
const sm = await SessionManager.create("/bench");
const { connection } = await connectOwner({ home });
const opened = await connection.call("store/create", { cwd: "/bench" });
const pkgAppend: number[] = [];
const rawAppend: number[] = [];
for (let i = 0; i < appends; i++) {
  pkgAppend.push((await time(() => sm.appendMessage(message(i))))[0]);
  rawAppend.push((await time(() => connection.call("session/appendMessage", { sessionId: opened.sessionId, message: message(i) })))[0]);
}
await sm.close();
connection.close();

const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`;
console.log(`node ${process.version}; bcs ${process.env.BASE_CONTEXT_BCS ?? "bcs"}; medians (reference ${refRuns} runs, package ${runs})\n`);
console.log("| operation | reference ms | package ms | speed-up |");
console.log("|---|---:|---:|---:|");
console.log(`| open + buildSessionContext, 100k.jsonl (${refMessages} / ${ourMessages} messages) | ${fmt(median(refOpen))} | ${fmt(median(ours))} | ${ratio(median(refOpen), median(ours))} |`);
console.log(`| listAll (${refCount} / ${ourCount} sessions) | ${fmt(median(refList))} | ${fmt(median(ourList))} | ${ratio(median(refList), median(ourList))} |`);
console.log(`\n| durable appendMessage round trip (${appends}, median) | bare JSON-RPC client ms | package ms | package / bare |`);
console.log("|---|---:|---:|---:|");
console.log(`| | ${fmt(median(rawAppend))} | ${fmt(median(pkgAppend))} | ${(median(pkgAppend) / median(rawAppend)).toFixed(2)} |`);
console.log(`\nsetup: ${rows.map((r) => r.join(" ")).join("; ")}`);

const pids = await SessionManager.shutdown();
for (const pid of pids) process.kill(pid, "SIGTERM");
if (!args.has("keep") && !args.has("home") && existsSync(home)) await rm(home, { recursive: true, force: true });
