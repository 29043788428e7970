// After tsc: bundles the CLI (scripts/bundle-cli.mjs) and the subprocess holder
// (scripts/bundle-holder.mjs), marks the CLI's loader (the `bin`,
// dist/cmd/gc/main.cjs) and dist/cmd/gc/main.js executable so `npx gc` and both paths work,
// copies the dashboard's web app next to its server module, makes the bundles' V8 code
// caches by warm-up runs, and last writes dist/build-id: the
// content hash of everything built (internal/build/build-id.ts).
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
// First, when imported: the bundle and its loader.
import { CODE_CACHE, CODE_CACHE_ENV, LOADER, START_CODE_CACHE } from "./bundle-cli.mjs";
import { HOLDER_CODE_CACHE, HOLDER_CODE_CACHE_ENV, HOLDER_DIR, HOLDER_LOADER } from "./bundle-holder.mjs";

const dist = fileURLToPath(new URL("../dist/", import.meta.url));
const main = join(dist, "cmd", "gc", LOADER);

for (const entry of [main, join(dist, "cmd", "gc", "main.js")]) chmodSync(entry, 0o755);

// The dashboard's web app (HTML, JS, CSS) is served from next to its server module.
cpSync(
  new URL("../cmd/gc/dashboard/assets", import.meta.url),
  new URL("../dist/cmd/gc/dashboard/assets", import.meta.url),
  {
    recursive: true,
  },
);

await writeCodeCache();
await writeHolderCodeCache();

// Last, once every file of the build is in place: its content hash is the build's identity.
const { writeBuildId } = await import("../dist/internal/build/build-id.js");
console.log(`build ${writeBuildId(dist)}`);

/**
 * Writes the bundle's V8 code caches: dist/cmd/gc/gc.cjs.cache after `gc status` ran on a
 * throwaway one-agent tmux city with nothing running, then gc.cjs.start.cache after `gc start
 * --once` started its agent (so each holds the functions its commands run, not only those
 * compiled at load). The city lies in a temporary directory, removed with its tmux server and
 * socket; no real city is touched. Without tmux, or if a run fails, that cache is missing (gc
 * then compiles the bundle from source, or uses the other cache) and the build goes on.
 */
async function writeCodeCache() {
  if (spawnSync("tmux", ["-V"], { stdio: "ignore" }).status !== 0) {
    console.log("code cache: skipped (no tmux for the warm-up run); gc works without it, slower");
    return;
  }
  const { defaultSocketName, storedIdentity } = await import("../dist/internal/runtime/identity.js");
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-build-warmup-")));
  const name = `gcwarm${process.pid}`;
  // Only the city given here: no GC_CITY (or other GC_*) from the builder's shell.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GC_")));
  const warm = (args, cacheFile) => {
    const cache = join(dist, "cmd", "gc", cacheFile);
    const written = `${cache}.tmp`;
    try {
      const r = spawnSync(process.execPath, [main, "--city", dir, ...args], {
        env: { ...env, [CODE_CACHE_ENV]: written },
        encoding: "utf8",
        timeout: 30_000,
      });
      if (r.status !== 0) {
        console.log(
          `code cache ${cacheFile}: skipped (the warm-up \`gc ${args.join(" ")}\` exited ${r.status ?? r.signal}: ${r.stderr.trim()})`,
        );
        return;
      }
      renameSync(written, cache);
    } finally {
      rmSync(written, { force: true });
    }
  };
  try {
    writeFileSync(
      join(dir, "city.yaml"),
      `workspace:\n  name: ${name}\nsession:\n  provider: tmux\nagents:\n  - name: a\n    start_command: "exec sleep 100000"\n`,
    );
    warm(["status"], CODE_CACHE);
    warm(["start", "--once"], START_CODE_CACHE);
  } finally {
    // The socket is named after the identity gc stored with the city on its first load.
    const id = storedIdentity(dir);
    const socket = defaultSocketName(id?.name ?? name, id?.id);
    spawnSync("tmux", ["-L", socket, "kill-server"], { stdio: "ignore" });
    rmSync(join(`/tmp/tmux-${process.getuid?.() ?? 0}`, socket), { force: true });
    rmSync(`${join(`/tmp/tmux-${process.getuid?.() ?? 0}`, socket)}.gc-gate`, { force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Writes the holder bundle's V8 code cache, dist/internal/runtime/subprocess/bundle/
 * holder.cjs.cache, when a holder exits after one session ran in it (started and waited for
 * its prompt, looked at, typed into, stopped: so it holds the functions a session runs, not
 * only those compiled at load). The provider root lies in a temporary directory, removed
 * after. If the run fails, the cache is missing (holders then compile the bundle from source)
 * and the build goes on.
 */
async function writeHolderCodeCache() {
  const { SubprocessProvider } = await import("../dist/internal/runtime/subprocess/index.js");
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "gc-build-holder-warmup-")));
  const cache = join(HOLDER_DIR, HOLDER_CODE_CACHE);
  const written = join(dir, "holder.cache");
  const had = process.env[HOLDER_CODE_CACHE_ENV];
  // Passed down to the holder the provider spawns (its loader deletes it from its environment).
  process.env[HOLDER_CODE_CACHE_ENV] = written;
  const p = new SubprocessProvider({
    city: "gc-build-warmup",
    stateDir: dir,
    holders: 1,
    holderPath: join(HOLDER_DIR, HOLDER_LOADER),
  });
  try {
    await p.start("warm", {
      command: "printf 'ready> '; exec cat",
      workDir: dir,
      env: {},
      readyPromptPrefix: "ready> ",
    });
    await p.peek("warm", 10);
    await p.sendKeys("warm", ["Enter"]);
    await p.isRunning("warm");
    await p.stop("warm"); // the holder's last session: it exits, and writes the cache
    renameSync(written, cache);
  } catch (e) {
    console.log(
      `code cache ${HOLDER_CODE_CACHE}: skipped (the warm-up holder run failed: ${e?.message ?? e})`,
    );
  } finally {
    await p.stop("warm").catch(() => undefined); // after a failure: nothing left running
    if (had === undefined) delete process.env[HOLDER_CODE_CACHE_ENV];
    else process.env[HOLDER_CODE_CACHE_ENV] = had;
    await p.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
