/**
 * `gc conformance PROVIDER [--only PATTERN] [--json] [--concurrency N]`: runs the provider
 * conformance suite against a named provider and prints one line per case plus a summary
 * line `N passed, N failed, N skipped`. Exit 1 on any failure, 2 for an unknown provider.
 */
import { runConformance } from "../../../conformance/harness.js";
import { PROVIDER_CASES } from "../../../conformance/provider-cases.js";
import { createTarget, KNOWN_PROVIDERS } from "../../../conformance/targets.js";
import { UsageError } from "../../../internal/base/errors.js";
import { defineCommand, EXIT } from "../context.js";

const USAGE = `Usage: gc conformance PROVIDER [--only PATTERN] [--json] [--concurrency N]

Runs the provider conformance suite (${PROVIDER_CASES.length} cases) against PROVIDER:
${KNOWN_PROVIDERS.join(", ")}. --only keeps cases whose id or title contains PATTERN.`;

/** Which exec-protocol operations the script implements (exit 2 = unknown operation). */
async function probeScript(script: string, signal: AbortSignal) {
  const { formatProbe, probeExecScript } = await import("../../../internal/runtime/exec/index.js");
  const result = await probeExecScript(script, { signal });
  return { script, result, text: formatProbe(result) };
}

export const command = defineCommand({
  usage: USAGE,
  options: { only: { type: "string" }, concurrency: { type: "string" } },
  async run(ctx, { values, positionals }) {
    const json = ctx.json;
    const spec = positionals[0];
    if (!spec || positionals.length > 1) throw new UsageError(`expected one PROVIDER\n\n${USAGE}`);
    const concurrency = values.concurrency === undefined ? 2 : Number(values.concurrency);
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new UsageError("--concurrency must be a positive integer");
    const target = await createTarget(spec);
    try {
      if (!json) ctx.out(`conformance: ${target.label} (${PROVIDER_CASES.length} cases)`);
      const probe = spec.startsWith("exec:") ? await probeScript(spec.slice(5), ctx.signal) : undefined;
      if (probe && !json) ctx.out(`protocol probe of ${probe.script}:\n${probe.text}`);
      const report = await runConformance(target, PROVIDER_CASES, {
        only: values.only,
        concurrency,
        signal: ctx.signal,
        onResult: json
          ? undefined
          : (r) => {
              const mark = r.status === "passed" ? "ok  " : r.status === "failed" ? "FAIL" : "skip";
              const why = r.error ? ` — ${r.error.split("\n")[0]}` : "";
              ctx.out(`${mark} ${r.id.padEnd(32)} ${r.name} (${r.durationMs} ms)${why}`);
            },
      });
      if (json) {
        ctx.out(JSON.stringify(probe ? { ...report, probe: probe.result } : report, null, 2));
      } else {
        ctx.out(`${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`);
      }
      return report.failed > 0 ? EXIT.failed : EXIT.ok;
    } finally {
      await target.provider.close();
      await target.cleanup?.();
    }
  },
});
