/**
 * PodSecurity admission (`pod-security.kubernetes.io/enforce` on the namespace), the checks of
 * the `baseline` and `restricted` levels that a session pod can trip, worded as
 * kube-apiserver's pod-security-admission words them:
 * `pods "x" is forbidden: violates PodSecurity "restricted:latest": <check> (<detail>), …`.
 * Pure.
 */
import type { KObject } from "./selectors.js";

/** The label that selects the enforced level. */
export const ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";

type Json = Record<string, unknown>;
type Ctr = Json & { name?: string; securityContext?: Json };

const BASELINE_CAPS = new Set([
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
]);
const RESTRICTED_VOLUMES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);

/** `container "a"` / `containers "a", "b"`. */
function who(names: string[]): string {
  return `${names.length === 1 ? "container" : "containers"} ${names.map((n) => `"${n}"`).join(", ")}`;
}

/** `pod or container "a"` / `pod or containers "a", "b"`. */
function podOr(names: string[]): string {
  return `pod or ${who(names)}`;
}

/**
 * The violated checks of `level` for `pod`, each `<check> (<detail>)`; empty when admitted.
 * `privileged` (and unknown levels) admit everything.
 */
export function podSecurityViolations(pod: KObject, level: string): string[] {
  if (level !== "baseline" && level !== "restricted") return [];
  const spec = (pod.spec ?? {}) as Json;
  const psc = (spec.securityContext ?? {}) as Json;
  const ctrs = [
    ...((spec.initContainers ?? []) as Ctr[]),
    ...((spec.containers ?? []) as Ctr[]),
    ...((spec.ephemeralContainers ?? []) as Ctr[]),
  ];
  const sc = (c: Ctr) => (c.securityContext ?? {}) as Json;
  const name = (c: Ctr) => String(c.name ?? "");
  const out: string[] = [];

  const hostNs = ["hostNetwork", "hostPID", "hostIPC"].filter((k) => spec[k] === true);
  if (hostNs.length) out.push(`host namespaces (${hostNs.map((k) => `${k}=true`).join(", ")})`);
  const priv = ctrs.filter((c) => sc(c).privileged === true).map(name);
  if (priv.length) out.push(`privileged (${who(priv)} must not set securityContext.privileged=true)`);
  const volumes = (spec.volumes ?? []) as Json[];
  const hostPath = volumes.filter((v) => v.hostPath !== undefined).map((v) => `"${String(v.name)}"`);
  if (hostPath.length)
    out.push(`hostPath volumes (${hostPath.length === 1 ? "volume" : "volumes"} ${hostPath.join(", ")})`);
  const addedBad = ctrs.flatMap((c) => {
    const add = ((sc(c).capabilities as Json | undefined)?.add ?? []) as string[];
    const bad = add.filter((a) =>
      level === "restricted" ? a !== "NET_BIND_SERVICE" : !BASELINE_CAPS.has(a),
    );
    return bad.length ? [{ c: name(c), bad }] : [];
  });
  if (level === "baseline") {
    if (addedBad.length)
      out.push(
        `non-default capabilities (${addedBad.map((x) => `${who([x.c])} must not include ${x.bad.map((b) => `"${b}"`).join(", ")} in securityContext.capabilities.add`).join("; ")})`,
      );
    return out;
  }

  const restrictedVol = volumes.flatMap((v) => {
    const type = Object.keys(v).find((k) => k !== "name");
    return type && !RESTRICTED_VOLUMES.has(type) && type !== "hostPath"
      ? [`volume "${String(v.name)}" uses restricted volume type "${type}"`]
      : [];
  });
  if (restrictedVol.length) out.push(`restricted volume types (${restrictedVol.join("; ")})`);
  const escalation = ctrs.filter((c) => sc(c).allowPrivilegeEscalation !== false).map(name);
  if (escalation.length)
    out.push(
      `allowPrivilegeEscalation != false (${who(escalation)} must set securityContext.allowPrivilegeEscalation=false)`,
    );
  const noDrop = ctrs
    .filter((c) => {
      const drop = ((sc(c).capabilities as Json | undefined)?.drop ?? []) as string[];
      return !drop.includes("ALL");
    })
    .map(name);
  const capDetails = [
    ...(noDrop.length ? [`${who(noDrop)} must set securityContext.capabilities.drop=["ALL"]`] : []),
    ...addedBad.map(
      (x) =>
        `${who([x.c])} must not include ${x.bad.map((b) => `"${b}"`).join(", ")} in securityContext.capabilities.add`,
    ),
  ];
  if (capDetails.length) out.push(`unrestricted capabilities (${capDetails.join("; ")})`);
  const nonRoot = ctrs
    .filter((c) => (sc(c).runAsNonRoot ?? psc.runAsNonRoot) !== true || sc(c).runAsNonRoot === false)
    .map(name);
  if (psc.runAsNonRoot === false || nonRoot.length) {
    out.push(
      psc.runAsNonRoot === false
        ? `runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)`
        : `runAsNonRoot != true (${podOr(nonRoot)} must set securityContext.runAsNonRoot=true)`,
    );
  }
  const rootUser = [
    ...(psc.runAsUser === 0 ? ["pod must not set runAsUser=0"] : []),
    ...ctrs.filter((c) => sc(c).runAsUser === 0).map((c) => `${who([name(c)])} must not set runAsUser=0`),
  ];
  if (rootUser.length) out.push(`runAsUser=0 (${rootUser.join("; ")})`);
  const okSeccomp = (p: unknown) => {
    const t = (p as Json | undefined)?.type;
    return t === "RuntimeDefault" || t === "Localhost";
  };
  const seccomp = ctrs
    .filter((c) =>
      sc(c).seccompProfile === undefined ? !okSeccomp(psc.seccompProfile) : !okSeccomp(sc(c).seccompProfile),
    )
    .map(name);
  if (seccomp.length)
    out.push(
      `seccompProfile (${podOr(seccomp)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    );
  return out;
}

/** The 403 message kube-apiserver answers for a refused pod. */
export function podSecurityMessage(podName: string, level: string, violations: string[]): string {
  return `pods "${podName}" is forbidden: violates PodSecurity "${level}:latest": ${violations.join(", ")}`;
}
