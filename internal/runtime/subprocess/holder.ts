/**
 * The session holder's entry script for pty sessions (holder-process.ts): started by
 * SubprocessProvider as `node holder.js <root>`, it runs every session's program in a pty of
 * its own. The ACP provider starts ../acp/holder.ts instead, which adds the ACP mode.
 */
import { runHolder } from "./holder-process.js";

await runHolder();
