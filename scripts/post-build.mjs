// After tsc: bundles the CLI (scripts/bundle-cli.mjs), marks it executable so `npx gc` and
// `./dist/cmd/gc/main.js` work, copies the dashboard's web app next to its server module, and
// last writes dist/build-id: the content hash of everything built (internal/build/build-id.ts).
import { chmodSync, cpSync } from "node:fs";
import { fileURLToPath } from "node:url";

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

// Last, once every file of the build is in place: its content hash is the build's identity.
const { writeBuildId } = await import("../dist/internal/build/build-id.js");
console.log(`build ${writeBuildId(fileURLToPath(new URL("../dist/", import.meta.url)))}`);
