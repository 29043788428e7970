const fs = require("node:fs");
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const Y = require("/tmp/c17/yaml-cjs.js");
const text = fs.readFileSync(process.argv[2], "utf8");
const mode = process.argv[3];
const c1 = cpu();
if (mode === "lexer") { let n = 0; for (const t of new Y.Lexer().lex(text)) n++; }
else if (mode === "cst") { let n = 0; for (const t of new Y.Parser().parse(text)) n++; }
else if (mode === "plain") Y.parseDocument(text);
else if (mode === "parse") Y.parse(text);
else Y.parseDocument(text, { lineCounter: new Y.LineCounter(), uniqueKeys: true, prettyErrors: true });
const c2 = cpu();
console.log(mode, (c2 - c1).toFixed(0));
