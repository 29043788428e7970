/**
 * The hidden-value grep (issue 13): a secret given to a city — a secret-named env value and
 * the same secret interpolated into a non-secret key and into start_command — appears nowhere
 * gc keeps or prints:
 * not in any file under .gc/ (state.db and its WAL included), not in any process's argv
 * (`ps`), not in tmux options, not in the output of any command — before and after the
 * secret changes (drift).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeCity, type TestCity, until } from "../support/city.js";

const hasTmux = spawnSync("tmux", ["-V"]).status === 0;

const FILE = `workspace:
  name: @NAME@
session:
  provider: tmux
daemon:
  interval: 1h
agents:
  - name: a
    # The shell stays alive (no exec), so its argv would show the command text in ps.
    start_command: "TOKEN_COPY=\${GC_TEST_PASSWORD}; sleep 100000"
    env:
      API_TOKEN: "\${GC_TEST_PASSWORD}"
      DB_URL: "postgres://u:\${GC_TEST_PASSWORD}@h/db"
`;

/** Every file under `dir`, recursively (sockets and the like skipped). */
function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (e.isFile() && statSync(p).size > 0) out.push(p);
  }
  return out;
}

/** Where `secret` shows up: files under .gc/, ps, tmux options. */
function leaks(city: TestCity, secret: string): string[] {
  const found: string[] = [];
  for (const f of files(join(city.dir, ".gc"))) {
    if (readFileSync(f).includes(secret)) found.push(f);
  }
  const ps = spawnSync("ps", ["-eo", "pid,args", "ww"], { encoding: "utf8" }).stdout;
  for (const line of ps.split("\n")) if (line.includes(secret)) found.push(`ps: ${line}`);
  for (const args of [
    ["show-options", "-g"],
    ["show-options", "-s"],
    ["show-options", "-t", "=a"],
    ["show-options", "-w", "-t", "=a"],
  ]) {
    if (city.tmux(...args).stdout.includes(secret)) found.push(`tmux ${args.join(" ")}`);
  }
  return found;
}

describe.skipIf(!hasTmux)("secrets", { timeout: 180_000 }, () => {
  it("the hidden-value grep over .gc/, ps, tmux options and every command's output finds nothing", async () => {
    const city = makeCity(FILE);
    const s1 = `s3cr3t-${randomBytes(8).toString("hex")}`;
    const s2 = `s3cr3t-${randomBytes(8).toString("hex")}`;
    const outputs: string[] = [];
    const gc = async (args: string[], secret: string) => {
      const r = await city.gc(args, { env: { GC_TEST_PASSWORD: secret } });
      outputs.push(`$ gc ${args.join(" ")}\n${r.stdout}${r.stderr}`);
      return r;
    };
    // No controller: each pass runs in the gc process, with that process's environment (a
    // controller keeps interpolating with the environment it was started with).
    expect((await gc(["start", "--once"], s1)).code).toBe(0);
    await until("a running", () => city.tmux("has-session", "-t", "=a").code === 0);
    // The session does get the secret (through its environment, not argv or options).
    const env = city.tmux("show-environment", "-t", "=a", "API_TOKEN").stdout;
    expect(env.trim()).toBe(`API_TOKEN=${s1}`);
    for (const args of [
      ["status"],
      ["status", "--json"],
      ["drift"],
      ["drift", "--json"],
      ["session", "list"],
      ["session", "list", "--json"],
      ["config", "show"],
      ["config", "show", "--json"],
      ["peek", "a"],
      ["exec", "a", "--", "true"],
      ["session", "logs", "a", "--events"],
    ])
      await gc(args, s1);
    // The secret changes: drift reports it without the values, the restart applies it.
    const drift = await gc(["drift"], s2);
    // Per changed key of the env map (both are derived from the secret).
    expect(drift.stdout).toContain("env.API_TOKEN: changed (derived from a secret; values not shown)");
    expect(drift.stdout).toContain("env.DB_URL: changed (derived from a secret; values not shown)");
    expect(drift.stdout).toContain("command: changed (derived from a secret; values not shown)");
    expect(drift.stdout).not.toContain("[REDACTED]"); // one marker, `[redacted]`
    expect((await gc(["reconcile"], s2)).code).toBe(0);
    await until(
      "a restarted with the new secret",
      () => city.tmux("show-environment", "-t", "=a", "API_TOKEN").stdout.trim() === `API_TOKEN=${s2}`,
    );
    for (const args of [["status", "--json"], ["drift"], ["session", "logs", "a", "--events", "--json"]])
      await gc(args, s2);
    const text = outputs.join("\n");
    expect(text.includes(s1), text).toBe(false);
    expect(text.includes(s2), text).toBe(false);
    expect(leaks(city, s1)).toEqual([]);
    expect(leaks(city, s2)).toEqual([]);
    await gc(["stop"], s2);
    expect(leaks(city, s2)).toEqual([]);
  });
});
