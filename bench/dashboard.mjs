#!/usr/bin/env node
// bench/dashboard: what viewers cost. A real city (N tmux sessions, controller running) and a
// real `gc dashboard`; for each viewer count V, V server-sent-event clients watch the grid for
// W seconds while the CPU time of the dashboard, the controller and the city's tmux server is
// read from /proc. Baseline, same run, same work: V viewers that each take their own status
// snapshot per interval (what a per-viewer design pays), measured in this process. Also the
// 200-card grid render time in Debian's chromium when it is installed. Needs `npm run build`.
//   node bench/dashboard.mjs [--sessions N] [--viewers 1,10,50] [--seconds W]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { benchStart, GC_BIN } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "20" },
    viewers: { type: "string", default: "1,10,50" },
    seconds: { type: "string", default: "5" },
  },
});
benchStart("bench/dashboard");
const N = Number(values.sessions);
const VIEWERS = values.viewers.split(",").map(Number);
const W = Number(values.seconds) * 1000;
const INTERVAL = 500;
const gc = GC_BIN;
const dist = new URL("../dist/", import.meta.url);
const dir = mkdtempSync(join(tmpdir(), "gc-bench-dash-"));
const name = `bd${process.pid}`;
const agents = Array.from({ length: N }, (_, i) => `  - name: s${i}\n    start_command: sleep 100000\n`).join(
  "",
);
writeFileSync(
  join(dir, "city.yaml"),
  `workspace:\n  name: ${name}\nsession:\n  provider: tmux\ndaemon:\n  interval: 1h\nagents:\n${agents}`,
);
const run = (...args) => spawnSync(process.execPath, [gc, "--city", dir, ...args], { encoding: "utf8" });

/** CPU seconds (user + system) of a pid so far. */
function cpu(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

let dash;
try {
  if (run("start").status !== 0) throw new Error("gc start failed");
  const ctlPid = Number(readFileSync(join(dir, ".gc", "controller.pid"), "utf8"));
  const { cityIdOf, defaultSocketName } = await import(new URL("internal/runtime/identity.js", dist).href);
  const socket = defaultSocketName(name, cityIdOf(dir, name));
  const tmuxPid = Number(
    spawnSync("tmux", ["-L", socket, "display", "-p", "#{pid}"], { encoding: "utf8" }).stdout,
  );
  dash = spawn(process.execPath, [gc, "--city", dir, "dashboard", "--json", "--interval", `${INTERVAL}ms`], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const info = await new Promise((resolve) => {
    let out = "";
    dash.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0]));
    });
  });
  const base = new URL(info.url).origin;

  /** Opens V event streams for W ms; resolves the status events they received. */
  async function watch(v) {
    let events = 0;
    const reqs = Array.from({ length: v }, () => {
      const r = request(`${base}/api/events?token=${info.token}`, (res) =>
        res.on("data", (d) => {
          events += String(d).split("event: status").length - 1;
        }),
      );
      r.on("error", () => undefined);
      r.end();
      return r;
    });
    await sleep(W);
    for (const r of reqs) r.destroy();
    return events;
  }

  console.log(`city: ${N} tmux sessions, snapshot interval ${INTERVAL}ms, ${W / 1000}s per row`);
  console.log("viewers  dashboard-cpu  controller-cpu  tmux-cpu  | per-viewer baseline cpu  ratio");
  const { openCity } = await import(new URL("cmd/gc/deps.js", dist).href);
  const { observeStatus, statusJson } = await import(
    new URL("internal/controller/status-snapshot.js", dist).href
  );
  const city = await openCity({
    cwd: dir,
    env: process.env,
    cityFlag: dir,
    json: true,
    err: () => undefined,
  });
  for (const v of VIEWERS) {
    const before = [cpu(dash.pid), cpu(ctlPid), cpu(tmuxPid)];
    await watch(v);
    const [d, c, t] = [cpu(dash.pid) - before[0], cpu(ctlPid) - before[1], cpu(tmuxPid) - before[2]];
    // Baseline: each of V viewers takes its own snapshot every interval, for the same W.
    const b0 = process.cpuUsage();
    const tb = cpu(tmuxPid);
    const end = Date.now() + W;
    while (Date.now() < end) {
      const began = Date.now();
      await Promise.all(
        Array.from({ length: v }, async () => JSON.stringify(statusJson(name, await observeStatus(city)))),
      );
      await sleep(Math.max(0, INTERVAL - (Date.now() - began)));
    }
    const bu = process.cpuUsage(b0);
    const base = (bu.user + bu.system) / 1e6 + (cpu(tmuxPid) - tb);
    const shared = d + t;
    console.log(
      `${String(v).padStart(7)}  ${d.toFixed(2).padStart(12)}s  ${c.toFixed(2).padStart(13)}s  ${t.toFixed(2).padStart(7)}s  | ${base.toFixed(2).padStart(22)}s  ${(base / Math.max(shared, 0.01)).toFixed(1)}x`,
    );
  }
  await city.close();
  console.log(
    "ratio = (baseline process + tmux cpu) / (dashboard + tmux cpu): what sharing one snapshot saves",
  );

  const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (chromium) {
    const { chromium: pw } = await import("playwright-core");
    const browser = await pw.launch({ executablePath: chromium, args: ["--no-sandbox"] });
    const page = await browser.newPage();
    await page.goto(info.url);
    await page.waitForFunction((n) => document.querySelectorAll(".card").length === n, N);
    const t = await page.evaluate(() => ({ s: window.gcFirstStatusAt, g: window.gcGridRenderedAt }));
    console.log(
      `grid of ${N}: all cards in the DOM ${Math.round(t.g)}ms after navigation start ` +
        `(first status at ${Math.round(t.s)}ms, cards drawn ${Math.round(t.g - t.s)}ms later)`,
    );
    await browser.close();
  }
} finally {
  dash?.kill("SIGTERM");
  run("stop");
  rmSync(dir, { recursive: true, force: true });
}
