import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { citySchemaJson } from "../../internal/config/schema.js";
import {
  conformanceProviders,
  listedProviders,
  PROVIDERS,
  specOf,
} from "../../internal/runtime/registry/index.js";

/** Rows of README's "## Providers" table: first column (spec) → second (backend). */
function readmeProviderRows(): Map<string, string> {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.split("\n## Providers\n")[1]?.split("\n## ")[0] ?? "";
  const rows = new Map<string, string>();
  for (const line of section.split("\n")) {
    const m = /^\| `([^`]+)` \| ([^|]+) \|/.exec(line);
    if (m?.[1] && m[2]) rows.set(m[1], m[2].trim());
  }
  return rows;
}

/** The .ts files under `roots` that import (statically or dynamically) from the top-level dir `dir`. */
function importers(roots: readonly string[], dir: string): string[] {
  const re = new RegExp(`from "(?:\\.\\.?/)*${dir}/|import\\("(?:\\.\\.?/)*${dir}/`);
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts") && re.test(readFileSync(p, "utf8"))) found.push(p);
    }
  };
  for (const r of roots) walk(r);
  return found.sort();
}

describe("provider registry", () => {
  it("the README provider table lists exactly the registry's testable providers, with their backends", () => {
    const rows = readmeProviderRows();
    expect([...rows.keys()].sort()).toEqual([...conformanceProviders()].sort());
    for (const e of PROVIDERS.filter((p) => p.conformance)) expect(rows.get(specOf(e))).toBe(e.backend);
  });

  it("the JSON Schema's provider enum is the listed providers plus the routers; test doubles stay hidden", () => {
    const schema = citySchemaJson() as unknown as {
      properties: {
        session: { properties: { provider: { anyOf: { enum?: string[]; pattern?: string }[] } } };
      };
    };
    const anyOf = schema.properties.session.properties.provider.anyOf;
    const plain = listedProviders().filter((p) => !p.includes(":"));
    expect(anyOf[0]?.enum).toEqual([...plain, "auto", "hybrid"]);
    expect(anyOf.slice(1).map((a) => a.pattern)).toEqual(["^exec:.+"]);
    expect(JSON.stringify(anyOf)).not.toContain("fail");
  });

  it("each provider's session.<name> section in the JSON Schema is the registry entry's own schema; no other provider sections", () => {
    const session = (
      citySchemaJson() as unknown as { properties: { session: { properties: Record<string, unknown> } } }
    ).properties.session.properties;
    const withSettings = PROVIDERS.filter((e) => e.settings);
    expect(withSettings.map((e) => e.name).sort()).toEqual([
      "acp",
      "auto",
      "docker",
      "exec",
      "hybrid",
      "k8s",
      "subprocess",
      "tmux",
    ]);
    for (const e of withSettings)
      expect(session[e.name]).toEqual({ default: {}, ...e.settings?.jsonSchema() });
    for (const e of PROVIDERS.filter((p) => !p.settings)) expect(session[e.name]).toBeUndefined();
  });

  it("conformance targets are found by name: conformance/targets/<name>.ts exists exactly for the entries marked conformance", () => {
    const files = readdirSync(new URL("../../conformance/targets", import.meta.url))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => f.replace(/\.ts$/, ""));
    expect(files.sort()).toEqual(
      PROVIDERS.filter((e) => e.conformance)
        .map((e) => e.name)
        .sort(),
    );
  });

  it("dependency direction: nothing under internal/ or cmd/ imports conformance/ except the `gc conformance` command", () => {
    expect([...importers(["internal", "cmd"], "conformance")]).toEqual(["cmd/gc/commands/conformance.ts"]);
  });

  it("dependency direction: nothing under internal/ or conformance/ imports cmd/ (the controller embeds without the CLI)", () => {
    expect([...importers(["internal", "conformance"], "cmd")]).toEqual([]);
  });
});
