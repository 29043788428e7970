/**
 * The one output collector of every exec path (proc/capture.ts): each stream capped alike, and
 * a cut command's error carrying what was captured (errors.ts capturedOutputOf).
 */
import { describe, expect, it } from "vitest";
import { attachCapturedOutput, capturedOutputOf, OperationTimeoutError } from "../../internal/base/errors.js";
import { OutputCapture } from "../../internal/proc/capture.js";
import { run } from "../../internal/proc/run.js";

describe("OutputCapture", () => {
  it("keeps stdout and stderr apart, copies chunks, stops keeping a stream past its cap", () => {
    const c = new OutputCapture({ maxBytes: 4 });
    const reused = Buffer.from("ab");
    c.stdout(reused);
    reused.write("zz");
    c.stdout(Buffer.from("cde"));
    c.stdout(Buffer.from("dropped"));
    c.stderr(Buffer.from("é"));
    expect(c.text()).toEqual({ stdout: "abcde", stderr: "é" });
  });

  it("cut: the error carries the text captured so far; a primitive reason is returned unchanged", () => {
    const c = new OutputCapture({ keepOnCut: true });
    c.stdout(Buffer.from("so far"));
    const e = c.cut(new OperationTimeoutError("x", 1));
    expect(capturedOutputOf(e)).toEqual({ stdout: "so far", stderr: "" });
    expect(Object.keys(e)).not.toContain("stdout"); // non-enumerable: logs and JSON stay as they were
    expect(c.cut("reason")).toBe("reason");
    // Without keepOnCut (gc's own commands) the error is left as it is.
    const quiet = new OutputCapture();
    quiet.stdout(Buffer.from("a session's environment"));
    expect(capturedOutputOf(quiet.cut(new Error("shared abort reason")))).toBeUndefined();
    expect(capturedOutputOf("reason")).toBeUndefined();
    expect(
      capturedOutputOf(attachCapturedOutput(Object.freeze(new Error("f")), { stdout: "", stderr: "" })),
    ).toBe(undefined);
  });

  it("run: with keepOutputOnCut a timeout rejects carrying what the child printed first (the abort: conformance exec.abort-keeps-output); without, it carries nothing", async () => {
    const argv = ["sh", "-c", "printf out; printf err >&2; exec sleep 60"];
    const [kept, plain] = await Promise.all([
      run(argv, { timeoutMs: 2_000, keepOutputOnCut: true }).catch((e: unknown) => e),
      run(argv, { timeoutMs: 2_000 }).catch((e: unknown) => e),
    ]);
    expect(kept).toBeInstanceOf(OperationTimeoutError);
    expect(capturedOutputOf(kept)).toEqual({ stdout: "out", stderr: "err" });
    expect(plain).toBeInstanceOf(OperationTimeoutError);
    expect(capturedOutputOf(plain)).toBeUndefined();
  });
});
