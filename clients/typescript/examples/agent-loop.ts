// A minimal agent loop on the Base Context store: continue the newest session of this
// directory (or create one), append the user's prompt and the model's answer, and rebuild
// the context the next model call would be sent. Run: node dist/examples/agent-loop.js "prompt"
import { SessionManager } from "@base-context/sessions";

const cwd = process.cwd();
const session = await SessionManager.continueRecent(cwd); // starts `bcs serve` if needed
if (session.getLeafId() === null) await session.appendModelChange("anthropic", "claude-sonnet-4-5");

const prompt = process.argv[2] ?? "hello";
await session.appendMessage({ role: "user", content: prompt, timestamp: Date.now() });

const context = await session.buildSessionContext(); // what the model is sent
const reply = `(echo) ${prompt}, with ${context.messages.length} message(s) of context`; // call your model here
await session.appendMessage({
  role: "assistant", content: [{ type: "text", text: reply }], provider: "anthropic", model: "claude-sonnet-4-5",
  api: "anthropic-messages", stopReason: "stop", timestamp: Date.now(),
  usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
});

console.log(reply);
console.log(`${session.getSessionId()}: ${(await session.buildSessionContext()).messages.length} messages`);
await session.close();
