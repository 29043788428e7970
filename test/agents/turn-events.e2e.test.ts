/**
 * Turn events from the controller's work watcher with a real agent CLI (Claude Code, pinned in
 * scripts/agent-clis.mjs) on tmux and on subprocess, talking to the model-API double: with the
 * pass interval at an hour, each paced turn (a 5 s silence mid-stream) still gets exactly one
 * `turn.started` and one `turn.ended`, the `turn.ended` arrives only after the double's stream
 * ended (never during the silence), and no controller pass ran in between — the watcher, not
 * a pass, saw the turn. The delay from the last chunk is logged (bench/turns.mjs measures it).
 *
 * Skips (with the reason) only when npm cannot be reached and nothing is cached.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { installAgentCli, npmUnreachable } from "../../scripts/agent-clis.mjs";
import { makeCity, until } from "../support/city.js";
import { turnCityYaml } from "./model-api/clis.js";
import { Script, startModelApi } from "./model-api/index.js";

let bin: string | undefined;
let skipReason: string | undefined;

beforeAll(async () => {
  try {
    bin = (await installAgentCli("claude")).bin;
  } catch (e) {
    skipReason = await npmUnreachable();
    if (!skipReason) throw e;
  }
}, 900_000);

interface EventRow {
  seq: number;
  type: string;
}

describe.each(["tmux", "subprocess"])("turn events between passes on %s", (provider) => {
  it("claude: paced turns end with one turn.ended each, after the stream, without a pass", {
    timeout: 600_000,
  }, async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const city = makeCity("workspace: { name: '@NAME@' }\n", ctx.onTestFinished);
    const api = await startModelApi(
      new Script("Done.").on("paced turn", {
        text: "alpha beta gamma delta epsilon zeta eta theta",
        chunks: 8,
        overMs: 8_000,
        silenceMs: 5_000,
      }),
    );
    ctx.onTestFinished(() => api.close());
    const agents = [
      {
        name: "claude",
        cli: "claude" as const,
        bin: bin!,
        home: join(city.dir, "home"),
        work: join(city.dir, "work"),
        url: api.url,
      },
    ];
    city.write(`${turnCityYaml(provider, agents, "ask")}daemon: { interval: 1h }\n`);
    const started = await city.gc(["start"], { timeoutMs: 300_000 });
    expect(started.code, `${started.stdout}\n${started.stderr}`).toBe(0);
    const ready = await city.gc(["wait", "claude", "--idle", "--timeout", "240s"], { timeoutMs: 300_000 });
    expect(ready.code, ready.stdout + ready.stderr).toBe(0);
    const db = new Database(join(city.dir, ".gc", "state.db"), { readonly: true, fileMustExist: true });
    ctx.onTestFinished(() => {
      db.close();
    });
    db.pragma("busy_timeout = 2000");
    const events = (after: number) =>
      db
        .prepare(
          "SELECT seq, type FROM events WHERE session = 'claude' AND seq > ? AND type IN ('turn.started', 'turn.ended') ORDER BY seq",
        )
        .all(after) as EventRow[];
    // The controller's recorded work (record metadata gc.work): idle with no turn open.
    const recordedIdle = () => {
      const row = db.prepare("SELECT record FROM sessions WHERE name = 'claude'").get() as
        | { record: string }
        | undefined;
      const meta = row
        ? (JSON.parse(row.record) as { metadata?: Record<string, string> }).metadata
        : undefined;
      const w = meta?.["gc.work"]
        ? (JSON.parse(meta["gc.work"]) as { state: string; turnSince?: number })
        : undefined;
      return w?.state === "idle" && w.turnSince === undefined;
    };
    // Its own connection: the hooks that close `db` may run first.
    ctx.onTestFailed(() => {
      const again = new Database(join(city.dir, ".gc", "state.db"), { readonly: true, fileMustExist: true });
      try {
        const all = again
          .prepare("SELECT seq, type, at, payload FROM events WHERE session = 'claude' ORDER BY seq")
          .all();
        console.log(`${provider}: the session's events:\n${all.map((e) => JSON.stringify(e)).join("\n")}`);
        console.log(
          `${provider}: the model double's requests:\n${api
            .turns()
            .map((t) =>
              JSON.stringify({
                seq: t.seq,
                at: t.at,
                texts: t.userTexts,
                last: t.lastChunkAt,
                ended: t.endedAt,
              }),
            )
            .join("\n")}`,
        );
      } finally {
        again.close();
      }
    });
    const lastPassAt = async () => {
      const r = await city.gc(["status", "--json"]);
      return (JSON.parse(r.stdout) as { controller: { lastPass: { at: number } | null } }).controller.lastPass
        ?.at;
    };

    for (let i = 1; i <= 3; i++) {
      const text = `paced turn ${i}`;
      // The start's own output (a turn of its own until it settles) is over first.
      await until("the recorded work idle", recordedIdle, 60_000);
      const baseline = (db.prepare("SELECT coalesce(max(seq), 0) AS s FROM events").get() as { s: number }).s;
      const sentAt = Date.now();
      const nudged = await city.gc(["nudge", "claude", text, "--wait", "120s"]);
      expect(nudged.code, nudged.stderr).toBe(0);
      // The turn.ended, read as it arrives (the double's request log says whether it still streamed).
      const ended = await until(
        `turn ${i}'s turn.ended`,
        () => {
          const e = events(baseline).find((x) => x.type === "turn.ended");
          if (!e) return undefined;
          const req = api.turns().find((t) => t.userTexts.some((u) => u.includes(text)));
          return { arrived: Date.now(), req };
        },
        120_000,
      );
      expect(ended.req, "the turn reached the model before it was over").toBeDefined();
      expect(ended.req!.endedAt, "turn.ended while the model still streamed").toBeDefined();
      expect(ended.req!.endedAt!).toBeLessThanOrEqual(ended.arrived);
      console.log(
        `${provider}: turn ${i}: turn.ended ${ended.arrived - ended.req!.lastChunkAt!} ms after the last chunk`,
      );
      // One turn, one end (a second turn.ended would be a false idle followed by a restart).
      await expect.poll(() => events(baseline).map((e) => e.type)).toEqual(["turn.started", "turn.ended"]);
      // No pass since the nudge: the watcher saw the turn.
      expect((await lastPassAt()) ?? 0).toBeLessThan(sentAt);
    }
  });
});
