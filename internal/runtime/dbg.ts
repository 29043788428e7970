// TEMPORARY debug tracing (issue 13 investigation). Remove before commit.
export function dbg(...parts: unknown[]): void {
  if (process.env.GC_DEBUG_START !== "1") return;
  process.stderr.write(
    `${new Date().toISOString()} DBG ${process.pid} ${parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ")}\n`,
  );
}
