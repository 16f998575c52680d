#!/usr/bin/env node
// Batch oracle for `cargo xtask difffuzz`: what the reference implementation
// (@mariozechner/pi-coding-agent 0.73.1, loaded through the peer's lib.mjs) sees in
// each of many legacy session files, one JSON line per file, in input order.
//
// Usage: TZ=UTC node oracle.mjs <lib.mjs> <list-file>
//   <list-file> holds one absolute path per line. Output on stdout, per file:
//   { file, recovered, v1, list, sessionId, leafId, sessionName, entryCount, entryIds,
//     labels, context | contextHang | contextError, tree | treeHang | treeError,
//     openError? }
//
// Per file, exactly what `peer/context.mjs <file>` (seed 1) and `peer/list.mjs --dir`
// compute, on a private copy whose mtime is fixed (2001-01-01T00:00:00Z: the listing's
// `modified` falls back to it):
//   list       SessionManager.list("/", dir) of a directory holding only the copy,
//              read BEFORE open() (open rewrites v1/v2 files); null when not listed.
//   listThrows the file has a `session` first line but is not listed: buildSessionInfo
//              threw (and the reference swallowed it).
//   recovered  loadEntriesFromFile() found no valid header: open() then throws the
//              content away and writes a fresh header (data loss in the reference).
//   labels     getLabel(id) over getEntries() (as context.mjs --no-tree).
//   entryIds   the ids of getEntries() in file order (v1 ids are the seeded random
//              ids of the migration; the comparison renames them by position).
//
// The reference loops forever in two places, so both are checked first, on the same
// Map semantics the reference uses, and not run when they would loop:
//   buildSessionContext walks parentId links from the leaf without cycle detection
//   (`contextHang`); getTree sorts children with an explicit stack that never ends
//   when the node graph (duplicate ids collapse into one node, attached once per
//   entry) has a cycle reachable from a root (`treeHang`), and visits exponentially
//   many nodes on some duplicate patterns (`treeBlowup`, over 1e6 visits).
// Belt and braces: each file runs in a worker thread with a memory limit and a 60 s
// watchdog; a worker that dies or times out is replaced and the file reported with
// `workerError`.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

const FIXED_MTIME_S = Date.UTC(2001, 0, 1) / 1000;
const WATCHDOG_MS = 60_000;
const TREE_VISIT_LIMIT = 1_000_000;

if (isMainThread) {
	const [libArg, listArg] = process.argv.slice(2);
	if (!libArg || !listArg) {
		console.error("usage: TZ=UTC node oracle.mjs <lib.mjs> <list-file>");
		process.exit(2);
	}
	const lib = pathToFileURL(resolve(libArg)).href;
	const files = readFileSync(listArg, "utf8").split("\n").filter((l) => l.length > 0);
	const scratch = mkdtempSync(join(tmpdir(), "difffuzz-oracle-"));
	let worker = null;
	let pending = null;
	const spawn = () => {
		worker = new Worker(new URL(import.meta.url), {
			workerData: { lib, scratch },
			resourceLimits: { maxOldGenerationSizeMb: 768 },
		});
		worker.on("message", (m) => pending?.resolve(m));
		worker.on("error", (e) => pending?.resolve({ workerError: String(e?.message ?? e) }));
		worker.on("exit", (code) => pending?.resolve({ workerError: `worker exited with ${code}` }));
	};
	const run = (file) =>
		new Promise((resolveRun) => {
			const timer = setTimeout(() => pending?.resolve({ workerError: "watchdog: no answer in 60 s" }), WATCHDOG_MS);
			pending = {
				resolve: (m) => {
					clearTimeout(timer);
					pending = null;
					resolveRun(m);
				},
			};
			worker.postMessage(file);
		});
	spawn();
	for (const file of files) {
		let out = await run(file);
		if (out.workerError !== undefined) {
			out = { file, workerError: out.workerError };
			worker.removeAllListeners();
			await worker.terminate();
			spawn();
		}
		process.stdout.write(`${JSON.stringify(out)}\n`);
	}
	worker.removeAllListeners();
	await worker.terminate();
	rmSync(scratch, { recursive: true, force: true });
} else {
	const { lib, scratch } = workerData;
	const { installDeterminism, loadPi } = await import(lib);
	const clock = installDeterminism(1, Date.UTC(2030, 0, 1));
	const pi = await loadPi();
	let n = 0;
	parentPort.on("message", async (file) => {
		const dir = join(scratch, `w${process.pid}-${n++}`);
		mkdirSync(dir, { recursive: true });
		try {
			parentPort.postMessage(await one(pi, clock, file, dir));
		} catch (e) {
			parentPort.postMessage({ file, oracleError: String(e?.stack ?? e) });
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
}

async function one(pi, clock, file, dir) {
	const p = join(dir, basename(file));
	copyFileSync(file, p);
	utimesSync(p, FIXED_MTIME_S, FIXED_MTIME_S);
	const out = { file };
	try {
		const infos = await pi.SessionManager.list("/", dir);
		if (infos.length > 0) {
			const { path, ...rest } = infos[0];
			out.list = JSON.parse(JSON.stringify(rest));
		} else {
			out.list = null;
			// buildSessionInfo() returns null for a file whose first parsed line is not a
			// `session` record, and also when it throws (a null message, a non-string
			// name, content neither string nor array): tell the second case apart.
			out.listThrows = firstParsed(readFileSync(p, "utf8"))?.type === "session";
		}
	} catch (e) {
		out.listError = String(e);
	}
	const loaded = pi.loadEntriesFromFile(p);
	out.recovered = loaded.length === 0;
	// v1 (no version, or below 2): open() migrates it and gives every entry a new id.
	out.v1 = !out.recovered && (loaded[0].version ?? 1) < 2;
	// Same seed and clock as context.mjs for every file: v1 ids and recovered headers
	// do not depend on the file's position in the batch.
	clock.reseed(1, Date.UTC(2030, 0, 1));
	let sm;
	try {
		sm = pi.SessionManager.open(p);
	} catch (e) {
		out.openError = String(e);
		return out;
	}
	const entries = sm.getEntries();
	out.sessionId = sm.getSessionId();
	out.leafId = sm.getLeafId() ?? null;
	try {
		out.sessionName = sm.getSessionName() ?? null;
	} catch (e) {
		out.sessionNameError = String(e);
	}
	out.entryCount = entries.length;
	out.entryIds = entries.map((e) => e.id ?? null);
	out.labels = {};
	for (const e of entries) {
		const l = sm.getLabel(e.id);
		// An own property even for the id `__proto__` (an assignment would set the
		// object's prototype and drop the label from the output).
		if (l !== undefined)
			Object.defineProperty(out.labels, e.id, { value: l, enumerable: true, writable: true, configurable: true });
	}
	if (contextLoops(sm, entries)) out.contextHang = true;
	else {
		try {
			out.context = sm.buildSessionContext();
		} catch (e) {
			out.contextError = String(e);
		}
	}
	const tree = treeShape(entries);
	if (tree === "hang") out.treeHang = true;
	else if (tree === "blowup") out.treeBlowup = true;
	else {
		try {
			out.tree = preorder(sm.getTree());
		} catch (e) {
			out.treeError = String(e);
		}
	}
	return out;
}

// The first line JSON.parse accepts, as buildSessionInfo() reads the file.
function firstParsed(content) {
	for (const line of content.trim().split("\n")) {
		if (!line.trim()) continue;
		try {
			return JSON.parse(line);
		} catch {}
	}
	return undefined;
}

// The walk of buildSessionContext(entries, leafId, byId), with a visited set.
function contextLoops(sm, entries) {
	const byId = new Map();
	for (const e of entries) byId.set(e.id, e);
	const leafId = sm.getLeafId();
	if (leafId === null) return false;
	let leaf = leafId ? byId.get(leafId) : undefined;
	if (!leaf) leaf = entries[entries.length - 1];
	const seen = new Set();
	let current = leaf;
	while (current) {
		if (seen.has(current)) return true;
		seen.add(current);
		current = current.parentId ? byId.get(current.parentId) : undefined;
	}
	return false;
}

// getTree's node graph without the sort: "hang" when a cycle is reachable from a
// root, "blowup" when the traversal would visit more than TREE_VISIT_LIMIT nodes.
function treeShape(entries) {
	const nodes = new Map();
	for (const e of entries) nodes.set(e.id, { children: [] });
	const roots = [];
	for (const e of entries) {
		const node = nodes.get(e.id);
		if (e.parentId === null || e.parentId === e.id) roots.push(node);
		else {
			const parent = nodes.get(e.parentId);
			if (parent) parent.children.push(node);
			else roots.push(node);
		}
	}
	// Cycle check: iterative DFS with colours over distinct nodes.
	const colour = new Map();
	for (const r of roots) {
		if (colour.get(r) === 2) continue;
		const stack = [[r, 0]];
		colour.set(r, 1);
		while (stack.length) {
			const top = stack[stack.length - 1];
			const [node, i] = top;
			if (i < node.children.length) {
				top[1]++;
				const c = node.children[i];
				const k = colour.get(c);
				if (k === 1) return "hang";
				if (k === undefined) {
					colour.set(c, 1);
					stack.push([c, 0]);
				}
			} else {
				colour.set(node, 2);
				stack.pop();
			}
		}
	}
	// Acyclic: visits = sum over roots of subtree sizes counted with multiplicity.
	const size = new Map();
	const order = [];
	const seen = new Set();
	for (const r of roots) {
		const stack = [[r, false]];
		while (stack.length) {
			const [node, done] = stack.pop();
			if (done) {
				order.push(node);
				continue;
			}
			if (seen.has(node)) continue;
			seen.add(node);
			stack.push([node, true]);
			for (const c of node.children) stack.push([c, false]);
		}
	}
	for (const node of order) {
		let s = 1;
		for (const c of node.children) s += size.get(c) ?? 0;
		size.set(node, Math.min(s, TREE_VISIT_LIMIT + 1));
	}
	let total = 0;
	for (const r of roots) total += size.get(r) ?? 0;
	return total > TREE_VISIT_LIMIT ? "blowup" : "ok";
}

// context.mjs's pre-order: { roots: [id], nodes: [{id, parentId, type, children, depth, label?}] }.
function preorder(roots) {
	const nodes = [];
	const stack = [];
	for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], 0]);
	while (stack.length) {
		const [n, depth] = stack.pop();
		const rec = { id: n.entry.id, parentId: n.entry.parentId, type: n.entry.type, children: n.children.length, depth };
		if (n.label !== undefined) rec.label = n.label;
		nodes.push(rec);
		for (let i = n.children.length - 1; i >= 0; i--) stack.push([n.children[i], depth + 1]);
	}
	return { roots: roots.map((r) => r.entry.id), nodes };
}
