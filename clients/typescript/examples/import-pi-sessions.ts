// Moving an existing reference agent's sessions into the Base Context store: import every
// plain JSONL session under ~/.pi/agent/sessions (never modified; a second run imports
// nothing new), then list them and resume the newest. Run: node dist/examples/import-pi-sessions.js [dir]
import { homedir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@base-context/sessions";

const root = process.argv[2] ?? join(homedir(), ".pi", "agent", "sessions");
const { imported, failed } = await SessionManager.importLegacyTree(root, {
  onFile: (path, r) => console.log(path, "alreadyImported" in r ? (r.alreadyImported ? "already imported" : r.sessionId) : `failed: ${r.message}`),
});
console.log(`${imported.length} imported, ${failed.length} failed`);

const sessions = await SessionManager.listAll(); // now in the native store
if (sessions.length > 0) {
  const resumed = await SessionManager.open(sessions[0]!.path);
  const context = await resumed.buildSessionContext();
  console.log(`newest: ${resumed.getSessionName() ?? resumed.getSessionId()}, ${context.messages.length} messages of context`);
  await resumed.close();
}
