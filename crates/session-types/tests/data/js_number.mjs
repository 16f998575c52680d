// Generates js_number.json: how JSON.stringify (node 20) prints numbers read by
// JSON.parse, as [JSON number text, printed text] pairs.
//
// Regenerate from the workspace root:
//   TZ=UTC node crates/session-types/tests/data/js_number.mjs > crates/session-types/tests/data/js_number.json
//
// Read by tests/it/js.rs, which parses each text with serde_json and prints it with
// session_types::js::stringify.
import process from "node:process";

const hand = [
  "0", "-0", "0.0", "-0.0", "1", "-1", "1.0", "-1.0", "1000.0", "1e3", "1E3", "1e+3", "1.5", "-1.5", "0.1",
  "0.2", "0.30000000000000004", "1e-6", "1e-7", "1.5e-7", "0.000001", "0.0000001", "0.000001234", "2e-7",
  "1e20", "1e21", "1e22", "123e18", "123456789012345680000", "999999999999999999999", "1e100", "1e300",
  "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "9007199254740991", "9007199254740992",
  "9007199254740993", "-9007199254740993", "9007199254740995", "12345678901234567890", "-12345678901234567890",
  "18446744073709551615", "18446744073709551616", "9223372036854775807", "-9223372036854775808",
  "-9223372036854775809", "123456789012345678901234567890", "4.35", "0.5", "100", "1234.5678", "3.14159",
  "1e-5", "1.23e-5", "12345678.9", "0.1e1", "10.0e-1", "4294967296", "4294967295.5", "1.0000000000000002",
  "0.9999999999999999", "1.7976931348623157e307", "-5e-324", "1e-323", "8.64e15", "-8.64e15", "1e15", "1e16",
  "1e17", "123456789", "1234567890123", "1767225600000", "0.001", "0.0001", "100000000000000000000",
  "1e-10", "-1e-7", "-1e21", "7.0", "25.00", "1.10", "0.000", "-0e5", "0e-5",
];

let seed = 0x4e0;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const sample = new Set();
while (sample.size < 250) {
  const x = (rand() < 0.5 ? -1 : 1) * rand() * 10 ** Math.floor(rand() * 60 - 30);
  const r = rand();
  if (r < 0.25) sample.add(x.toPrecision(1 + Math.floor(rand() * 21)).replace(/e\+?/, "e"));
  else if (r < 0.5) sample.add(x.toExponential(Math.floor(rand() * 20)));
  else if (r < 0.75) sample.add(String(BigInt(Math.floor(rand() * 1e6)) * 10n ** BigInt(Math.floor(rand() * 20)) + BigInt(Math.floor(rand() * 1000))));
  else sample.add(x.toFixed(Math.floor(rand() * 12)));
}

const rows = [...new Set([...hand, ...sample])].map((t) => [t, JSON.stringify(JSON.parse(t))]);
process.stdout.write("[\n" + rows.map((r) => JSON.stringify(r)).join(",\n") + "\n]\n");
