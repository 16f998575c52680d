// The reference side of `cargo xtask bench` (xtask/src/bench/reference.rs runs it with
// node --expose-gc, the reference installed in target/peer, and TZ as set).
//
//   node --expose-gc reference.mjs main LIB BIG AGENT2000 AGENT10000 REPS BIG_REPS N_APPEND [GROUPS]
//     times everything that runs in-process and prints one JSON object of samples (ms
//     unless said otherwise): open/, context/, resume/ (their sum per rep) and tree/
//     for each of 1k, 10k, 100k (BIG_REPS reps at 100k); list/2000 and list/10000
//     (and listCount/*, the number listed); append/persisted (µs per entry of
//     N_APPEND persisted appendMessage calls on a new session) and
//     append/persisted-cpu (process CPU µs per entry). GROUPS (comma-separated,
//     default all) selects: resume and tree (the first two), list, append
//     (`cargo xtask bench --only` passes the groups its words name). Progress
//     goes to stderr.
//   node reference.mjs rss LIB FILE
//     the fresh-process probe: open FILE, build its context, print this process's
//     peak RSS ({"vmHwmKiB", "maxRssKiB", "messages"}).
//
// LIB is the peer's lib.mjs (its loadPi() loads @mariozechner/pi-coding-agent 0.73.1).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
const [mode, libPath, ...rest] = process.argv.slice(2);
const { loadPi } = await import(resolve(libPath));
const pi = await loadPi();
const SM = pi.SessionManager;
const gc = globalThis.gc ?? (() => {});
if (mode === "rss") {
	const sm = SM.open(rest[0]);
	const ctx = sm.buildSessionContext();
	// VmHWM is this process image's own peak; resourceUsage().maxRSS also carries the
	// high-water mark of the (forked) parent across exec.
	const hwm = Number(/VmHWM:\s*(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
	process.stdout.write(JSON.stringify({ vmHwmKiB: hwm, maxRssKiB: process.resourceUsage().maxRSS, messages: ctx.messages.length }));
	process.exit(0);
}
const [bigDir, agent2000, agent10000, repsArg, bigRepsArg, nAppendArg, groupsArg] = rest;
const REPS = Number(repsArg), BIG = Number(bigRepsArg), NAPPEND = Number(nAppendArg);
const GROUPS = (groupsArg ?? "resume,tree,list,append").split(",");
const runs = (g) => GROUPS.includes(g);
const out = {};
const put = (k, v) => { out[k] = v; process.stderr.write(`reference: ${k} ${JSON.stringify(v.map((x) => +x.toFixed(3)))}\n`); };
async function reps(n, fn, { setup } = {}) {
	const s = [];
	for (let i = 0; i < n + 1; i++) {
		const c = setup?.();
		gc();
		const t0 = performance.now();
		await fn(c);
		const dt = performance.now() - t0;
		if (i > 0) s.push(dt);
	}
	return s;
}
for (const size of runs("resume") || runs("tree") ? ["1k", "10k", "100k"] : []) {
	const p = join(bigDir, `${size}.jsonl`);
	const n = size === "100k" ? BIG : REPS;
	const open = [], ctx = [];
	let sm;
	for (let i = 0; i < n + 1; i++) {
		sm = undefined;
		gc();
		const t0 = performance.now();
		sm = SM.open(p);
		const t1 = performance.now();
		sm.buildSessionContext();
		const t2 = performance.now();
		if (i > 0) { open.push(t1 - t0); ctx.push(t2 - t1); }
	}
	put(`open/${size}`, open);
	put(`context/${size}`, ctx);
	put(`resume/${size}`, open.map((o, i) => o + ctx[i]));
	put(`tree/${size}`, await reps(REPS, () => sm.getTree()));
}
for (const [label, dir] of runs("list") ? [["2000", agent2000], ["10000", agent10000]] : []) {
	let count = 0;
	const s = await reps(REPS, async () => {
		process.env.PI_CODING_AGENT_DIR = dir;
		count = (await SM.listAll()).length;
	});
	put(`list/${label}`, s);
	out[`listCount/${label}`] = count;
}
if (runs("append")) {
	const src = SM.open(join(bigDir, "1k.jsonl"));
	const payloads = src.getEntries().filter((e) => e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)).map((e) => e.message);
	const tmp = mkdtempSync(join(tmpdir(), "xtask-bench-ref-"));
	const dir = join(tmp, "fresh");
	const cpu = [];
	const s = await reps(REPS, () => {
		const sm = SM.create("/bench/fresh", dir);
		const c0 = process.cpuUsage();
		for (let i = 0; i < NAPPEND; i++) sm.appendMessage(payloads[i % payloads.length]);
		const c = process.cpuUsage(c0);
		cpu.push((c.user + c.system) / NAPPEND);
	}, { setup: () => rmSync(dir, { recursive: true, force: true }) });
	put("append/persisted", s.map((x) => (x / NAPPEND) * 1000));
	put("append/persisted-cpu", cpu.slice(1));
	rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
