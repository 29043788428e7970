// Runs a provider's attach (from the built dist) with this process's terminal, as `gc attach`
// does, and reports how it ended: `GC-ATTACH-RETURNED`, or `GC-ATTACH-FAILED <message>` and
// exit code 1. Started in a real pty by the providers' attach tests (see attach.ts here).
// argv: <the provider's dist index.js> <city> <cityDir> <session> <settings JSON>
const [distIndex, city, cityDir, name, settings] = process.argv.slice(2);
const { createProvider } = await import(distIndex);
const p = createProvider({ city, cityDir, stateDir: cityDir, settings: JSON.parse(settings) });
try {
  await p.attach(name);
  process.stdout.write("\r\nGC-ATTACH-RETURNED\r\n");
} catch (e) {
  process.stdout.write(`\r\nGC-ATTACH-FAILED ${e instanceof Error ? e.message : String(e)}\r\n`);
  process.exitCode = 1;
} finally {
  await p.close();
}
