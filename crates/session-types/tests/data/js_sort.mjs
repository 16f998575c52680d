// Generates js_sort.json: the orders V8's Array.prototype.sort gives for the
// reference's sibling comparator, `(a, b) => ts(a) - ts(b)`, where an invalid
// timestamp is NaN (so comparisons with it are NaN, read as "equal").
//
// Regenerate (node 20, the reference's engine) from the workspace root:
//   TZ=UTC node crates/session-types/tests/data/js_sort.mjs > crates/session-types/tests/data/js_sort.json
//
// Each case: `keys` (ms since the epoch; null = NaN) in input order and `order`, the
// input positions in the order V8 leaves them. Read by tests/it/js.rs.
import process from "node:process";

let seed = 0x5eed1234;
function rand() {
  // mulberry32: small, seeded, deterministic.
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rand() * n);

// Key patterns, chosen to meet every branch of TimSort with and without NaN:
// random with many ties, ascending append order with NaN sprinkled in (the common
// case of a real session), descending runs, long equal stretches, nearly all NaN.
const patterns = [
  (n) => Array.from({ length: n }, () => (rand() < 0.3 ? null : int(12) * 1000)),
  (n) => Array.from({ length: n }, (_, i) => (rand() < 0.1 ? null : i * 2 + int(3))),
  (n) => Array.from({ length: n }, (_, i) => (rand() < 0.15 ? null : (n - i) * 10 + (int(8) === 0 ? 100 : 0))),
  (n) => {
    let v = 0;
    return Array.from({ length: n }, () => {
      if (rand() < 0.08) v = int(5);
      return rand() < 0.2 ? null : v;
    });
  },
  (n) => Array.from({ length: n }, () => (rand() < 0.9 ? null : int(1000))),
  (n) => Array.from({ length: n }, () => (rand() < 0.5 ? null : int(n) * 7 - 3)),
  (n) => {
    // Runs alternating ascending and descending, NaN at run boundaries.
    const out = [];
    while (out.length < n) {
      const len = 1 + int(40), up = rand() < 0.5, base = int(1000);
      for (let i = 0; i < len && out.length < n; i++) out.push(up ? base + i : base - i);
      if (rand() < 0.5 && out.length < n) out.push(null);
    }
    return out;
  },
  (n) => Array.from({ length: n }, () => int(1e4) - 5e3),
];

const cases = [];
const add = (keys) => {
  const items = keys.map((k, i) => ({ i, t: k === null ? NaN : k }));
  items.sort((a, b) => a.t - b.t);
  cases.push({ keys, order: items.map((x) => x.i) });
};
for (let n = 1; n <= 300; n++) add(patterns[n % patterns.length](n));
// Every array of 1-5 keys over {NaN, 0, 1, 2}: short arrays are where an engine's
// small-array shortcut (newer V8s skip run detection below 10 elements) shows.
for (let n = 1; n <= 5; n++) {
  for (let code = 0; code < 4 ** n; code++) {
    const keys = [];
    for (let i = 0, c = code; i < n; i++, c = Math.floor(c / 4)) keys.push(c % 4 === 0 ? null : (c % 4) - 1);
    add(keys);
  }
}
for (let i = 0; i < 300; i++) add(Array.from({ length: 6 + int(5) }, () => (rand() < 0.4 ? null : int(4))));
for (const n of [777, 1500]) {
  for (const p of patterns) add(p(n));
}
process.stdout.write("[\n" + cases.map((c) => JSON.stringify(c)).join(",\n") + "\n]\n");
