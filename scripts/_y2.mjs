import { readFileSync } from "node:fs";
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const text = readFileSync(process.argv[2], "utf8");
const which = process.env.LIB ?? "yaml";
const c0 = cpu();
let parse;
if (which === "js-yaml") { const m = await import("js-yaml"); parse = (t) => m.load(t); }
else { const __m = await import(process.env.Y ?? "yaml"); const { parseDocument, LineCounter } = __m.parseDocument ? __m : __m.default; parse = (t) => parseDocument(t, { lineCounter: new LineCounter(), uniqueKeys: true, prettyErrors: true }); }
const c1 = cpu(); parse(text); const c2 = cpu(); parse(text); const c3 = cpu();
console.log(`${which} cpu import ${(c1-c0).toFixed(0)} parse1 ${(c2-c1).toFixed(0)} parse2 ${(c3-c2).toFixed(0)}`);
