/** Pure parts of the loopback API server: patch flavours and selectors. */
import { describe, expect, it } from "vitest";
import { jsonPatch, mergePatch, strategicMerge } from "./apiserver/patch.js";
import { type FieldGetters, parseFieldSelector, parseLabelSelector } from "./apiserver/selectors.js";
import { ApiError } from "./apiserver/status.js";

const obj = (labels: Record<string, string>, name = "p") => ({ metadata: { name, labels } });

describe("selectors", () => {
  it("parses equality, set-based, existence and numeric label requirements", () => {
    const cases: [string, Record<string, string>, boolean][] = [
      ["a=1", { a: "1" }, true],
      ["a==1,b!=2", { a: "1", b: "3" }, true],
      ["a!=1", {}, true],
      ["a in (1, 2),c notin (x)", { a: "2" }, true],
      ["a in (1,2)", { a: "3" }, false],
      ["a,!b", { a: "" }, true],
      ["!a", { a: "x" }, false],
      ["n>3", { n: "4" }, true],
      ["n<3", { n: "4" }, false],
      ["", { any: "x" }, true],
    ];
    for (const [sel, labels, want] of cases)
      expect([sel, parseLabelSelector(sel)(obj(labels))]).toEqual([sel, want]);
    expect(() => parseLabelSelector("a in 1")).toThrow(ApiError);
  });

  it("supports only the fields it knows, with = and !=", () => {
    const fields: FieldGetters = { "metadata.name": (o) => o.metadata.name ?? "" };
    expect(parseFieldSelector("metadata.name=p", fields)(obj({}))).toBe(true);
    expect(parseFieldSelector("metadata.name!=p", fields)(obj({}))).toBe(false);
    let err: ApiError | undefined;
    try {
      parseFieldSelector("spec.image=x", fields);
    } catch (e) {
      err = e as ApiError;
    }
    expect(err?.status).toMatchObject({ code: 400, message: "field label not supported: spec.image" });
  });
});

describe("patches", () => {
  it("JSON Patch: add/remove/replace/move/copy/test with escaped pointers; non-arrays are 400", () => {
    const doc = { metadata: { annotations: { "a/b": "1" } }, list: [1, 2] };
    const out = jsonPatch(doc, [
      { op: "add", path: "/metadata/annotations/c~1d", value: "2" },
      { op: "remove", path: "/metadata/annotations/a~1b" },
      { op: "add", path: "/list/-", value: 3 },
      { op: "replace", path: "/list/0", value: 0 },
      { op: "copy", from: "/list/2", path: "/x" },
      { op: "move", from: "/x", path: "/y" },
      { op: "test", path: "/y", value: 3 },
    ]);
    expect(out).toEqual({ metadata: { annotations: { "c/d": "2" } }, list: [0, 2, 3], y: 3 });
    expect(doc.list).toEqual([1, 2]);
    expect(() => jsonPatch(doc, { op: "add" })).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => jsonPatch(doc, [{ op: "test", path: "/list/0", value: 9 }])).toThrow(
      expect.objectContaining({ code: 422 }),
    );
    expect(() => jsonPatch(doc, [{ op: "remove", path: "/nope" }])).toThrow(
      expect.objectContaining({ code: 422 }),
    );
  });

  it("merge patch: null deletes, maps merge, lists replace", () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null, d: 3 }, l: [3] })).toEqual({
      a: { c: 2, d: 3 },
      l: [3],
    });
  });

  it("strategic merge: lists merge by key, $patch delete/replace, $setElementOrder, $retainKeys, $deleteFromPrimitiveList", () => {
    const pod = {
      metadata: { finalizers: ["a"], labels: { x: "1" } },
      spec: {
        containers: [
          { name: "main", image: "i:1", env: [{ name: "A", value: "1" }] },
          { name: "side", image: "s:1" },
        ],
        tolerations: [{ key: "t1" }],
      },
    };
    const out = strategicMerge(pod, {
      metadata: { finalizers: ["b"], labels: { x: null, y: "2" } },
      spec: {
        $setElementOrder: undefined,
        "$setElementOrder/containers": [{ name: "side" }, { name: "main" }],
        containers: [
          { name: "main", image: "i:2", env: [{ name: "B", value: "2" }] },
          { name: "side", $patch: "delete" },
          { name: "new", image: "n:1" },
        ],
        tolerations: [{ key: "t2" }],
      },
    }) as { metadata: unknown; spec: { containers: { name: string }[]; tolerations: unknown } };
    expect(out.metadata).toEqual({ finalizers: ["a", "b"], labels: { y: "2" } });
    expect(out.spec.containers).toEqual([
      {
        name: "main",
        image: "i:2",
        env: [
          { name: "A", value: "1" },
          { name: "B", value: "2" },
        ],
      },
      { name: "new", image: "n:1" },
    ]);
    expect(out.spec.tolerations).toEqual([{ key: "t2" }]);
    expect(strategicMerge({ m: { a: 1, b: 2 } }, { m: { $patch: "replace", c: 3 } })).toEqual({
      m: { c: 3 },
    });
    expect(strategicMerge({ m: { a: 1, b: 2 } }, { m: { $retainKeys: ["b", "c"], c: 3 } })).toEqual({
      m: { b: 2, c: 3 },
    });
    expect(strategicMerge({ f: ["a", "b"] }, { "$deleteFromPrimitiveList/f": ["a"] })).toEqual({ f: ["b"] });
  });
});
