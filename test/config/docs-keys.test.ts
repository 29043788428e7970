/**
 * Every key the docs' key tables name exists in the city file's schema, and every key of the
 * schema under a documented section is documented (itself or an enclosing key). A key table
 * is a markdown table whose header's first cell is `key`; its section is the backticked key
 * path in the nearest heading above it (`### \`daemon\``, `## Settings (\`session.tmux\`)`),
 * or, for a page whose heading names none, {@link PAGE_SECTION}. In the first cell
 * `` `k8s.namespace`, `image` `` is `k8s.namespace` and `k8s.image`, and
 * `` `quarantine.threshold` / `.window` `` is `quarantine.threshold` and `quarantine.window`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { citySchemaJson } from "../../internal/config/schema.js";

const DOCS = join(import.meta.dirname, "..", "..", "docs");

/** Pages whose key table sits under a heading that names no section. */
const PAGE_SECTION: Readonly<Record<string, string>> = { "k8s.md": "session.k8s" };

type Node = {
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
  anyOf?: Node[];
  oneOf?: Node[];
};

/** Every key path of the schema (`agents[].name`, `providers.*.args`). */
function schemaKeys(node: Node, prefix = "", out = new Set<string>()): Set<string> {
  for (const [k, v] of Object.entries(node.properties ?? {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    out.add(path);
    schemaKeys(v, path, out);
  }
  if (node.items) schemaKeys(node.items, `${prefix}[]`, out);
  if (node.additionalProperties && typeof node.additionalProperties === "object") {
    schemaKeys(node.additionalProperties, `${prefix}.*`, out);
  }
  for (const alt of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) schemaKeys(alt, prefix, out);
  return out;
}

/** The keys one first cell names, expanded as the file header says. Pure. */
function cellKeys(cell: string): string[] {
  const tokens = [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
  const out: string[] = [];
  const parent = (k: string) => k.slice(0, k.lastIndexOf("."));
  for (const t of tokens) {
    const first = out[0];
    if (t.startsWith(".")) out.push(parent(out.at(-1) ?? "") + t);
    else if (first?.includes(".") && !t.includes(".")) out.push(`${parent(first)}.${t}`);
    else out.push(t);
  }
  return out;
}

interface KeyTable {
  readonly page: string;
  readonly section: string;
  readonly keys: readonly string[];
}

/** The key tables of the docs whose section is a key of the schema. */
function keyTables(schema: ReadonlySet<string>): KeyTable[] {
  const tables: KeyTable[] = [];
  for (const page of readdirSync(DOCS).filter((f) => f.endsWith(".md"))) {
    let section: string | undefined = PAGE_SECTION[page];
    let current: { section: string; keys: string[] } | undefined;
    for (const line of readFileSync(join(DOCS, page), "utf8").split("\n")) {
      if (/^#+ /.test(line)) {
        const named = [...line.matchAll(/`([a-z_.]+)`/g)]
          .map((m) => m[1] as string)
          .find((k) => schema.has(k));
        section = named ?? PAGE_SECTION[page];
      }
      if (current && !line.startsWith("|")) {
        tables.push({ page, ...current });
        current = undefined;
      }
      if (/^\| *key *\|/.test(line) && section !== undefined) current = { section, keys: [] };
      else if (current && !/^\|[-| ]+\|$/.test(line)) {
        const cell = line.split("|")[1] ?? "";
        current.keys.push(...cellKeys(cell).map((k) => `${current!.section}.${k}`));
      }
    }
    if (current) tables.push({ page, ...current });
  }
  return tables;
}

describe("the docs' key tables and the city file's schema", () => {
  const schema = schemaKeys(citySchemaJson() as unknown as Node);
  const tables = keyTables(schema);
  const documented = new Set(tables.flatMap((t) => t.keys));

  it("reads the key tables it is meant to", () => {
    expect(tables.map((t) => `${t.page} ${t.section}`).sort()).toEqual([
      "config.md daemon",
      "config.md session",
      "config.md workspace",
      "k8s.md session.k8s",
      "subprocess.md session.subprocess",
      "tmux.md session.tmux",
    ]);
  });

  it("every documented key exists", () => {
    expect([...documented].filter((k) => !schema.has(k)).sort()).toEqual([]);
  });

  it("every key of a documented section is documented (itself or an enclosing key)", () => {
    const sections = new Set(tables.map((t) => t.section));
    const covered = (k: string): boolean =>
      documented.has(k) || (k.includes(".") && covered(k.slice(0, k.lastIndexOf("."))));
    const undocumented = [...schema].filter(
      (k) =>
        [...sections].some((s) => k.startsWith(`${s}.`)) &&
        !/\[\]|\.\*/.test(k) &&
        ![...schema].some((c) => c.startsWith(`${k}.`)) &&
        !covered(k.replace(/\[\].*$/, "")),
    );
    expect(undocumented.sort()).toEqual([]);
  });

  it("expands a cell the way the docs write it", () => {
    expect(cellKeys("`k8s.namespace`, `image`")).toEqual(["k8s.namespace", "k8s.image"]);
    expect(cellKeys("`quarantine.threshold` / `.window`")).toEqual([
      "quarantine.threshold",
      "quarantine.window",
    ]);
    expect(cellKeys("`cols`, `rows`")).toEqual(["cols", "rows"]);
  });
});
