/**
 * `gc dashboard` HTTP API without a browser: the built gc against a subprocess city (its
 * screen comes from the provider's raw output stream), the access rules, and the flags;
 * restart and reset quarantine through the API, `--interval`, and the read-only mode once
 * the controller is gone, against a tmux city.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeCity } from "../support/city.js";
import { startDashboard as dashboard, getJson, http, post, sse } from "./support.js";

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const hasPython = existsSync("/usr/bin/python3");

describe.skipIf(!hasPython)("gc dashboard API", { timeout: 120_000 }, () => {
  it("status = gc status --json; screen from the subprocess stream; token, origin and host rules", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
daemon:
  interval: 1h
agents:
  - name: py
    start_command: python3 -i -q
    ready_prompt_prefix: ">>> "
`);
    expect((await city.gc(["start"])).code).toBe(0);
    const d = await dashboard(city, ["--interval", "200ms"]);
    const auth = { "X-GC-Token": d.token };
    const st = await http(d.port, "GET", "/api/status", auth);
    expect(st.status).toBe(200);
    const cli = JSON.parse((await city.gc(["status", "--json"])).stdout) as Record<string, unknown>;
    const api = JSON.parse(st.body) as Record<string, unknown>;
    // Same document: only observation times may differ.
    expect(Object.keys(api)).toEqual(Object.keys(cli));
    expect((api.sessions as { name: string; state: string }[]).map((s) => [s.name, s.state])).toEqual(
      (cli.sessions as { name: string; state: string }[]).map((s) => [s.name, s.state]),
    );

    // The page embeds the newest snapshot (inert JSON) only for a URL with the right token.
    const page = await http(d.port, "GET", `/?token=${d.token}`);
    expect(page.status).toBe(200);
    const embedded = /<script type="application\/json" id="gc-initial">([^<]*)<\/script>/.exec(page.body);
    expect(JSON.parse(embedded?.[1] ?? "null")).toMatchObject({ sessions: [{ name: "py" }] });
    for (const path of ["/", `/?token=${d.token}x`]) {
      expect((await http(d.port, "GET", path)).body).not.toContain("gc-initial");
    }

    // Access rules.
    expect((await http(d.port, "GET", "/api/status")).status).toBe(401);
    expect((await http(d.port, "GET", "/api/status", { "X-GC-Token": `${d.token}x` })).status).toBe(401);
    expect(
      (await http(d.port, "GET", "/api/status", { ...auth, Host: `evil.example:${d.port}` })).status,
    ).toBe(421);
    const nudge = (headers: Record<string, string>, path = "/api/sessions/py/nudge") =>
      http(d.port, "POST", path, headers, JSON.stringify({ text: "print(6*7)", mode: "now" }));
    const json = { "Content-Type": "application/json" };
    expect((await nudge({ ...json })).status).toBe(401);
    expect((await http(d.port, "POST", `/api/sessions/py/nudge?token=${d.token}`, json, "{}")).status).toBe(
      401,
    );
    expect((await nudge({ ...json, ...auth, Origin: "http://evil.example" })).status).toBe(403);
    expect((await nudge({ ...json, ...auth, "Sec-Fetch-Site": "cross-site" })).status).toBe(403);
    expect((await nudge({ ...auth, "Content-Type": "text/plain" })).status).toBe(415);
    expect((await nudge({ ...json, ...auth }, "/api/sessions/nope/nudge")).status).toBe(404);
    const ok = await nudge({ ...json, ...auth, Origin: `http://127.0.0.1:${d.port}` });
    expect(ok.status, ok.body).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ session: "py", mode: "now", delivered: true });

    // The live screen comes from the provider's raw output stream and shows the answer.
    const events = await sse(d.port, `/api/events?token=${d.token}&session=py`, (es) =>
      es
        .filter((e) => e.event === "screen")
        .map((e) => (JSON.parse(e.data) as { data: string }).data)
        .join("")
        .includes("42"),
    );
    expect(events[0]?.event).toBe("status");
    const frame = JSON.parse(events.find((e) => e.event === "screen")!.data) as { source: string };
    expect(frame.source).toBe("stream");

    // The detail: drift entry, events with the audit event of the nudge, peek history.
    const detail = JSON.parse((await http(d.port, "GET", "/api/sessions/py", auth)).body) as {
      drift: { drift: string };
      events: { type: string; payload: Record<string, unknown> }[];
      peek: { text: string };
    };
    expect(detail.drift.drift).toBe("none");
    expect(detail.events.find((e) => e.type === "nudge.sent")?.payload).toEqual({ mode: "now" });
    expect(detail.peek.text).toContain("42");

    // Stop through the API holds the session down, as gc stop NAME does.
    expect((await http(d.port, "POST", "/api/sessions/py/stop", { ...json, ...auth }, "{}")).status).toBe(
      200,
    );
    const after = JSON.parse((await city.gc(["session", "list", "--json"])).stdout) as {
      sessions: { name: string; state: string; held: string | null }[];
    };
    expect(after.sessions[0]).toMatchObject({ name: "py", state: "suspended" });
    expect(after.sessions[0]?.held).toContain("stopped by operator");
  });

  it("flags: non-loopback needs --allow-remote; --port and --open take effect", async () => {
    const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: subprocess
agents:
  - name: a
    start_command: sleep 100000
`);
    const refused = await city.gc(["dashboard", "--host", "0.0.0.0"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--allow-remote");
    expect((await city.gc(["dashboard", "--interval", "10ms"])).code).toBe(2);
    const port = await freePort();
    const opened = join(city.dir, "opened.txt");
    writeFileSync(join(city.dir, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > ${JSON.stringify(opened)}\n`);
    chmodSync(join(city.dir, "xdg-open"), 0o755);
    const d = await dashboard(city, ["--port", String(port), "--open"], {
      PATH: `${city.dir}:${process.env.PATH ?? ""}`,
    });
    expect(d.port).toBe(port);
    await expect.poll(() => existsSync(opened) && readFileSync(opened, "utf8")).toBe(d.url);
  });
});

interface StatusDoc {
  controller: { running: boolean };
  sessions: { name: string; state: string; running: boolean }[];
}
interface DetailDoc {
  generation: number | null;
  events: { seq: number; type: string; payload: Record<string, unknown> }[];
}

describe.skipIf(!existsSync("/usr/bin/tmux"))("gc dashboard actions", { timeout: 180_000 }, () => {
  it("restart and reset quarantine through the API; --interval bounds the snapshot's age; controller killed → read-only", async () => {
    const yaml = `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
  backoff: { min: 100ms, max: 400ms }
  quarantine: { threshold: 2 }
agents:
  - name: good
    start_command: "exec sleep 100000"
  - name: crashy
    start_command: ${JSON.stringify("test -f @DIR@/healed || exit 3; exec sleep 100000")}
    ready_delay_ms: 200
`;
    const city = makeCity(yaml);
    city.write(yaml.replace("@DIR@", city.dir));
    await city.gc(["start"]); // exit 1: crashy failed in the first pass; the controller runs on
    // Two dashboards: one observes every 100ms, one took its snapshot at start and keeps it an hour.
    const d = await dashboard(city, ["--interval", "100ms"]);
    const slow = await dashboard(city, ["--interval", "1h"]);
    const slowFirst = (await http(slow.port, "GET", "/api/status", { "X-GC-Token": slow.token })).body;
    const status = () => getJson<StatusDoc>(d, "/api/status");
    const row = async (name: string) => (await status()).sessions.find((s) => s.name === name);
    await expect.poll(async () => (await row("crashy"))?.state, { timeout: 60_000 }).toBe("quarantined");

    // Restart: the same code as gc session restart — a new generation and its audit event.
    const before = await getJson<DetailDoc>(d, "/api/sessions/good");
    const restarted = await post(d, "/api/sessions/good/restart");
    expect(restarted.status, JSON.stringify(restarted.json)).toBe(200);
    expect(restarted.json).toMatchObject({ session: "good", restarted: true, state: "running" });
    expect(restarted.json.generation).toBeGreaterThan(before.generation ?? 0);
    const good = await getJson<DetailDoc>(d, "/api/sessions/good");
    expect(good.events.map((e) => e.type)).toContain("session.restart-requested");

    // Reset quarantine: history forgotten, a pass runs, the healed command now stays up.
    writeFileSync(join(city.dir, "healed"), "");
    const reset = await post(d, "/api/sessions/crashy/reset");
    expect(reset.status, JSON.stringify(reset.json)).toBe(200);
    expect(reset.json).toMatchObject({ session: "crashy", reset: true });
    await expect.poll(async () => (await row("crashy"))?.running, { timeout: 30_000 }).toBe(true);
    const crashy = await getJson<DetailDoc>(d, "/api/sessions/crashy");
    expect(crashy.events.find((e) => e.type === "session.reset")?.payload).toEqual({ from: "quarantined" });

    // An answer to a session that waits on nothing: refused with 409 GC_FAILED (docs/dashboard.md).
    const unasked = await post(d, "/api/sessions/good/respond", { action: "approve" });
    expect(unasked.status, JSON.stringify(unasked.json)).toBe(409);
    expect(unasked.json.error).toEqual({ code: "GC_FAILED", message: "good is not waiting for input" });

    // The controller dies: the dashboard says so and refuses every action; nothing changes.
    const pid = Number(readFileSync(join(city.dir, ".gc", "controller.pid"), "utf8").trim());
    process.kill(pid, "SIGKILL");
    await expect.poll(async () => (await status()).controller.running, { timeout: 20_000 }).toBe(false);
    const { generation, events } = await getJson<DetailDoc>(d, "/api/sessions/good");
    const lastSeq = events[0]?.seq ?? 0;
    for (const [action, body] of [
      ["restart", {}],
      ["reset", {}],
      ["stop", {}],
      ["nudge", { text: "hi", mode: "now" }],
    ] as const) {
      const r = await post(d, `/api/sessions/good/${action}`, body);
      expect(r.status, action).toBe(409);
      expect((r.json.error as { code: string }).code).toBe("GC_READ_ONLY");
    }
    const after = await getJson<DetailDoc>(d, "/api/sessions/good");
    expect(after.generation).toBe(generation);
    expect(after.events.filter((e) => e.type.startsWith("session.") && e.seq > lastSeq)).toEqual([]);
    expect((await row("good"))?.running).toBe(true);

    // --interval 1h: every answer is the snapshot taken at start (controller running, crashy
    // not yet reset), though the city changed under it.
    const slowLast = (await http(slow.port, "GET", "/api/status", { "X-GC-Token": slow.token })).body;
    expect(slowLast).toBe(slowFirst);
    expect((JSON.parse(slowLast) as StatusDoc).controller.running).toBe(true);
  });
});
