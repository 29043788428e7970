// Marks the built CLI executable so `npx gc` and `./dist/cmd/gc/main.js` work.
import { chmodSync, cpSync } from "node:fs";

chmodSync(new URL("../dist/cmd/gc/main.js", import.meta.url), 0o755);

// The dashboard's web app (HTML, JS, CSS) is served from next to its server module.
cpSync(
  new URL("../cmd/gc/dashboard/assets", import.meta.url),
  new URL("../dist/cmd/gc/dashboard/assets", import.meta.url),
  {
    recursive: true,
  },
);
