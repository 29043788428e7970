/**
 * closeInheritedFds (internal/proc/fds.ts): a process started with a descriptor its spawner left
 * without close-on-exec (as a shell redirection or a CI runner does) closes exactly that one,
 * so nothing it starts afterwards holds the spawner's pipe.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** The built module (a plain `node` child cannot load TypeScript). */
const FDS = fileURLToPath(new URL("../../dist/internal/proc/fds.js", import.meta.url));

describe.skipIf(process.platform !== "linux")("closeInheritedFds", () => {
  it("closes an inherited pipe (fd 200, no close-on-exec) and nothing of Node's own; the pipe then ends", async () => {
    const script = `
      import { readdirSync } from "node:fs";
      const { closeInheritedFds } = await import(${JSON.stringify(FDS)});
      const closed = closeInheritedFds();
      process.stdout.write(JSON.stringify({ closed, left: readdirSync("/proc/self/fd").map(Number) }));
      setTimeout(() => undefined, 3000); // still alive while the parent waits for the pipe's end
    `;
    // bash's `200>&3` leaves fd 200 without close-on-exec, as a CI runner's pipe may be.
    const child = spawn(
      "/bin/bash",
      ["-c", 'exec "$0" --input-type=module -e "$1" 200>&3 3>&-', process.execPath, script],
      { stdio: ["ignore", "pipe", "inherit", "pipe"] },
    );
    let out = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    const pipe = child.stdio[3] as NodeJS.ReadableStream;
    pipe.resume();
    const ended = new Promise<number>((r) => pipe.on("end", () => r(Date.now())));
    const exited = new Promise<number>((r) => child.on("exit", () => r(Date.now())));
    // The pipe ends while the child still lives: it closed its copy.
    const [endAt, exitAt] = await Promise.all([ended, exited]);
    expect(endAt).toBeLessThan(exitAt);
    const r = JSON.parse(out) as { closed: number[]; left: number[] };
    expect(r.closed).toContain(200);
    expect(r.left).not.toContain(200);
  });
});
