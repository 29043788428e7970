/**
 * The `session.docker` section of the city file, declared by the docker provider itself and
 * placed in the city schema by the provider registry (registry.ts). Pure, and light: loading
 * the config never loads dockerode.
 */
import { pathField } from "../../base/fields.js";
import { s } from "../../base/schema-builder.js";
import { memoryProblem } from "./settings.js";

/** `session.docker`. */
export const DOCKER_SETTINGS_SCHEMA = s.object({
  host: s
    .string({ nonEmpty: true })
    .optional()
    .describe(
      "Docker engine unix socket (/path or unix:///path); default $DOCKER_HOST, else /var/run/docker.sock.",
    ),
  image: s
    .string({ nonEmpty: true })
    .optional()
    .describe("Container image (required when docker is used); it needs /bin/sh and tmux."),
  network: s.string({ nonEmpty: true }).default("none").describe("Container network mode."),
  memory: s
    .string({ check: (v) => memoryProblem(v) })
    .optional()
    .describe("Memory limit per session container, e.g. 512m or 2g; default unlimited."),
  cpus: s.number({ min: 0.01 }).optional().describe("CPU limit per session container (e.g. 1.5)."),
  pids_limit: s.int({ min: 1 }).optional().describe("Process limit per session container."),
  user: s
    .string({ nonEmpty: true })
    .optional()
    .describe("user[:group] the program and every exec run as; default: the image's user."),
  mounts: s
    .array(
      s.object({
        source: pathField().describe("Host path (relative to the city directory)."),
        target: s
          .string({ check: (v) => (v.startsWith("/") ? undefined : "must be an absolute path") })
          .describe("Absolute path inside the container."),
        read_only: s.bool().default(false),
      }),
    )
    .default([])
    .describe("Extra bind mounts into every session container."),
  work_dir: s
    .enum(["mount", "copy"] as const)
    .default("mount")
    .describe("mount: bind the host work dir at the same path; copy: upload it into the container at start."),
});
