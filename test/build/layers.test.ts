/**
 * The import graph of the shipped code (cmd/, internal/, conformance/), read with the
 * TypeScript compiler's own import scanner (static, type-only, re-exports and dynamic
 * `import()` alike): no file takes part in a cycle, and every import between packages goes
 * down the layer order
 *
 *   cmd → operate → conformance → controller → reconcile → session | config → runtime → proc → base | build
 *
 * A package may import any lower layer, never a higher one nor a sibling of its own layer.
 * Inside a layer, folders import each other without a cycle either (a folder's own files are
 * one package: `internal/runtime/` itself holds the contract and leaf helpers, below every
 * provider folder; the registry above them is `internal/runtime/registry/`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

/** Highest first; the packages of one row are siblings. */
const LAYERS: readonly (readonly string[])[] = [
  ["cmd"],
  ["internal/operate"],
  ["conformance"],
  ["internal/controller"],
  ["internal/reconcile"],
  ["internal/session", "internal/config"],
  ["internal/runtime"],
  ["internal/proc"],
  ["internal/base", "internal/build"],
];

type Edge = readonly [from: string, to: string];

/** Every `.ts` file under `dir` (relative to the repository root). */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** The relative imports of the shipped code, resolved to files. */
function importGraph(): Edge[] {
  const files = ["cmd", "internal", "conformance"].flatMap(sources);
  const known = new Set(files);
  const edges: Edge[] = [];
  for (const f of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, f), "utf8"), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const base = normalize(join(dirname(f), fileName)).replace(/\.js$/, "");
      const to = [`${base}.ts`, join(base, "index.ts")].find((c) => known.has(c));
      if (to === undefined) throw new Error(`${f}: cannot resolve ${fileName}`);
      edges.push([f, to]);
    }
  }
  return edges;
}

/** The layer row of `file`, and its package (the LAYERS entry it falls under). */
function placeOf(file: string): { row: number; pkg: string } {
  for (const [row, pkgs] of LAYERS.entries()) {
    const pkg = pkgs.find((p) => file === p || file.startsWith(`${p}/`));
    if (pkg !== undefined) return { row, pkg };
  }
  throw new Error(`${file} is in no layer: add its package to LAYERS`);
}

/** Imports that go up the layer order or sideways to a sibling package. Pure. */
function layerViolations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const [from, to] of edges) {
    const a = placeOf(from);
    const b = placeOf(to);
    if (a.pkg === b.pkg || a.row < b.row) continue;
    out.push(`${from} → ${to} (${a.pkg} may not import ${b.pkg})`);
  }
  return out;
}

/** The strongly connected components of more than one file (or a file importing itself). Pure. */
function fileCycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) next.set(a, [...(next.get(a) ?? []), b]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      scc.push(w);
      if (w === v) break;
    }
    if (scc.length > 1 || next.get(v)?.includes(v)) out.push(scc.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The imports between folders (each folder's own files are one package), one edge per pair. Pure. */
function folderEdges(edges: readonly Edge[]): Edge[] {
  const seen = new Map<string, Edge>();
  for (const [from, to] of edges) {
    const a = dirname(from);
    const b = dirname(to);
    if (a !== b) seen.set(`${a} ${b}`, [a, b]);
  }
  return [...seen.values()];
}

describe("the import graph of cmd/, internal/ and conformance/", () => {
  const edges = importGraph();

  it("is read whole: every file resolves and the graph is not empty", () => {
    expect(edges.length).toBeGreaterThan(500);
    expect(edges).toContainEqual(["internal/proc/run.ts", "internal/base/errors.ts"]);
  });

  it("has no import cycle, type-only imports included", () => {
    expect(fileCycles(edges)).toEqual([]);
  });

  it("has no cycle between folders: a folder's files import no folder that imports them back", () => {
    expect(fileCycles(folderEdges(edges))).toEqual([]);
  });

  it("imports only down the layer order", () => {
    expect(layerViolations(edges)).toEqual([]);
  });

  it("the session holder (runtime/subprocess) imports nothing of runtime/acp: ACP plugs into it", () => {
    const up = edges.filter(
      ([from, to]) =>
        from.startsWith("internal/runtime/subprocess/") && to.startsWith("internal/runtime/acp/"),
    );
    expect(up).toEqual([]);
    expect(edges).toContainEqual([
      "internal/runtime/acp/holder.ts",
      "internal/runtime/subprocess/holder-process.ts",
    ]);
  });

  it("the checks see what they are for: an upward import, a sibling import, a cycle", () => {
    const planted: Edge[] = [
      ["internal/proc/run.ts", "internal/runtime/provider.ts"],
      ["internal/config/load.ts", "internal/session/store.ts"],
      ["internal/runtime/provider.ts", "internal/proc/run.ts"],
    ];
    expect(layerViolations(planted)).toEqual([
      "internal/proc/run.ts → internal/runtime/provider.ts (internal/proc may not import internal/runtime)",
      "internal/config/load.ts → internal/session/store.ts (internal/config may not import internal/session)",
    ]);
    expect(fileCycles(planted)).toEqual([["internal/proc/run.ts", "internal/runtime/provider.ts"]]);
    const acrossFolders: Edge[] = [
      ["internal/runtime/registry/index.ts", "internal/runtime/tmux/index.ts"],
      ["internal/runtime/tmux/provider.ts", "internal/runtime/provider.ts"],
      ["internal/runtime/provider.ts", "internal/runtime/registry/index.ts"],
    ];
    expect(fileCycles(acrossFolders)).toEqual([]);
    expect(fileCycles(folderEdges(acrossFolders))).toEqual([
      ["internal/runtime", "internal/runtime/registry", "internal/runtime/tmux"],
    ]);
  });
});
