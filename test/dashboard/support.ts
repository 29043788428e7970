/**
 * Shared by the dashboard tests: `gc dashboard --json` for a test city (killed after the
 * test), raw HTTP requests and a server-sent event reader.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { request } from "node:http";
import { onTestFinished } from "vitest";
import { GC_BIN, type TestCity } from "../support/city.js";

/** What `gc dashboard --json` prints. */
export interface StartedDashboard {
  readonly url: string;
  readonly token: string;
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly origin: string;
}

/** Starts `gc dashboard --json ...args` for the city; resolves once its URL is out. Stopped after the test. */
export function startDashboard(
  city: TestCity,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<StartedDashboard> {
  const child: ChildProcess = spawn(
    process.execPath,
    [GC_BIN, "--city", city.dir, "dashboard", "--json", ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } },
  );
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      // A loaded machine can keep it busy past the hook's bound: then it is killed outright.
      const slow = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(slow);
    }
  });
  let err = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (err += d));
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        const s = JSON.parse(line) as Omit<StartedDashboard, "origin">;
        resolve({ ...s, origin: new URL(s.url).origin });
      }
    });
    child.once("exit", (code) => reject(new Error(`gc dashboard exited ${code}: ${err}`)));
  });
}

/** A raw HTTP request to 127.0.0.1 (headers exactly as given, Host included). */
export function http(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let b = "";
      res.setEncoding("utf8").on("data", (d: string) => (b += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: b }));
    });
    r.on("error", reject);
    r.end(body);
  });
}

/** A POST of a JSON body with the dashboard's token (what the page sends). */
export function post(
  d: StartedDashboard,
  path: string,
  body: unknown = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  return http(
    d.port,
    "POST",
    path,
    { "Content-Type": "application/json", "X-GC-Token": d.token, Origin: d.origin },
    JSON.stringify(body),
  ).then((r) => ({ status: r.status, json: JSON.parse(r.body) as Record<string, unknown> }));
}

/** A GET of a JSON API path with the dashboard's token. */
export async function getJson<T>(d: StartedDashboard, path: string): Promise<T> {
  const r = await http(d.port, "GET", path, { "X-GC-Token": d.token });
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as T;
}

/** One server-sent event. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

/** Reads server-sent events from `path` until `done` says stop. */
export function sse(port: number, path: string, done: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    const r = request({ host: "127.0.0.1", port, path }, (res) => {
      let buf = "";
      res.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        let i = buf.indexOf("\n\n");
        while (i >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (ev && data !== undefined) events.push({ event: ev, data });
          i = buf.indexOf("\n\n");
        }
        if (done(events)) {
          r.destroy();
          resolve(events);
        }
      });
    });
    r.on("error", reject);
    r.end();
  });
}
