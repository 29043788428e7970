/**
 * `gc dashboard [--port N] [--host H] [--open] [--allow-remote] [--interval DUR]`: serves the
 * live web view of the city (cmd/gc/dashboard/) until interrupted. Loopback only unless
 * `--allow-remote`; the URL printed at start carries a random access token.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { UsageError } from "../../../internal/base/errors.js";
import { defineCommand, EXIT } from "../context.js";
import { isLoopback, startDashboard } from "../dashboard/server.js";
import { openCity } from "../deps.js";
import { durationFlag } from "../operate.js";

const USAGE = `Usage: gc dashboard [--port N] [--host 127.0.0.1] [--open] [--allow-remote] [--interval DUR]

Serves a live web view of the city: one card per session, each session's live screen,
drift, events, and the actions nudge, respond, restart, reset and stop (the same code as
the CLI). Prints the URL with a random access token (like Jupyter) and runs until Ctrl-C.

  --port N          port to listen on (default 0: a free port)
  --host H          address to bind (default 127.0.0.1); a non-loopback address needs
                    --allow-remote (anyone who can reach it and has the token may act)
  --open            open the URL in the default browser (xdg-open)
  --interval DUR    how often the city is observed for all viewers (default 500ms)

With the controller down the dashboard shows it and is read-only. API: docs/dashboard.md.`;

export const command = defineCommand({
  usage: USAGE,
  options: {
    port: { type: "string" },
    host: { type: "string" },
    open: { type: "boolean" },
    "allow-remote": { type: "boolean" },
    interval: { type: "string" },
  },
  async run(ctx, { positionals, values }) {
    if (positionals.length > 0) throw new UsageError(`gc dashboard takes no arguments\n\n${USAGE}`);
    const port = values.port === undefined ? 0 : Number(values.port);
    if (!Number.isSafeInteger(port) || port < 0 || port > 65535)
      throw new UsageError("--port: expected a port number 0-65535");
    const host = values.host ?? "127.0.0.1";
    const remote = values["allow-remote"] === true;
    if (!isLoopback(host) && !remote)
      throw new UsageError(
        `--host ${host} is not a loopback address: add --allow-remote to serve it beyond this machine (the token is still required)`,
      );
    const intervalMs = durationFlag("interval", values.interval, 500);
    if (intervalMs < 100) throw new UsageError("--interval: at least 100ms");
    const city = await openCity(ctx);
    try {
      const token = randomBytes(24).toString("base64url");
      const d = await startDashboard(city, { host, port, token, intervalMs, anyHost: remote, ctx });
      if (ctx.json) ctx.out(JSON.stringify({ url: d.url, port: d.port, token }));
      else {
        ctx.out(`gc dashboard for city ${city.name}: ${d.url}`);
        ctx.out("(Ctrl-C stops it)");
      }
      if (values.open) {
        const child = spawn("xdg-open", [d.url], { stdio: "ignore", detached: true });
        child.on("error", (e) => ctx.err(`gc: could not open a browser (${e.message}); open the URL above`));
        child.unref();
      }
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await d.close();
      return EXIT.ok;
    } finally {
      await city.close();
    }
  },
});
