/**
 * docs/exec-protocol.md must show the implementation's operation table verbatim, and the
 * reference script must declare every operation of that table.
 */
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { EXEC_OPERATIONS, renderOperationTable } from "../../../internal/runtime/exec/index.js";
import { onPath } from "../../support/path.js";
import { TMUX_SCRIPT } from "./mock.js";

const DOC = new URL("../../../docs/exec-protocol.md", import.meta.url);

describe("exec protocol documentation", () => {
  it("docs/exec-protocol.md: the operation table matches internal/runtime/exec/protocol.ts", async () => {
    const doc = await readFile(DOC, "utf8");
    const m = /<!-- exec-operations:begin[^>]*-->\n([\s\S]*?)\n<!-- exec-operations:end -->/.exec(doc);
    expect(m, "the exec-operations markers are missing").not.toBeNull();
    // On mismatch, paste the expected table (printed by this assertion) into the doc.
    expect(m?.[1]).toBe(renderOperationTable());
  });

  it.skipIf(!onPath("jq"))("gc-session-tmux: capabilities declares every protocol operation", () => {
    const out = execFileSync(TMUX_SCRIPT, ["capabilities"], { encoding: "utf8" });
    const caps = JSON.parse(out) as { protocol: number; operations: string[] };
    expect(caps.protocol).toBe(2);
    expect([...caps.operations].sort()).toEqual(EXEC_OPERATIONS.map((o) => o.op).sort());
  });
});
