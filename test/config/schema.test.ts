import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { citySchemaJson } from "../../internal/config/schema.js";
import { jsonSchemaErrors } from "./json-schema-check.js";

const root = new URL("../../", import.meta.url);
const read = (rel: string) => readFileSync(new URL(rel, root), "utf8");

describe("city.schema.json", () => {
  it("schema: committed city.schema.json matches the schema source (regenerate: gc config schema > city.schema.json)", () => {
    const committed = JSON.parse(read("city.schema.json")) as unknown;
    expect(committed).toEqual(citySchemaJson());
  });

  it("schema: config.example.yaml starts with the yaml-language-server comment", () => {
    expect(read("config.example.yaml").split("\n")[0]).toBe(
      "# yaml-language-server: $schema=./city.schema.json",
    );
  });

  it("schema: the JSON Schema accepts config.example.yaml", () => {
    const doc = parseYaml(read("config.example.yaml")) as unknown;
    expect(jsonSchemaErrors(citySchemaJson(), doc)).toEqual([]);
  });

  // The check must be real: the same schema rejects what the decoder rejects.
  it.each([
    ["an unknown top-level key", { agent: [] }, "$.agent: additional property not allowed"],
    [
      "an unknown agent key",
      { agents: [{ name: "a", comand: "x" }] },
      "$.agents[0].comand: additional property",
    ],
    ["a missing agent name", { agents: [{ provider: "sh" }] }, "$.agents[0]: missing required name"],
    ["a bad agent name", { agents: [{ name: "bad name" }] }, "does not match"],
    [
      "a duration without unit",
      { daemon: { interval: 30 } },
      "$.daemon.interval: expected string, got integer",
    ],
    ["a malformed duration", { daemon: { interval: "5 minutes" } }, "$.daemon.interval"],
    [
      "an unknown session provider",
      { session: { provider: "tmu" } },
      "$.session.provider: matches none of anyOf",
    ],
    [
      "an exec provider with no script",
      { session: { provider: "exec:" } },
      "$.session.provider: matches none",
    ],
    ["a negative pool size", { agents: [{ name: "a", min_active_sessions: -1 }] }, "below minimum"],
    ["a bad prompt mode", { providers: { p: { command: "x", prompt_mode: "arg" } } }, "not in enum"],
    ["a bad env key", { agents: [{ name: "a", env: { "MY-VAR": "x" } }] }, "$.agents[0].env.MY-VAR"],
    ["a list as env value", { agents: [{ name: "a", env: { A: [1] } }] }, "expected string|number|boolean"],
    [
      "an x- key below the top level",
      { agents: [{ name: "a", "x-note": 1 }] },
      "$.agents[0].x-note: additional",
    ],
  ])("schema: rejects %s", (_what, doc, expected) => {
    const errors = jsonSchemaErrors(citySchemaJson(), doc);
    expect(errors.join("\n")).toContain(expected);
  });

  it("schema: describes every agent key with a description", () => {
    const agents = (citySchemaJson().properties as Record<string, { items: { properties: object } }>).agents!;
    const props = agents.items.properties as Record<string, { description?: string }>;
    const undocumented = Object.entries(props)
      .filter(([, p]) => !p.description)
      .map(([k]) => k);
    expect(undocumented).toEqual([]);
  });
});
