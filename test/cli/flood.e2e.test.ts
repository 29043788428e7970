/**
 * Fault injection, end to end with the built gc (tmux and subprocess): a local process holds
 * 2,000 idle connections to the controller's socket (re-opening each one closed) while an
 * operator runs commands. None fails: no "write EPIPE", no "build unknown".
 */
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { controlSocketPath } from "../../internal/controller/control.js";
import { makeCity, until } from "../support/city.js";
import { onPath } from "../support/path.js";

describe.each([
  { provider: "tmux", skip: !onPath("tmux") },
  { provider: "subprocess", skip: false },
])("control socket flood ($provider)", ({ provider, skip }) => {
  it.skipIf(skip)(
    "2,000 idle connections never make an operator's command fail",
    { timeout: 180_000 },
    async () => {
      const city = makeCity(`workspace:
  name: @NAME@
session:
  provider: ${provider}
daemon:
  interval: 1h
agents:
  - name: a
    start_command: "exec sleep 100000"
`);
      expect((await city.gc(["start"])).code).toBe(0);
      const path = controlSocketPath(join(city.dir, ".gc"));
      let stop = false;
      const socks = new Set<Socket>();
      const open = () => {
        if (stop) return;
        const s = connect(path);
        socks.add(s);
        s.on("error", () => undefined);
        s.on("close", () => {
          socks.delete(s);
          setTimeout(open, 1);
        });
      };
      for (let i = 0; i < 2_000; i++) open();
      onTestFinished(() => {
        stop = true;
        for (const s of socks) s.destroy();
      });
      await until("the flood is on", () => socks.size >= 1_000);

      for (const args of [["reconcile"], ["session", "restart", "a"], ["status"], ["status", "--json"]]) {
        const r = await city.gc(args);
        expect(r.code, `gc ${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(0);
        expect(r.stdout + r.stderr).not.toMatch(/EPIPE|build unknown|ECONNRESET|did not answer/);
        if (args[0] === "status" && args[1] === "--json") {
          const snap = JSON.parse(r.stdout) as { controller?: { build?: string | null } };
          expect(snap.controller?.build ?? "present").not.toBeNull();
        }
      }
    },
  );
});
