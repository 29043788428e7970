/**
 * The rendered transcript `peek` shows for an ACP session: the prompts (`> …`), the agent's
 * message text as it streamed, tool calls with their latest status, plans, permission
 * requests and turn ends. Pure.
 */

/** One thing that happened in the session, in order. Mutable while it streams. */
export type TranscriptEntry =
  | { kind: "user"; text: string }
  | { kind: "agent"; text: string }
  | { kind: "tool"; id: string; title: string; toolKind: string; status: string }
  | { kind: "plan"; items: { content: string; status: string }[] }
  | { kind: "note"; text: string };

const PLAN_MARK: Record<string, string> = { completed: "[x]", in_progress: "[~]", pending: "[ ]" };

/** The entries as text lines. */
function lines(entries: readonly TranscriptEntry[]): string[] {
  const out: string[] = [];
  let open = false; // the last line is an unfinished agent line
  const push = (text: string) => {
    out.push(text);
    open = false;
  };
  for (const e of entries) {
    switch (e.kind) {
      case "agent": {
        const parts = e.text.replace(/\r\n?/g, "\n").split("\n");
        if (open && out.length > 0) out[out.length - 1] += parts.shift() ?? "";
        for (const p of parts) out.push(p);
        open = !e.text.endsWith("\n");
        if (!open && out.at(-1) === "") out.pop();
        break;
      }
      case "user":
        for (const l of e.text.split("\n")) push(`> ${l}`);
        break;
      case "tool":
        push(`[tool] ${e.title} (${e.status})`);
        break;
      case "plan":
        push("[plan]");
        for (const i of e.items) push(`  ${PLAN_MARK[i.status] ?? "[ ]"} ${i.content}`);
        break;
      case "note":
        push(e.text);
        break;
    }
  }
  return out;
}

/** The last `n` lines of the transcript (all when `n <= 0`), trailing blank lines dropped, newest last. Pure. */
export function renderTranscript(entries: readonly TranscriptEntry[], n: number): string {
  const all = lines(entries);
  while (all.length > 0 && all[all.length - 1]!.trim() === "") all.pop();
  return (n > 0 ? all.slice(-n) : all).join("\n");
}
