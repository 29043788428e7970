#!/usr/bin/env node
/**
 * Runs the loopback API server standalone until SIGINT/SIGTERM:
 *
 *   npm run build && node dist/test/k8s/apiserver/cli.js [--port N] [--dir D] [--namespace NS]...
 *
 * Prints the URL and `export` lines for KUBECONFIG/KUBECACHEDIR, then one JSON line per request
 * with `--log`. On exit every pod process is killed and (without --dir) the temp dir removed.
 */
import { parseArgs } from "node:util";
import { startApiServer } from "./server.js";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    dir: { type: "string" },
    token: { type: "string" },
    namespace: { type: "string", multiple: true },
    "schedule-delay-ms": { type: "string" },
    "start-delay-ms": { type: "string" },
    log: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help) {
  process.stdout.write(
    "usage: cli.js [--port N] [--dir DIR] [--token T] [--namespace NS]... [--schedule-delay-ms N] [--start-delay-ms N] [--log]\n",
  );
  process.exit(0);
}

const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
const server = await startApiServer({
  port: Number(values.port),
  ...(values.dir !== undefined ? { dir: values.dir } : {}),
  ...(values.token !== undefined ? { token: values.token } : {}),
  ...(values.namespace ? { namespaces: values.namespace } : {}),
  ...(num(values["schedule-delay-ms"]) !== undefined
    ? { scheduleDelayMs: num(values["schedule-delay-ms"])! }
    : {}),
  ...(num(values["start-delay-ms"]) !== undefined ? { startDelayMs: num(values["start-delay-ms"])! } : {}),
});
process.stdout.write(
  `loopback API server listening on ${server.url}\nexport KUBECONFIG=${server.kubectlEnv.KUBECONFIG}\nexport KUBECACHEDIR=${server.kubectlEnv.KUBECACHEDIR}\n`,
);
if (values.log) {
  let seen = 0;
  setInterval(() => {
    const log = server.requestLog.entries;
    for (; seen < log.length; seen++) {
      const r = log[seen]!;
      if (r.status !== 0 || Date.now() - r.at > 1000) process.stdout.write(`${JSON.stringify(r)}\n`);
      else break;
    }
  }, 200).unref();
}
let stopping = false;
const shutdown = () => {
  if (stopping) return;
  stopping = true;
  void server.stop().then(() => process.exit(0));
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
