/**
 * The ACP provider's session holder entry script: the subprocess holder process
 * (../subprocess/holder-process.ts) with the ACP mode (holder-mode.ts) plugged in, so it runs
 * ACP agents on pipes as well as programs in ptys. Started by AcpProvider as
 * `node acp/holder.js <root>`.
 */
import { runHolder } from "../subprocess/holder-process.js";
import { acpMode } from "./holder-mode.js";
import { ACP_MODE } from "./wire.js";

await runHolder({ [ACP_MODE]: acpMode });
