/**
 * package.json is honest: the runtime `dependencies` are exactly the packages the shipped
 * code (cmd/, internal/, conformance/) imports, plus the required peers those packages
 * declare (zod for @agentclientprotocol/sdk); everything else is a devDependency. Packages
 * loaded by name at run time (`createRequire(…)("string-width")`, `.resolve("@xterm/xterm")`)
 * count as imports.
 */
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
const packageOf = (spec: string) =>
  spec
    .split("/")
    .slice(0, spec.startsWith("@") ? 2 : 1)
    .join("/");

/** Test-suite code beside the shipped code: the vitest adapter of the conformance cases. */
const TEST_ONLY = new Set(["conformance/vitest.ts"]);

/** Packages loaded by name at run time: `createRequire(…)("x")`, `require.resolve("x")`. */
const RUNTIME_LOAD = /(?:\)\(|\.resolve\()"([^".][^"]*)"\)/g;

/** The npm packages the shipped code imports. */
function shippedImports(): Set<string> {
  const out = new Set<string>();
  for (const f of ["cmd", "internal", "conformance"].flatMap(sources)) {
    if (TEST_ONLY.has(f)) continue;
    const text = readFileSync(join(ROOT, f), "utf8");
    const specs = [
      ...ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName),
      ...[...text.matchAll(RUNTIME_LOAD)].map((m) => m[1] as string),
    ];
    for (const spec of specs) {
      if (spec.startsWith(".") || spec.startsWith("node:") || builtinModules.includes(spec)) continue;
      out.add(packageOf(spec));
    }
  }
  return out;
}

/** The non-optional peer dependencies of `name`. */
function requiredPeers(name: string): string[] {
  const p = JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as {
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  return Object.keys(p.peerDependencies ?? {}).filter((d) => p.peerDependenciesMeta?.[d]?.optional !== true);
}

describe("package.json dependencies", () => {
  const imported = shippedImports();
  const needed = new Set([...imported, ...[...imported].flatMap(requiredPeers)]);

  it("every package the shipped code imports is a runtime dependency", () => {
    expect([...imported].filter((d) => pkg.dependencies[d] === undefined).sort()).toEqual([]);
  });

  it("every runtime dependency is imported by the shipped code, or required by one that is", () => {
    expect(Object.keys(pkg.dependencies).filter((d) => !needed.has(d))).toEqual([]);
  });

  it("sees the imports it is for", () => {
    expect(imported).toContain("better-sqlite3");
    expect(imported).toContain("string-width");
    expect(needed).toContain("zod");
  });
});
