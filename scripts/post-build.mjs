// After tsc: bundles the CLI (scripts/bundle-cli.mjs), marks it executable so `npx gc` and
// `./dist/cmd/gc/main.js` work, and copies the dashboard's web app next to its server module.
import { chmodSync, cpSync } from "node:fs";

await import("./bundle-cli.mjs");

chmodSync(new URL("../dist/cmd/gc/main.js", import.meta.url), 0o755);

// The dashboard's web app (HTML, JS, CSS) is served from next to its server module.
cpSync(
  new URL("../cmd/gc/dashboard/assets", import.meta.url),
  new URL("../dist/cmd/gc/dashboard/assets", import.meta.url),
  {
    recursive: true,
  },
);
