// Marks the built CLI executable so `npx gc` and `./dist/cmd/gc/main.js` work.
import { chmodSync } from "node:fs";

chmodSync(new URL("../dist/cmd/gc/main.js", import.meta.url), 0o755);
