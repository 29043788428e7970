import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  CORE_FIELDS,
  canonicalJson,
  compareUtf8,
  diffBreakdown,
  fingerprint,
  identityEnv,
  keepStartedFields,
} from "../../internal/runtime/fingerprint.js";
import type { StartConfig } from "../../internal/runtime/provider.js";
import { redactAssignments } from "../../internal/runtime/secrets.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

const base: StartConfig = {
  command: "claude --dangerously-skip-permissions",
  workDir: "/city/mayor",
  env: { LOG_LEVEL: "info", GC_CITY: "demo" },
  preStart: ["mkdir -p x", "touch y"],
  sessionSetup: ["echo setup"],
  sessionLive: ["tmux set status off"],
};

describe("fingerprint", () => {
  it("fingerprint: versioned 16-hex output, stable across calls", () => {
    const a = fingerprint(base);
    expect(a.core).toMatch(/^v1:[0-9a-f]{16}$/);
    expect(a.live).toMatch(/^v1:[0-9a-f]{16}$/);
    expect(fingerprint(base)).toEqual(a);
  });

  it("fingerprint: the same config gives the same hashes as every earlier build (golden values)", () => {
    // A changed value here means every running session drifts and restarts after an upgrade:
    // bump FINGERPRINT_VERSION on purpose or keep the canonical document as it is.
    const args: Parameters<typeof fingerprint> = [
      {
        command: `claude --dangerously-skip-permissions 'a b' "q"`,
        workDir: "/city/mayor",
        env: {
          LOG_LEVEL: "info",
          GC_CITY: "demo",
          GC_SESSION: "volatile",
          API_TOKEN: "s3cr3t",
          "\u{1F600}": "smile",
          "\uFF61": "mid",
          Z: "",
          a: 'ü\n\t"\\',
        },
        preStart: ["mkdir -p x", "touch y"],
        sessionSetup: ["echo setup"],
        sessionSetupScript: "/city/setup.sh",
        overlayDir: "/city/overlay",
        copyFiles: [
          { src: "/city/a.txt", relDst: "docs" },
          { src: "/city/b", relDst: "" },
        ],
        fingerprintExtra: { model: "opus", depth: "3" },
        sessionLive: ["tmux set status off"],
        backend: "local",
      },
      { sessionSetupScript: "aaaa", overlayDir: "bbbb", copyFiles: { "/city/a.txt": "cccc" } },
      ["GC_SESSION"],
      ["s3cr3t"],
    ];
    const f = fingerprint(...args);
    expect(f.core).toBe("v1:d66b0c260c5cb61d");
    expect(f.live).toBe("v1:df9d083901155a42");
    // Under a city's key the same config's `legacy` is exactly what every earlier build
    // recorded (records from before the key are matched by it, and re-recorded, not restarted).
    const [cfg, files, declared, interpolated] = args;
    const keyed = fingerprint(cfg, files, declared, interpolated, {}, Buffer.alloc(32, 9));
    expect(keyed.legacy).toMatchObject({ core: "v1:d66b0c260c5cb61d", live: "v1:df9d083901155a42" });
    expect(keyed.core).not.toBe("v1:d66b0c260c5cb61d");
    expect(f.breakdown.env?.hash).toBe("v1:9c28e60dac2a3f6b");
    expect(f.breakdown["env.API_TOKEN"]).toEqual({
      hash: "v1:45007262e892611e",
      value: "[redacted]",
      secret: true,
    });
    expect(
      canonicalJson({
        b: [3, { y: undefined, x: null }],
        a: "é",
        "\u{1F600}": 1,
        "\uFF61": 2,
        n: 1.5,
        t: true,
      }),
    ).toBe('{"a":"é","b":[3,{"x":null}],"n":1.5,"t":true,"｡":2,"😀":1}');
  });

  it("fingerprint: map order is irrelevant", () => {
    const swapped = { ...base, env: { GC_CITY: "demo", LOG_LEVEL: "info" } };
    expect(fingerprint(swapped).core).toBe(fingerprint(base).core);
  });

  it("fingerprint: list order is significant", () => {
    const reordered = { ...base, preStart: ["touch y", "mkdir -p x"] };
    expect(fingerprint(reordered).core).not.toBe(fingerprint(base).core);
  });

  it("fingerprint: an empty map equals a missing one", () => {
    const a = fingerprint({ ...base, fingerprintExtra: {} });
    const b = fingerprint({ ...base, fingerprintExtra: undefined });
    expect(a.core).toBe(b.core);
    const c = fingerprint({ ...base, preStart: [] });
    const d = fingerprint({ ...base, preStart: undefined });
    expect(c.core).toBe(d.core);
  });

  it("fingerprint: volatile inputs change nothing", () => {
    const a = fingerprint(base);
    const volatile: StartConfig = {
      ...base,
      workDir: "/elsewhere",
      prompt: "[demo] mayor • 2026-11-29T08:00:00\n\nwork",
      nudge: "hi",
      readyDelayMs: 999,
      readyPromptPrefix: "> ",
      processNames: ["node"],
      env: {
        ...base.env,
        GC_SESSION: "mayor-7",
        GC_DOLT_PORT: "41234",
        GC_INSTANCE_TOKEN: "abc",
        GC_DIR: "/x",
      },
    };
    const b = fingerprint(volatile);
    expect(b.core).toBe(a.core);
    expect(b.live).toBe(a.live);
  });

  it("fingerprint: work dir, prompt and nudge are in the breakdown only (start-only fields), never in a hash", () => {
    const a = fingerprint(base, {}, [], [], { prompt: "review the parser" });
    const b = fingerprint({ ...base, workDir: "/city/other" }, {}, [], [], {
      prompt: "review the lexer",
      nudge: "go",
    });
    expect([b.core, b.live]).toEqual([a.core, a.live]);
    expect(a.breakdown.workDir?.value).toBe("/city/mayor");
    expect(a.breakdown.nudge?.value).toBe("");
    expect(diffBreakdown(a.breakdown, b.breakdown)).toEqual([
      { field: "workDir", from: "/city/mayor", to: "/city/other" },
      {
        field: "prompt",
        from: expect.stringMatching(/^"review the parser" \(17 chars, #\w{6}\)$/),
        to: expect.stringMatching(/^"review the lexer" \(16 chars, #\w{6}\)$/),
      },
      { field: "nudge", from: "", to: expect.stringMatching(/^"go" \(2 chars/) },
    ]);
    // A secret in the prompt is redacted, and nothing stored is hashed over it (no check
    // value for a guess): a change of the secret alone is not reported.
    const withSecret = (prompt: string) =>
      fingerprint(base, {}, [], ["hunter2-secret", "other-secret"], { prompt }).breakdown;
    const s1 = withSecret("token hunter2-secret");
    expect(JSON.stringify(s1)).not.toContain("hunter2");
    expect(s1.prompt).toEqual(withSecret("token other-secret").prompt);
    expect(s1.prompt?.secret).toBe(true);
    expect(diffBreakdown(s1, withSecret("token other-secret"))).toEqual([]);
    expect(diffBreakdown(s1, withSecret("token hunter2-secret!"))).toEqual([
      {
        field: "prompt",
        from: expect.stringContaining("token [redacted]"),
        to: expect.stringContaining("[redacted]!"),
      },
    ]);
  });

  it("diffBreakdown: a record without start-only fields (older build, adopted) is unknown there, not drifted; keepStartedFields keeps what it started with", () => {
    const now = fingerprint(base, {}, [], [], { prompt: "new" });
    const { workDir: _w, prompt: _p, nudge: _n, ...old } = now.breakdown;
    expect(diffBreakdown(old, now.breakdown)).toEqual([]);
    const started = fingerprint(base, {}, [], [], { prompt: "old" }).breakdown;
    const kept = keepStartedFields(started, now.breakdown);
    expect(kept.prompt).toEqual(started.prompt);
    expect(keepStartedFields(old, now.breakdown).prompt).toBeUndefined();
    expect(diffBreakdown(kept, now.breakdown).map((f) => f.field)).toEqual(["prompt"]);
  });

  it("fingerprint: user env keys and allow-listed GC_ keys are identity", () => {
    expect(fingerprint({ ...base, env: { ...base.env, LOG_LEVEL: "debug" } }).core).not.toBe(
      fingerprint(base).core,
    );
    expect(fingerprint({ ...base, env: { ...base.env, GC_CITY: "other" } }).core).not.toBe(
      fingerprint(base).core,
    );
    // A GC_ key the user declared counts when named.
    const declared = fingerprint({ ...base, env: { ...base.env, GC_MINE: "1" } }, {}, ["GC_MINE"]);
    expect(declared.core).not.toBe(fingerprint(base).core);
    expect(identityEnv({ GC_SESSION: "x", A: "1" })).toEqual({ A: "1" });
  });

  it("fingerprint: session_live changes only the live hash", () => {
    const b = fingerprint({ ...base, sessionLive: ["tmux set status on"] });
    expect(b.core).toBe(fingerprint(base).core);
    expect(b.live).not.toBe(fingerprint(base).live);
  });

  it("fingerprint: file content is identity, via the caller's hashes", () => {
    const cfg = { ...base, sessionSetupScript: "/city/setup.sh" };
    const a = fingerprint(cfg, { sessionSetupScript: "aaaa" });
    const b = fingerprint(cfg, { sessionSetupScript: "bbbb" });
    expect(a.core).not.toBe(b.core);
    expect(diffBreakdown(a.breakdown, b.breakdown).map((d) => d.field)).toEqual(["sessionSetupScript"]);
  });

  it("compareUtf8 orders like the UTF-8 bytes, lone surrogates included", () => {
    // Units around every boundary where UTF-16 and UTF-8 orders could differ.
    const units = ["a", "z", "\u07ff", "\u0800", "\ud7ff", "\ud83d", "\ude00", "\ue000", "\uff61", "\uffff"];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed;
    };
    const word = () => Array.from({ length: next() % 5 }, () => units[next() % units.length]).join("");
    const sign = (n: number) => Math.sign(n);
    for (let k = 0; k < 5000; k++) {
      const a = word();
      const b = k % 3 === 0 ? a + word() : word();
      expect([a, b, sign(compareUtf8(a, b))]).toEqual([
        a,
        b,
        sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))),
      ]);
    }
  });

  it("fingerprint: keys outside the BMP sort by UTF-8 bytes, not UTF-16 units", () => {
    // U+FF61 (3 UTF-8 bytes, EF BD A1) vs U+1F600 (4 bytes, F0 9F 98 80): UTF-8 puts U+FF61 first,
    // while UTF-16 code units (0xFF61 vs 0xD83D) put the emoji first.
    const hi = "\u{1F600}";
    const mid = "\uFF61";
    expect(compareUtf8(mid, hi)).toBeLessThan(0);
    expect([hi, mid].sort()).toEqual([hi, mid]); // what naive JS sort does
    expect(canonicalJson({ [hi]: 1, [mid]: 2 })).toBe(`{"${mid}":2,"${hi}":1}`);
    const a = fingerprint({ ...base, env: { [hi]: "1", [mid]: "2" } });
    const b = fingerprint({ ...base, env: { [mid]: "2", [hi]: "1" } });
    expect(a.core).toBe(b.core);
  });

  it("diffBreakdown: names the field and shows old → new, secrets redacted", () => {
    const a = fingerprint({ ...base, env: { ...base.env, API_TOKEN: "s3cret-1" } });
    const b = fingerprint({ ...base, command: "codex", env: { ...base.env, API_TOKEN: "s3cret-2" } });
    const d = diffBreakdown(a.breakdown, b.breakdown);
    expect(d.map((x) => x.field)).toEqual(["command", "env.API_TOKEN"]);
    expect(d[0]).toMatchObject({ from: base.command, to: "codex" });
    expect(d[1]).toEqual({ field: "env.API_TOKEN", from: "(secret)", to: "changed", masked: true });
    expect(JSON.stringify(d)).not.toContain("s3cret");
  });

  it("fingerprint: values derived from a secret (declared or interpolated) are redacted in the breakdown; drift says only 'changed'", () => {
    const cfg = (pw: string, tok: string): StartConfig => ({
      ...base,
      command: `agent --api-key=${tok}`,
      env: { ...base.env, DB_URL: `postgres://u:${pw}@h/db`, API_TOKEN: tok },
    });
    const a = fingerprint(cfg("hunter2-old", "tok-AAAA"), {}, [], ["hunter2-old"]);
    const b = fingerprint(cfg("hunter2-new", "tok-AAAA"), {}, [], ["hunter2-new"]);
    const stored = JSON.stringify(a.breakdown);
    expect(stored).not.toContain("hunter2");
    expect(stored).not.toContain("tok-AAAA");
    expect(a.breakdown.command).toMatchObject({ value: "agent --api-key=[redacted]", secret: true });
    expect(a.breakdown.env?.value).toContain("DB_URL=postgres://u:[redacted]@h/db");
    expect(a.core).not.toBe(b.core); // the secret still counts
    const d = diffBreakdown(a.breakdown, b.breakdown);
    expect(d).toEqual([{ field: "env.DB_URL", from: "(secret)", to: "changed", masked: true }]);
    // A visible change next to a secret shows the (redacted) values.
    const c = fingerprint(
      {
        ...cfg("hunter2-old", "tok-AAAA"),
        env: { ...cfg("hunter2-old", "tok-AAAA").env, LOG_LEVEL: "debug" },
      },
      {},
      [],
      ["hunter2-old"],
    );
    const d2 = diffBreakdown(a.breakdown, c.breakdown);
    expect(d2).toEqual([{ field: "env.LOG_LEVEL", from: "info", to: "debug" }]);
    expect(JSON.stringify(d2)).not.toContain("hunter2");
  });

  it("diffBreakdown: a changed map shows each changed key old → new, keys with spaces and '=' in values intact", () => {
    const a = fingerprint({
      ...base,
      env: { GREETING: "hello", KEEP: "a b=c", OLD: "x" },
      fingerprintExtra: {},
    });
    const b = fingerprint({
      ...base,
      env: { GREETING: "bonjour", KEEP: "a b=c", NEW: "y z" },
      fingerprintExtra: { model: "m2" },
    });
    expect(a.core).not.toBe(b.core);
    expect(diffBreakdown(a.breakdown, b.breakdown)).toEqual([
      { field: "env.GREETING", from: "hello", to: "bonjour" },
      { field: "env.NEW", from: "(absent)", to: "y z" },
      { field: "env.OLD", from: "x", to: "(absent)" },
      { field: "fingerprintExtra.model", from: "(absent)", to: "m2" },
    ]);
    // Per-key entries are display only: the core hash is that of the whole fields.
    const noKeys = (fp: typeof a) =>
      Object.fromEntries(Object.entries(fp.breakdown).filter(([k]) => !/^(env|fingerprintExtra)\./.test(k)));
    expect(Object.keys(a.breakdown)).toContain("env.GREETING");
    // A record stored before per-key entries existed: the whole map, old → new (an empty
    // map needs no entries).
    expect(diffBreakdown(noKeys(a), b.breakdown)).toEqual([
      { field: "env", from: a.breakdown.env?.value, to: b.breakdown.env?.value },
      { field: "fingerprintExtra.model", from: "(absent)", to: "m2" },
    ]);
    expect(diffBreakdown(a.breakdown, a.breakdown)).toEqual([]);
  });

  it("canonicalJson: drops undefined members, keeps nulls and array order", () => {
    expect(canonicalJson({ b: [3, 1], a: undefined, c: null })).toBe('{"b":[3,1],"c":null}');
  });

  it("drift through the store: a secret-only change stays masked; literal secrets redacted; one marker", async () => {
    const cfg = (pw: string): StartConfig => ({
      ...base,
      command: `TOKEN_COPY=${pw}; GH_TOKEN=literal-1234 sleep 100000`,
      env: { ...base.env, API_TOKEN: pw },
    });
    const a = fingerprint(cfg("hunter2-old"), {}, [], ["hunter2-old"]);
    const b = fingerprint(cfg("hunter2-new"), {}, [], ["hunter2-new"]);
    expect(a.breakdown.command).toMatchObject({
      value: "TOKEN_COPY=[redacted]; GH_TOKEN=[redacted] sleep 100000",
      secret: true,
    });
    const store = openMemoryStore({ singleTenant: true });
    await store.create({ name: "x", agent: "x", provider: "fake", breakdown: a.breakdown });
    const stored = (await store.get("x"))?.breakdown ?? {};
    await store.close();
    // The store keeps the fingerprint's display values as they are: nothing to tell apart.
    for (const [f, fp] of Object.entries(a.breakdown)) expect(stored[f]?.value, f).toBe(fp.value);
    expect(diffBreakdown(stored, b.breakdown)).toEqual([
      { field: "command", from: "(secret)", to: "changed", masked: true },
      { field: "env.API_TOKEN", from: "(secret)", to: "changed", masked: true },
    ]);
    const text = JSON.stringify([stored, b.breakdown]);
    expect(text).not.toMatch(/hunter2|literal-1234|\[REDACTED\]/);
  });
});

describe("fingerprint with the city's key (secrets sealed)", () => {
  const key1 = Buffer.alloc(32, 1);
  const key2 = Buffer.alloc(32, 2);
  const withSecret: StartConfig = {
    ...base,
    command: "agent --token sekrit-123 --name mayor",
    env: { ...base.env, API_TOKEN: "sekrit-123", PIN: "x", DB_PASSWORD: "ab" },
    sessionLive: ["tmux set @t sekrit-123"],
  };
  const secrets = ["sekrit-123"];
  const all = (f: ReturnType<typeof fingerprint>) => [
    f.core,
    f.live,
    ...Object.values(f.breakdown).map((b) => b.hash),
  ];

  it("a config without secrets hashes the same with or without a key (no legacy): nothing drifts on upgrade", () => {
    const plain = fingerprint(base, {}, [], [], { prompt: "hi" }, key1);
    expect(plain).toEqual(fingerprint(base, {}, [], [], { prompt: "hi" }));
    expect(plain.legacy).toBeUndefined();
  });

  it("every hash derived from a secret depends on the key; the rest does not; legacy is the unkeyed scheme", () => {
    const unkeyed = fingerprint(withSecret, {}, [], secrets);
    const a = fingerprint(withSecret, {}, [], secrets, {}, key1);
    const b = fingerprint(withSecret, {}, [], secrets, {}, key2);
    expect(a.legacy).toMatchObject({ core: unkeyed.core, live: unkeyed.live });
    // Per field, the unkeyed hash of exactly the fields the key changes (drift's field list).
    const changedByKey = Object.keys(a.breakdown).filter(
      (f) => a.breakdown[f]?.hash !== unkeyed.breakdown[f]?.hash,
    );
    expect(Object.keys(a.legacy?.fields ?? {}).sort()).toEqual(changedByKey.sort());
    for (const f of changedByKey) expect(a.legacy?.fields?.[f]).toBe(unkeyed.breakdown[f]?.hash);
    expect(a.core).not.toBe(unkeyed.core);
    expect(a.core).not.toBe(b.core);
    expect(a.live).not.toBe(unkeyed.live);
    for (const f of ["command", "env", "env.API_TOKEN", "env.DB_PASSWORD", "sessionLive"]) {
      expect(a.breakdown[f]?.hash, f).not.toBe(unkeyed.breakdown[f]?.hash);
      expect(a.breakdown[f]?.hash, f).not.toBe(b.breakdown[f]?.hash);
      // Display values and flags are the key's business no more than the hashes were.
      expect({ ...a.breakdown[f], hash: "" }, f).toEqual({ ...unkeyed.breakdown[f], hash: "" });
    }
    for (const f of ["preStart", "sessionSetup", "env.LOG_LEVEL", "env.PIN", "workDir"]) {
      expect(a.breakdown[f], f).toEqual(unkeyed.breakdown[f]);
    }
    // No keyed hash equals any unkeyed one of a secret-derived field (no check value survives).
    const keyed = new Set(all(a));
    for (const f of ["command", "env", "env.API_TOKEN", "env.DB_PASSWORD", "sessionLive"]) {
      expect(keyed.has(unkeyed.breakdown[f]!.hash), f).toBe(false);
    }
    expect(keyed.has(unkeyed.core)).toBe(false);
  });

  it("a secret's change is still drift under the key (rotation restarts); the same key and config give the same hashes", () => {
    const a = fingerprint(withSecret, {}, [], secrets, {}, key1);
    expect(fingerprint(withSecret, {}, [], secrets, {}, Buffer.from(key1))).toEqual(a);
    const rotated = fingerprint(
      { ...withSecret, env: { ...withSecret.env, DB_PASSWORD: "ac" } },
      {},
      [],
      secrets,
      {},
      key1,
    );
    expect(rotated.core).not.toBe(a.core);
    expect(diffBreakdown(a.breakdown, rotated.breakdown)).toEqual([
      { field: "env.DB_PASSWORD", from: "(secret)", to: "changed", masked: true },
    ]);
  });

  it("a literal secret under a secret-named key in provider settings (an MCP server's env) is redacted in the breakdown and sealed under the key", () => {
    const token = "ghp_literalTOKEN1234";
    const cfg: StartConfig = {
      ...base,
      providerSettings: {
        mcp_servers: [
          { name: "gh", command: "/bin/mcp", args: [], env: { GITHUB_PERSONAL_ACCESS_TOKEN: token } },
        ],
      },
    };
    const unkeyed = fingerprint(cfg);
    const a = fingerprint(cfg, {}, [], [], {}, key1);
    for (const f of [unkeyed, a]) {
      expect(JSON.stringify(f.breakdown)).not.toContain(token);
      expect(f.breakdown["providerSettings.mcp_servers"]).toMatchObject({ secret: true });
    }
    expect(a.breakdown["providerSettings.mcp_servers"]?.hash).not.toBe(
      unkeyed.breakdown["providerSettings.mcp_servers"]?.hash,
    );
    expect(a.legacy?.core).toBe(unkeyed.core);
    // A secret-named extra is sealed whole too, as an env value is.
    const extra = { ...base, fingerprintExtra: { AUTH: "x1" } };
    expect(fingerprint(extra, {}, [], [], {}, key1).breakdown["fingerprintExtra.AUTH"]?.hash).not.toBe(
      fingerprint(extra).breakdown["fingerprintExtra.AUTH"]?.hash,
    );
  });
});

describe("fingerprint: every output as earlier builds gave it", () => {
  /** Configs mixing secrets (named, interpolated, in settings), odd key orders and every field. */
  function matrix(): Parameters<typeof fingerprint>[] {
    const envs: Record<string, string>[] = [
      {},
      { GC_CITY: "c", GC_CITY_PATH: "/p", GC_AGENT: "a", GC_TEMPLATE: "a", GC_SESSION: "s", GC_DIR: "/w" },
      {
        ZED: "last",
        FOO: "bar",
        API_TOKEN: "supersecret",
        GC_X: "1",
        é: "ü",
        AUTHOR: "me",
        XAUTH: "hidden1",
      },
      { PASSWORD: "abc", GREETING: "hello supersecret there", B: "MY_TOKEN=zzz", C: "AUTHOR=x" },
    ];
    const commands = [
      "exec sleep 1",
      "run --token=supersecret API_KEY=abc",
      `A_AUTHOR=x B_AUTHORIZ=y c_passwd=z XAUTH='q r' Y_AUTHO=1 auth=[redacted]x k.api-key="v w" =bare`,
    ];
    const out: Parameters<typeof fingerprint>[] = [];
    for (const env of envs)
      for (const extra of [undefined, { SOME_KEY: "v", api_key: "topsecret" }])
        for (const providerSettings of [
          undefined,
          { image: "img", env: { GH_TOKEN: "ghsecret" }, list: [1, { a: null }] },
        ])
          for (const [i, command] of commands.entries()) {
            const cfg: StartConfig = {
              command,
              env,
              workDir: i === 1 ? "/w/supersecret" : "/w",
              ...(extra ? { fingerprintExtra: extra } : {}),
              ...(providerSettings ? { providerSettings } : {}),
              ...(i === 2
                ? {
                    backend: "tmux",
                    preStart: ["a", "b supersecret"],
                    sessionSetup: ["x=1", "TOKEN=2"],
                    sessionLive: ["l1", "PASS=x"],
                    sessionSetupScript: "/s.sh",
                    overlayDir: "/o",
                    copyFiles: [
                      { src: "/c1", relDst: "" },
                      { src: "/c2", relDst: "d" },
                    ],
                  }
                : {}),
            };
            const files =
              i === 2 ? { sessionSetupScript: "abc", overlayDir: "missing", copyFiles: { "/c1": "h1" } } : {};
            const startText =
              i === 0
                ? {}
                : { prompt: `Hello\n  world supersecret TOKEN=abc ${"p".repeat(60)}`, nudge: "go" };
            const interpolated = i === 1 ? ["supersecret"] : [];
            const declared = i === 0 ? [] : ["GC_X"];
            for (const key of [undefined, new Uint8Array(32).fill(7)])
              out.push([cfg, files, declared, interpolated, startText, key]);
          }
    return out;
  }

  it("fingerprint: hashes, display values, secret flags and legacy hashes of 96 configs (golden digest)", () => {
    // The digest of what the build before the cold-status work produced for the same inputs:
    // a changed value means stored fingerprints or `gc drift` output would change.
    const h = createHash("sha256");
    for (const args of matrix()) h.update(JSON.stringify(fingerprint(...args)));
    expect(h.digest("hex")).toBe("051655df1ecfd2b48ceb792ff8dd1bb2fe7719905cf4b5eed92cb5eb927a6c09");
  });

  it("fingerprint: the same config hashes the same however many other texts were hashed in between", () => {
    // Short texts' hashes are remembered (a bounded memo); overflowing it changes nothing.
    const first = fingerprint(base);
    const long = { ...base, command: `run ${"x".repeat(400)}` };
    const firstLong = fingerprint(long);
    const secretEnv = { ...base, env: { ...base.env, GH_TOKEN: "tok-1234", PLAIN: "p-1234" } };
    const firstSecret = fingerprint(secretEnv);
    expect(firstSecret.breakdown["env.GH_TOKEN"]).toMatchObject({ value: "[redacted]", secret: true });
    // Distinct texts and distinct key names (secret-named or not) overflow both memos.
    for (let i = 0; i < 3000; i++) {
      fingerprint({ ...base, env: { ...base.env, N: String(i), [i % 2 ? `K${i}_TOKEN` : `K${i}`]: "v" } });
    }
    expect(fingerprint(base)).toEqual(first);
    expect(fingerprint(long)).toEqual(firstLong);
    expect(fingerprint(secretEnv)).toEqual(firstSecret);
  });

  it("fingerprint: display values redact `SECRET_KEY=value` exactly as redactAssignments does", () => {
    for (const command of [
      "plain",
      "a=b c=d",
      "GH_TOKEN=abc run",
      "AUTHOR=me AUTHORIZATION=x AUTHO=y XAUTH=z",
      `x.api-key="v w" k='q r' =bare API_KEY=[redacted]tail`,
      "cookie=1 Passwd=2 passphrase=3 private.key=4 ACCESS-KEY=5 credentials=6",
    ]) {
      const value = fingerprint({ ...base, command }).breakdown.command?.value;
      expect(value).toBe(redactAssignments(command));
    }
  });

  it("fingerprint: the breakdown holds every core field, in CORE_FIELDS order, then the per-key entries", () => {
    const fp = fingerprint({
      ...base,
      backend: "tmux",
      providerSettings: { image: "i" },
      fingerprintExtra: { X: "1" },
    });
    const keys = Object.keys(fp.breakdown);
    expect(keys.slice(0, CORE_FIELDS.length)).toEqual([...CORE_FIELDS]);
    expect(keys.slice(CORE_FIELDS.length)).toEqual([
      "env.LOG_LEVEL",
      "env.GC_CITY",
      "fingerprintExtra.X",
      "providerSettings.image",
      "sessionLive",
      "workDir",
      "prompt",
      "nudge",
    ]);
  });

  it("fingerprint: env in any key order gives the same hash and a display in byte order", () => {
    const a = fingerprint({ ...base, env: { b: "1", a: "2", é: "3", Z: "4" } });
    const b = fingerprint({ ...base, env: { Z: "4", é: "3", a: "2", b: "1" } });
    expect(a.core).toBe(b.core);
    expect(a.breakdown.env).toEqual(b.breakdown.env);
    expect(a.breakdown.env?.value).toBe("Z=4 a=2 b=1 é=3");
    expect(Object.keys(a.breakdown).filter((k) => k.startsWith("env."))).toEqual([
      "env.b",
      "env.a",
      "env.é",
      "env.Z",
    ]);
  });
});
