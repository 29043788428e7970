import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { citySchemaJson } from "../../internal/config/schema.js";
import { conformanceProviders, listedProviders, PROVIDERS, specOf } from "../../internal/runtime/registry.js";

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

describe("provider registry", () => {
  it("the README provider table lists exactly the registry's testable providers, with their backends", () => {
    const rows = readmeProviderRows();
    expect([...rows.keys()].sort()).toEqual([...conformanceProviders()].sort());
    for (const e of PROVIDERS.filter((p) => p.target)) expect(rows.get(specOf(e))).toBe(e.backend);
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
});
