import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadCity } from "../../../internal/config/index.js";
import {
  envFile,
  memoryProblem,
  parseSize,
  resolveSettings,
  shQuote,
} from "../../../internal/runtime/docker/index.js";

const HOSTILE = [
  "plain",
  "",
  `it's "quoted" and \`backticked\``,
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the point
  "a; b && c | d > e $(touch pwned) `touch pwned2` $HOME ${PATH}",
  "line one\nline two\n\n",
  "#{session_name} #(touch pwned3) %1 \\ \\n",
  "héllo 日本語 🦀 e\u0301",
  "'",
  "''''",
];

describe("docker settings", () => {
  it("resolveSettings: defaults (network none, mount work dir, DOCKER_HOST, no limits)", () => {
    const s = resolveSettings({}, { DOCKER_HOST: "unix:///run/x.sock" }, "/city");
    expect(s).toMatchObject({
      socketPath: "/run/x.sock",
      image: undefined,
      network: "none",
      memoryBytes: undefined,
      cpus: undefined,
      pidsLimit: undefined,
      user: undefined,
      mounts: [],
      workDir: "mount",
    });
    expect(resolveSettings({}, {}).socketPath).toBe("/var/run/docker.sock");
  });

  it("resolveSettings: every key of session.docker maps to its setting", () => {
    const s = resolveSettings(
      {
        host: "/tmp/d.sock",
        image: "img:1",
        network: "bridge",
        memory: "512m",
        cpus: 1.5,
        pids_limit: 64,
        user: "1000:1000",
        mounts: [
          { source: "data", target: "/data", read_only: true },
          { source: "/abs", target: "/abs", read_only: false },
        ],
        work_dir: "copy",
      },
      { DOCKER_HOST: "unix:///ignored.sock" },
      "/city",
    );
    expect(s).toMatchObject({
      socketPath: "/tmp/d.sock",
      image: "img:1",
      network: "bridge",
      memoryBytes: 512 * 1024 * 1024,
      cpus: 1.5,
      pidsLimit: 64,
      user: "1000:1000",
      workDir: "copy",
      mounts: [
        { source: "/city/data", target: "/data", readOnly: true },
        { source: "/abs", target: "/abs", readOnly: false },
      ],
    });
  });

  it("resolveSettings: a host that is not a unix socket is rejected", () => {
    expect(() => resolveSettings({ host: "tcp://1.2.3.4:2375" }, {})).toThrow(/only unix sockets/);
  });

  it("parseSize/memoryProblem: sizes with units; too small or malformed is an error", () => {
    expect(parseSize("1g")).toBe(1024 ** 3);
    expect(parseSize("1.5GiB")).toBe(1.5 * 1024 ** 3);
    expect(parseSize("1048576")).toBe(1048576);
    expect(parseSize("12 parsecs")).toBeUndefined();
    expect(memoryProblem("1k")).toMatch(/at least 6m/);
    expect(memoryProblem("lots")).toMatch(/size such as/);
    expect(memoryProblem("64m")).toBeUndefined();
  });

  it("config: session.docker keys are validated with file positions", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gc-docker-cfg-"));
    try {
      writeFileSync(
        join(dir, "city.yaml"),
        [
          "session:",
          "  provider: docker",
          "  docker:",
          "    image: x",
          "    memory: 1k",
          "    cpus: many",
          "    pids_limit: 0",
          "    mounts: [{ source: a, target: relative }]",
          "    work_dir: rsync",
          "",
        ].join("\n"),
      );
      const err = await loadCity({ cityDir: dir, env: {}, cwd: dir }).then(
        () => undefined,
        (e: unknown) => String(e),
      );
      expect(err).toMatch(/session\.docker\.memory.*at least 6m/);
      expect(err).toMatch(/session\.docker\.cpus.*expected a number/);
      expect(err).toMatch(/session\.docker\.pids_limit.*at least 1/);
      expect(err).toMatch(/session\.docker\.mounts\[0\]\.target.*absolute/);
      expect(err).toMatch(/session\.docker\.work_dir/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docker env file quoting", () => {
  it("shQuote: a real sh reads back every hostile value byte for byte", () => {
    for (const v of HOSTILE) {
      const out = execFileSync("/bin/sh", ["-c", `printf '%s' ${shQuote(v)}`], { encoding: "utf8" });
      expect(out).toBe(v);
    }
  });

  it("envFile: sourcing it exports every value exactly; bad names and NUL are refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "gc-envfile-"));
    try {
      const env: Record<string, string> = {};
      HOSTILE.forEach((v, i) => {
        env[`K_${i}`] = v;
      });
      const file = join(dir, "env.sh");
      writeFileSync(file, envFile(env));
      for (const [k, v] of Object.entries(env)) {
        const out = execFileSync("/bin/sh", ["-c", `. "$1"; sh -c 'printf "%s" "$${k}"'`, "sh", file], {
          encoding: "utf8",
          cwd: dir,
        });
        expect(out).toBe(v);
      }
      expect(() => envFile({ "a.b": "x" })).toThrow(/not valid/);
      expect(() => envFile({ A: "x\0y" })).toThrow(/NUL/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
