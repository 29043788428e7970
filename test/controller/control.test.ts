import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  type ControlHandlers,
  type ControlRequest,
  controlSocketPath,
  MAX_REQUEST_BYTES,
  requestControl,
  serveControl,
} from "../../internal/controller/control.js";

const handlers: ControlHandlers = {
  status: () => ({ pid: 1, startedAt: 0, passes: 0, last: undefined, lastError: undefined, busy: false }),
  desired: () => undefined,
  // Echoes the sessions it was asked about as waiting, `b` also with its work and screen
  // (enough to check the wire format).
  pending: async (sessions) =>
    new Map(
      [...sessions].flatMap(([provider, names]) =>
        names.map((n) => [
          n,
          {
            interaction: { requestId: `${provider}:${n}`, kind: "approval" as const },
            ...(n === "b"
              ? { work: { state: "needs-input" as const, message: "Q" }, lastActivity: 5, screen: ["1. Yes"] }
              : {}),
          },
        ]),
      ),
    ),
  // A controller running another city file refuses (the asker then builds its own snapshot).
  snapshot: async (file) => {
    throw new Error(`this controller runs /c/city.yaml, not ${file}`);
  },
  watch: async () => undefined,
  shutdown: () => undefined,
};

async function serve(stateDir: string): Promise<{ path: string; server: Server }> {
  const path = controlSocketPath(stateDir);
  const server = await serveControl(path, handlers);
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return { path, server };
}

async function tempState(extra = ""): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "gc-ctl-"));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  return join(root, extra, ".gc");
}

describe("control socket", () => {
  it("controlSocketPath: a city path too long for a unix socket gets a short, deterministic fallback that works", async () => {
    const stateDir = await tempState("x".repeat(60) + "/" + "y".repeat(60));
    const path = controlSocketPath(stateDir);
    onTestFinished(() => rm(dirname(path), { recursive: true, force: true })); // after a failure
    expect(Buffer.byteLength(path)).toBeLessThanOrEqual(107);
    expect(controlSocketPath(stateDir)).toBe(path);
    await serve(stateDir);
    const msgs = await requestControl(path, { op: "status" }, { timeoutMs: 5_000 });
    expect(msgs[0]).toMatchObject({ type: "status" });
  });

  it("controlSocketPath: the fallback /tmp directory goes when the server closes, unless another socket is in it", async () => {
    const stateDir = await tempState(`${"x".repeat(60)}/${"y".repeat(60)}`);
    const path = controlSocketPath(stateDir);
    const dir = dirname(path);
    expect(dir).toMatch(/^\/tmp\/gc-\d+-[0-9a-f]{12}$/);
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    // Alone in it: closing removes socket and directory.
    let { server } = await serve(stateDir);
    await new Promise<void>((r) => server.close(() => r()));
    expect(existsSync(path)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    // With another live socket beside it (another process's), the directory stays.
    ({ server } = await serve(stateDir));
    const other = createServer();
    const otherPath = join(dir, "other.sock");
    await new Promise<void>((r) => other.listen(otherPath, () => r()));
    onTestFinished(() => new Promise<void>((r) => other.close(() => r())));
    await new Promise<void>((r) => server.close(() => r()));
    expect(existsSync(path)).toBe(false);
    expect(existsSync(otherPath)).toBe(true);
  });

  it("pending: answers per session for the sessions asked about (provider → names) with what was seen; malformed ones are refused", async () => {
    const { path } = await serve(await tempState());
    const msgs = await requestControl(
      path,
      { op: "pending", sessions: { tmux: ["a", "b"] } },
      { timeoutMs: 5_000 },
    );
    expect(msgs).toEqual([
      {
        type: "pending",
        pending: {
          a: { requestId: "tmux:a", kind: "approval" },
          b: { requestId: "tmux:b", kind: "approval" },
        },
        seen: {
          a: { interaction: { requestId: "tmux:a", kind: "approval" } },
          b: {
            interaction: { requestId: "tmux:b", kind: "approval" },
            work: { state: "needs-input", message: "Q" },
            lastActivity: 5,
            screen: ["1. Yes"],
          },
        },
      },
    ]);
    const bad = await requestControl(
      path,
      { op: "pending", sessions: { tmux: [1] } } as unknown as ControlRequest,
      { timeoutMs: 5_000 },
    );
    expect(bad).toEqual([{ type: "error", error: "bad request" }]);
  });

  it("snapshot: a refusal reaches the asker as an error message; a request without a file is refused", async () => {
    const { path } = await serve(await tempState());
    const msgs = await requestControl(path, { op: "snapshot", file: "/d/city.yaml" }, { timeoutMs: 5_000 });
    expect(msgs).toEqual([{ type: "error", error: "this controller runs /c/city.yaml, not /d/city.yaml" }]);
    const bad = await requestControl(path, { op: "snapshot" } as unknown as ControlRequest, {
      timeoutMs: 5_000,
    });
    expect(bad).toEqual([{ type: "error", error: "bad request" }]);
  });

  it("serveControl: a request line past the limit is refused and the connection closed; the server keeps serving", async () => {
    const { path } = await serve(await tempState());
    const reply = await new Promise<string>((resolve) => {
      const sock = connect(path);
      let got = "";
      sock.on("data", (d) => (got += d.toString()));
      sock.on("close", () => resolve(got));
      sock.on("error", () => resolve(got));
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      for (let i = 0; i < (4 * MAX_REQUEST_BYTES) / chunk.length; i++) sock.write(chunk);
    });
    expect(reply).toContain("request longer than");
    const msgs = await requestControl(path, { op: "status" }, { timeoutMs: 5_000 });
    expect(msgs[0]).toMatchObject({ type: "status" });
  });

  it("serveControl: 2,000 idle connections never keep a request from being served", {
    timeout: 120_000,
  }, async () => {
    const { path } = await serve(await tempState());
    // A flood: 2,000 connections that never send a line, each re-opened when closed.
    let stop = false;
    const socks = new Set<ReturnType<typeof connect>>();
    const open = () => {
      if (stop) return;
      const s = connect(path);
      socks.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        socks.delete(s);
        setImmediate(open);
      });
    };
    for (let i = 0; i < 2_000; i++) open();
    onTestFinished(() => {
      stop = true;
      for (const s of socks) s.destroy();
    });
    for (let i = 0; i < 10; i++) {
      const msgs = await requestControl(path, { op: "status" }, { timeoutMs: 30_000 });
      expect(msgs[0]).toMatchObject({ type: "status" });
    }
  });
});
