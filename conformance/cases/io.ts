/**
 * Provider conformance cases, as data: input and screen: nudges (hostile texts byte for byte,
 * blocking, multiline), keys, interrupt, peek, clearScrollback. One group of `PROVIDER_CASES`
 * (../provider-cases.ts), kept as one table.
 */
import assert from "node:assert/strict";
import type { ConformanceCase } from "./case.js";
import { armed, fileEquals, rejectsWith, running } from "./checks.js";
import { INT_TRAP, LINE_READER, NUDGE_TEXTS, RAW_KEYS, READER } from "./programs.js";

function nudgeCase(label: string, text: string): ConformanceCase {
  return {
    id: `nudge.${label}`,
    title: `nudge: the program receives ${label} text exactly`,
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.nudge(name, text);
      await fileEquals(ctx, name, cfg, "nudge.out", `${text}\n`);
      for (const f of ["pwned", "pwned2", "pwned3"]) {
        assert.equal(await ctx.read(name, cfg, f), undefined, `${f}: text was interpreted`);
      }
    },
  };
}

export const IO_CASES: ConformanceCase[] = [
  ...NUDGE_TEXTS.map(([label, text]) => nudgeCase(label, text)),
  {
    id: "nudge.blocks",
    title: "nudge: content blocks are flattened (text verbatim, files as [File: name])",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.nudge(name, [
        { type: "text", text: "look at" },
        { type: "file_path", path: "/tmp/some/report.txt" },
      ]);
      await fileEquals(ctx, name, cfg, "nudge.out", "look at\n[File: report.txt]\n");
    },
  },
  {
    id: "nudge.sequence",
    title: "nudge: consecutive nudges arrive in order",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      for (const t of ["one", "two", "three"]) await ctx.provider.nudge(name, t);
      await fileEquals(ctx, name, cfg, "nudge.out", "one\ntwo\nthree\n");
    },
  },
  {
    id: "nudge.multiline-lines",
    title: "nudge: multiline `lines` types and submits each line on its own (each its own paste)",
    // Typing rules apply where a terminal is typed into (one can attach to it), not to a
    // protocol prompt (acp).
    requires: ["executes", "idleWait", "attach"],
    async run(ctx) {
      const B = "\u001b[200~";
      const E = "\u001b[201~";
      const { name, cfg } = await running(ctx, LINE_READER);
      await ctx.eventually("the reader's prompt", async () =>
        (await ctx.provider.peek(name, 5)).includes(">"),
      );
      await ctx.provider.nudge(name, "one\ntwo", { multiline: "lines" });
      await fileEquals(ctx, name, cfg, "nudge.out", `${B}one${E}\n${B}two${E}\n`);
    },
  },
  {
    id: "nudge.missing",
    title: "nudge: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.nudge(ctx.newName("missing"), "hello");
    },
  },
  {
    id: "nudge.running",
    title: "nudge: resolves for a running session",
    async run(ctx) {
      const { name } = await running(ctx, READER);
      await ctx.provider.nudge(name, "hello");
    },
  },
  {
    id: "sendKeys.ctrl-c",
    title: "sendKeys: C-c interrupts the foreground program",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, INT_TRAP);
      await armed(ctx, name, cfg);
      await ctx.provider.sendKeys(name, ["C-c"]);
      await ctx.eventually("int.out", async () => (await ctx.read(name, cfg, "int.out"))?.includes("INT"));
      assert.equal(await ctx.provider.isRunning(name), true, "the trapping program keeps running");
    },
  },
  {
    id: "sendKeys.enter",
    title: "sendKeys: Enter submits an empty line and nothing more",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, READER);
      await ctx.provider.sendKeys(name, ["Enter"]);
      await fileEquals(ctx, name, cfg, "nudge.out", "\n");
    },
  },
  {
    id: "sendKeys.missing",
    title: "sendKeys: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.sendKeys(ctx.newName("missing"), ["Enter"]);
    },
  },
  {
    id: "interrupt.sigint",
    title: "interrupt: delivers SIGINT to the program",
    requires: ["executes"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, INT_TRAP);
      await armed(ctx, name, cfg);
      await ctx.provider.interrupt(name);
      await ctx.eventually("int.out", async () => (await ctx.read(name, cfg, "int.out"))?.includes("INT"));
    },
  },
  {
    id: "interrupt.raw-key",
    title:
      "interrupt: a program reading raw keys gets Ctrl-C as its key (byte 03), not a signal, and keeps running",
    requires: ["executes", "attach"],
    async run(ctx) {
      const { name, cfg } = await running(ctx, RAW_KEYS);
      await armed(ctx, name, cfg);
      await ctx.provider.interrupt(name);
      await ctx.eventually(
        "key.out holds Ctrl-C",
        async () => (await ctx.read(name, cfg, "key.out")) === "\x03",
      );
      assert.equal(await ctx.provider.isRunning(name), true, "the program was killed");
    },
  },
  {
    id: "interrupt.missing",
    title: "interrupt: resolves for a missing session",
    async run(ctx) {
      await ctx.provider.interrupt(ctx.newName("missing"));
    },
  },
  {
    id: "interrupt.concurrent",
    title: "interrupt: concurrent interrupts of three sessions resolve",
    async run(ctx) {
      const names = await Promise.all([0, 1, 2].map(async () => (await running(ctx)).name));
      await Promise.all(names.map((n) => ctx.provider.interrupt(n)));
    },
  },
  {
    id: "peek.marker",
    title: "peek: shows text the program printed",
    requires: ["executes"],
    async run(ctx) {
      const marker = `GC-MARKER-${Math.random().toString(36).slice(2)}`;
      const { name } = await running(ctx, `echo ${marker}; exec sleep 300`);
      await ctx.eventually("the marker on screen", async () =>
        (await ctx.provider.peek(name, 50)).includes(marker),
      );
    },
  },
  {
    id: "peek.lines",
    title: "peek: the line limit holds and the newest lines come last; 0 means all",
    requires: ["executes"],
    async run(ctx) {
      const { name } = await running(
        ctx,
        "i=1; while [ $i -le 120 ]; do echo line-$i; i=$((i+1)); done; exec sleep 300",
      );
      await ctx.eventually("line-120", async () => (await ctx.provider.peek(name, 5)).includes("line-120"));
      const five = await ctx.provider.peek(name, 5);
      const lines = five.split("\n");
      assert.ok(lines.length <= 5, `peek(5) returned ${lines.length} lines: ${JSON.stringify(five)}`);
      assert.ok(!five.includes("line-110"), "peek(5) returned old lines");
      const all = await ctx.provider.peek(name, 0);
      assert.ok(all.includes("line-1\n") && all.includes("line-120"), "peek(0) must include all scrollback");
    },
  },
  {
    id: "peek.missing",
    title: "peek: rejects with SessionNotFoundError for a missing session",
    async run(ctx) {
      await rejectsWith(ctx.provider.peek(ctx.newName("missing"), 10), "GC_SESSION_NOT_FOUND", "peek");
    },
  },
  {
    id: "peek.running",
    title: "peek: resolves to a string for a running session",
    async run(ctx) {
      const { name } = await running(ctx);
      assert.equal(typeof (await ctx.provider.peek(name, 10)), "string");
    },
  },
  {
    id: "clearScrollback.resolves",
    title: "clearScrollback: resolves for running and missing sessions",
    async run(ctx) {
      const { name } = await running(ctx);
      await ctx.provider.clearScrollback(name);
      await ctx.provider.clearScrollback(ctx.newName("missing"));
      assert.equal(await ctx.provider.isRunning(name), true);
    },
  },
];
