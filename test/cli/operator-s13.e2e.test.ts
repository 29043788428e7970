/**
 * What an operator running a night of 20 tmux and subprocess sessions met in session 13
 * (docs/decisions.md, "An operator's night with the dashboard and the disruptions"): a
 * dashboard whose city file turns invalid while it runs keeps its sessions on the last good
 * config (restart works, drift is the last good one's), as every CLI command does.
 */
import { describe, expect, it } from "vitest";
import { startDashboard as dashboard, getJson, post } from "../dashboard/support.js";
import { makeCity } from "../support/city.js";

const CITY = `workspace:
  name: "@NAME@"
session:
  provider: subprocess
agents:
  - name: a
    start_command: "sh -i"
  - name: b
    start_command: "sh -i"
`;

describe("a city file that turns invalid under a running dashboard", () => {
  it("leaves its sessions on the last good config: restart works, drift is not 'not in the city file'", {
    timeout: 120_000,
  }, async () => {
    const city = makeCity(CITY);
    const started = await city.gc(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const d = await dashboard(city, ["--interval", "200ms"]);
    // Opened valid; then an edit breaks the file (the controller keeps the last good config).
    city.write(`${CITY}agents: [ {name: \n`);
    await expect
      .poll(async () => (await getJson<{ configError: string | null }>(d, "/api/status")).configError, {
        timeout: 30_000,
      })
      .toMatch(/city\.yaml/);

    const detail = await getJson<{ drift: { drift: string; reason?: string } }>(d, "/api/sessions/a");
    expect(detail.drift).toEqual({ session: "a", drift: "none", fields: [] });

    const r = await post(d, "/api/sessions/a/restart");
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json).toMatchObject({ session: "a", restarted: true, generation: 2 });

    // The grid keeps the file's order (the last good config's), with the error in the banner.
    const st = await getJson<{ sessions: { name: string }[]; configError: string }>(d, "/api/status");
    expect(st.sessions.map((s) => s.name)).toEqual(["a", "b"]);
  });
});
