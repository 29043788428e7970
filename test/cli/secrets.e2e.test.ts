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
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import xxhash from "xxhash-wasm";
import { newReconciler, openCity } from "../../internal/controller/city.js";
import { createProviderFromSpec } from "../../internal/runtime/registry/index.js";
import { openSqliteStore } from "../../internal/session/sqlite-store.js";
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

/**
 * Where `secret` shows up: files under .gc/, ps, tmux options (gc's session metadata is kept
 * there hex-encoded, so the hex form is looked for too).
 */
function leaks(city: TestCity, secret: string): string[] {
  const found: string[] = [];
  const hex = Buffer.from(secret).toString("hex");
  for (const f of files(join(city.dir, ".gc"))) {
    if (readFileSync(f).includes(secret)) found.push(f);
  }
  const ps = spawnSync("ps", ["-eo", "pid,args", "ww"], { encoding: "utf8" }).stdout;
  for (const line of ps.split("\n")) if (line.includes(secret)) found.push(`ps: ${line}`);
  // The session's options only while it lives (after `gc stop` there is no server to ask).
  const live = city.tmux("has-session", "-t", "=a").code === 0;
  for (const args of [
    ["show-options", "-g"],
    ["show-options", "-s"],
    // `=a:` names the session (a bare `=a` is not found, which made these checks empty).
    ["show-options", "-t", "=a:"],
    ["show-options", "-w", "-t", "=a:"],
  ].slice(0, live ? 4 : 0)) {
    const r = city.tmux(...args);
    if (r.code !== 0) found.push(`tmux ${args.join(" ")} failed`);
    if (r.stdout.includes(secret) || r.stdout.includes(hex)) found.push(`tmux ${args.join(" ")}`);
  }
  return found;
}

/**
 * The hash an unkeyed fingerprint stores for a secret-named env value: the check value a
 * guess of the secret could be tested against (`v1:` and xxh64 of its JSON text).
 */
async function unkeyedValueHash(secret: string): Promise<string> {
  return (await xxhash()).h64ToString(JSON.stringify(secret));
}

/**
 * One reconcile pass as every build before the fingerprint key made it: the city opened
 * (here, in-process, with gc's real providers and store) by something that never makes the
 * key, so its sessions are started with unkeyed fingerprints — the records an upgrade finds.
 */
async function unkeyedPass(city: TestCity, secret: string): Promise<void> {
  const c = await openCity(
    { cwd: city.dir, env: { ...process.env, GC_TEST_PASSWORD: secret }, cityDir: city.dir },
    {
      createProvider: createProviderFromSpec,
      openStore: (cityDir) => openSqliteStore({ cityDir, singleTenant: true }),
    },
  );
  try {
    const report = await newReconciler(c, await c.store()).tick();
    expect(report.outcomes.map((o) => [o.action.kind, o.ok])).toEqual([
      ["start", true],
      ["start", true],
    ]);
  } finally {
    await c.close();
  }
}

/** The core fingerprint recorded in session `a`'s tmux metadata (gc.core, hex-encoded). */
function metaCore(city: TestCity): string {
  const opt = `@gc_m_${Buffer.from("gc.core").toString("hex")}`;
  const stored = city.tmux("display-message", "-p", "-t", "=a:", `#{${opt}}`).stdout.trim();
  return Buffer.from(stored.slice(1), "hex").toString("utf8");
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
    // Nor is any stored or printed hash a check value for them: the fingerprints are keyed
    // by the city's key (made 0600 by the first applying command).
    expect(statSync(join(city.dir, ".gc", "fingerprint.key")).mode & 0o777).toBe(0o600);
    for (const s of [s1, s2]) {
      const h = await unkeyedValueHash(s);
      expect(leaks(city, h), h).toEqual([]);
      expect(text.includes(h)).toBe(false);
    }
    await gc(["stop"], s2);
    expect(leaks(city, s2)).toEqual([]);
  });

  it("a city recorded before it had a fingerprint key: the next applying pass re-records it keyed — nothing restarts, no unkeyed hash is left — and a secret's change still restarts", async () => {
    // `h` is held down by the operator before the upgrade: a record that is not running holds
    // the same check value and is re-recorded too.
    const city = makeCity(`${FILE}  - name: h
    start_command: "sleep 100000"
    env:
      API_TOKEN: "\${GC_TEST_PASSWORD}"
`);
    const s1 = `s3cr3t-${randomBytes(8).toString("hex")}`;
    const gc = (args: string[], secret = s1) => city.gc(args, { env: { GC_TEST_PASSWORD: secret } });
    const keyFile = join(city.dir, ".gc", "fingerprint.key");
    const panePid = () => city.tmux("display-message", "-p", "-t", "=a:", "#{pane_pid}").stdout.trim();
    // What every build before the key did: a pass recording fingerprints over the raw secret.
    await unkeyedPass(city, s1);
    await until("a running", () => city.tmux("has-session", "-t", "=a").code === 0);
    expect(existsSync(keyFile)).toBe(false);
    const unkeyed = metaCore(city);
    expect(unkeyed).toMatch(/^v1:[0-9a-f]{16}$/);
    const valueHash = await unkeyedValueHash(s1);
    expect(leaks(city, valueHash).length).toBeGreaterThan(0); // the old scheme's check value
    expect((await gc(["stop", "h"])).code).toBe(0);
    const pid = panePid();
    // Read commands make no key and find the city in sync.
    expect((await gc(["drift"])).stdout).toContain("a: in sync");
    expect(existsSync(keyFile)).toBe(false);
    // The first applying pass makes the key and re-records the session; it keeps running.
    const once = await gc(["start", "--once"]);
    expect(once.code, once.stderr).toBe(0);
    expect(once.stdout).toMatch(/rekey +a ok/);
    expect(once.stdout).toMatch(/rekey +h ok/);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(panePid()).toBe(pid);
    expect(metaCore(city)).toMatch(/^v1:[0-9a-f]{16}$/);
    expect(metaCore(city)).not.toBe(unkeyed);
    expect(leaks(city, unkeyed.slice(3))).toEqual([]);
    expect(leaks(city, valueHash)).toEqual([]);
    const status = JSON.parse((await gc(["status", "--json"])).stdout);
    expect(status.sessions.find((x: { name: string }) => x.name === "a")).toMatchObject({
      drift: "none",
      restarts: 0,
    });
    expect((await gc(["start", "--once"])).stdout).toContain("in sync");
    // The secret changes: still drift (masked), and the restart applies it.
    const s2 = `s3cr3t-${randomBytes(8).toString("hex")}`;
    expect((await gc(["drift"], s2)).stdout).toContain(
      "env.API_TOKEN: changed (derived from a secret; values not shown)",
    );
    expect((await gc(["reconcile"], s2)).code).toBe(0);
    await until(
      "a restarted with the new secret",
      () => city.tmux("show-environment", "-t", "=a", "API_TOKEN").stdout.trim() === `API_TOKEN=${s2}`,
    );
    expect(leaks(city, await unkeyedValueHash(s2))).toEqual([]);
    await gc(["stop"], s2);
  });

  it("the fingerprint key: a dry run makes none; a malformed one stops applying commands with its name, never reading or stopping the city", async () => {
    const city = makeCity(FILE);
    const env = { GC_TEST_PASSWORD: `s3cr3t-${randomBytes(8).toString("hex")}` };
    const keyFile = join(city.dir, ".gc", "fingerprint.key");
    for (const args of [
      ["start", "--dry-run"],
      ["reconcile", "--dry-run"],
    ]) {
      expect((await city.gc(args, { env })).code, args.join(" ")).toBe(0);
      expect(existsSync(keyFile), args.join(" ")).toBe(false);
    }
    expect((await city.gc(["start", "--once"], { env })).code).toBe(0);
    expect(existsSync(keyFile)).toBe(true);
    writeFileSync(keyFile, "not a key\n");
    const refused = await city.gc(["start", "--once"], { env });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`${keyFile} is not a fingerprint key`);
    expect(readFileSync(keyFile, "utf8")).toBe("not a key\n"); // never replaced silently
    expect((await city.gc(["status"], { env })).code).toBe(0);
    const stop = await city.gc(["stop"], { env });
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toContain("nothing of city");
  });
});
