/* biome-ignore-all lint/suspicious/noTemplateCurlyInString: city files use ${VAR} interpolation */
/**
 * The parse cache (internal/config/parse-cache.ts): a hit gives exactly what parseCity gives,
 * only applying callers write it, and anything the parse depends on (build, text, provider,
 * city) keys it. Real files in a temp dir; the real parser.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { deserialize, serialize } from "node:v8";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../internal/base/errors.js";
import { loadCity } from "../../internal/config/load.js";
import { type ParseCityInput, parseCity } from "../../internal/config/parse.js";
import {
  cachedParse,
  PARSE_CACHE_FILE,
  type ParseCacheOptions,
  parseCacheKey,
} from "../../internal/config/parse-cache.js";

const EXAMPLE = readFileSync(fileURLToPath(new URL("../../config.example.yaml", import.meta.url)), "utf8");

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "gc-parse-cache-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const input = (text: string, over: Partial<ParseCityInput> = {}): ParseCityInput => ({
  text,
  file: join(dir, "city.yaml"),
  cityDir: dir,
  cityId: "0123456789ab",
  env: {},
  defaultProvider: "tmux",
  ...over,
});
const cacheOf = (write: boolean, build = "build-a"): ParseCacheOptions => ({
  dir: join(dir, ".gc"),
  build,
  write,
});
const cacheFile = () => join(dir, ".gc", PARSE_CACHE_FILE);

/** Rewrites the cached entry's workspace name: a later hit shows it was read from the cache. */
function tamperName(name: string): void {
  const entry = deserialize(readFileSync(cacheFile())) as {
    value: { parsed: { config: { workspace: { name: string } } } };
  };
  entry.value.parsed.config.workspace.name = name;
  writeFileSync(cacheFile(), serialize(entry));
}

const SMALL = "workspace:\n  name: small\nagents:\n  - name: a\n    start_command: sleep 1\n";

describe("parse cache", () => {
  it("a hit is exactly the parse (the example city: maps, defaults, positions)", () => {
    const fresh = parseCity(input(EXAMPLE));
    expect(cachedParse(input(EXAMPLE), cacheOf(true))).toStrictEqual(fresh);
    expect(statSync(cacheFile()).mode & 0o777).toBe(0o600);
    tamperName("from-cache");
    const hit = cachedParse(input(EXAMPLE), cacheOf(false));
    expect(hit.config.workspace.name).toBe("from-cache");
    expect({ ...hit, config: { ...hit.config, workspace: fresh.config.workspace } }).toStrictEqual(fresh);
  });

  it("readers never write it; only a writer's parse is stored", () => {
    cachedParse(input(SMALL), cacheOf(false));
    expect(existsSync(join(dir, ".gc"))).toBe(false);
    cachedParse(input(SMALL), cacheOf(true));
    const written = statSync(cacheFile(), { bigint: true });
    cachedParse(input(`${SMALL}# edited\n`), cacheOf(false)); // a miss: parsed, not stored
    expect(statSync(cacheFile(), { bigint: true }).mtimeNs).toBe(written.mtimeNs);
  });

  it.each([
    ["the text", () => input(`${SMALL}\n`), "build-a"],
    ["the build", () => input(SMALL), "build-b"],
    ["the GC_SESSION override", () => input(SMALL, { providerOverride: "subprocess" }), "build-a"],
    ["the detected default provider", () => input(SMALL, { defaultProvider: "subprocess" }), "build-a"],
    ["the city id", () => input(SMALL, { cityId: "ba9876543210" }), "build-a"],
    ["the file", () => input(SMALL, { file: join(dir, "other.yaml") }), "build-a"],
  ])("a change of %s is a miss", (_what, change, build) => {
    const changed = change();
    cachedParse(input(SMALL), cacheOf(true));
    tamperName("from-cache");
    expect(parseCacheKey(changed, build)).not.toBe(parseCacheKey(input(SMALL), "build-a"));
    expect(cachedParse(changed, cacheOf(false, build)).config.workspace.name).toBe("small");
    expect(cachedParse(input(SMALL), cacheOf(false)).config.workspace.name).toBe("from-cache");
  });

  it("the variables a parse read key it too; a parse that read a secret-looking one is never stored", () => {
    const text = "workspace:\n  name: ${CITY:-interp}\nagents:\n  - name: a\n    start_command: sleep 1\n";
    expect(cachedParse(input(text), cacheOf(true)).config.workspace.name).toBe("interp");
    tamperName("from-cache");
    expect(cachedParse(input(text), cacheOf(false)).config.workspace.name).toBe("from-cache");
    expect(cachedParse(input(text, { env: { CITY: "other" } }), cacheOf(false)).config.workspace.name).toBe(
      "other",
    );
    expect(cachedParse(input(text, { env: { CITY: "" } }), cacheOf(false)).config.workspace.name).toBe(
      "interp",
    );
    const secret = text.replace("${CITY:-interp}", "${API_TOKEN:-none}");
    cachedParse(input(secret, { env: { API_TOKEN: "s3cr3t-value" } }), cacheOf(true));
    expect(readFileSync(cacheFile()).includes("s3cr3t")).toBe(false);
    expect(cachedParse(input(text), cacheOf(false)).config.workspace.name).toBe("from-cache");
  });

  it("an invalid file throws as the parser does and stores nothing; a corrupt entry is a miss", () => {
    expect(() => cachedParse(input("workspace: [\n"), cacheOf(true))).toThrow(ConfigError);
    expect(existsSync(cacheFile())).toBe(false);
    cachedParse(input(SMALL), cacheOf(true));
    writeFileSync(cacheFile(), "not an entry");
    expect(cachedParse(input(SMALL), cacheOf(false)).config.workspace.name).toBe("small");
  });

  it("loadCity reads the cache an applying load wrote, for the same build only", async () => {
    writeFileSync(join(dir, "city.yaml"), SMALL);
    const opts = { cityDir: dir, env: {}, lookup: async () => "/usr/bin/tmux" };
    await loadCity({ ...opts, parseCacheBuild: "b1" });
    expect(existsSync(cacheFile())).toBe(false);
    await loadCity({ ...opts, parseCacheBuild: "b1", writeParseCache: true });
    tamperName("from-cache");
    expect((await loadCity({ ...opts, parseCacheBuild: "b1" })).config.workspace.name).toBe("from-cache");
    expect((await loadCity({ ...opts, parseCacheBuild: "b2" })).config.workspace.name).toBe("small");
    expect((await loadCity(opts)).config.workspace.name).toBe("small");
  });
});
