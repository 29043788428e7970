/**
 * Kubernetes `Status` objects and the error type every handler throws. Shapes follow
 * apimachinery `pkg/api/errors/errors.go`: `details.kind` is the resource (`pods`) except for
 * 422, where it is the Kind (`Pod`); a StatusCause's type is serialised as `reason`.
 */

/** One `StatusCause`. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** A `metav1.Status` as sent on the wire. */
export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** An API failure: the HTTP status and the Status body to send. */
export class ApiError extends Error {
  readonly status: Status;
  /** Extra response headers (e.g. `Retry-After`). */
  readonly headers: Record<string, string>;
  constructor(status: Status, headers: Record<string, string> = {}) {
    super(status.message ?? status.reason ?? "api error");
    this.status = status;
    this.headers = headers;
  }
  get code(): number {
    return this.status.code;
  }
}

function failure(code: number, reason: string, message: string, details?: Status["details"]): Status {
  const s: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
  if (details) s.details = details;
  return s;
}

/** 404 `pods "NAME" not found`. */
export function notFound(resource: string, name: string, group = ""): ApiError {
  const details: Status["details"] = { name, kind: resource };
  if (group) details.group = group;
  const what = group ? `${resource}.${group}` : resource;
  return new ApiError(failure(404, "NotFound", `${what} "${name}" not found`, details));
}

/** 409 `pods "NAME" already exists`. */
export function alreadyExists(resource: string, name: string): ApiError {
  return new ApiError(
    failure(409, "AlreadyExists", `${resource} "${name}" already exists`, { name, kind: resource }),
  );
}

/** 409 Conflict on a stale `resourceVersion`. */
export function conflict(resource: string, name: string, why?: string): ApiError {
  return new ApiError(
    failure(
      409,
      "Conflict",
      `Operation cannot be fulfilled on ${resource} "${name}": ${
        why ?? "the object has been modified; please apply your changes to the latest version and try again"
      }`,
      { name, kind: resource },
    ),
  );
}

/** 422 Invalid with one cause per field error. */
export function invalid(kind: string, name: string, causes: StatusCause[]): ApiError {
  const text = causes.map((c) => `${c.field}: ${c.message}`).join(", ");
  const list = causes.length > 1 ? `[${text}]` : text;
  return new ApiError(
    failure(422, "Invalid", `${kind} "${name}" is invalid: ${list}`, { name, kind, causes }),
  );
}

/** 403 Forbidden (admission, a terminating namespace) with the given message. */
export function forbidden(resource: string, name: string, message: string): ApiError {
  return new ApiError(failure(403, "Forbidden", message, { name, kind: resource }));
}

/** 400 BadRequest. */
export function badRequest(message: string): ApiError {
  return new ApiError(failure(400, "BadRequest", message));
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(
  message = "the server does not allow this method on the requested resource",
) {
  return new ApiError(failure(405, "MethodNotAllowed", message));
}

/** 415 UnsupportedMediaType. */
export function unsupportedMediaType(
  type: string,
  accepted = "application/json, application/yaml",
): ApiError {
  return new ApiError(
    failure(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format - accepted media types include: ${accepted}`,
      {
        causes: [{ reason: "UnsupportedMediaType", message: type }],
      },
    ),
  );
}

/** 410 Expired (a watch from a compacted resourceVersion). */
export function expired(requested: string, oldest: string): Status {
  return failure(410, "Expired", `too old resource version: ${requested} (${oldest})`);
}

/** 429 TooManyRequests with `Retry-After`. */
export function tooManyRequests(retryAfterSeconds: number): ApiError {
  return new ApiError(
    failure(429, "TooManyRequests", "Too many requests: please try again later", {
      retryAfterSeconds,
    }),
    { "Retry-After": String(retryAfterSeconds) },
  );
}

/** 500 InternalError. */
export function internalError(message: string, retryAfterSeconds?: number): ApiError {
  const details: Status["details"] = { causes: [{ message }] };
  const headers: Record<string, string> = {};
  if (retryAfterSeconds !== undefined) {
    details.retryAfterSeconds = retryAfterSeconds;
    headers["Retry-After"] = String(retryAfterSeconds);
  }
  return new ApiError(failure(500, "InternalError", `Internal error occurred: ${message}`, details), headers);
}

/** 401 Unauthorized. */
export function unauthorized(): ApiError {
  return new ApiError(failure(401, "Unauthorized", "Unauthorized"));
}

/** Turns anything thrown by a handler into an ApiError (unknown errors become 500). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return internalError(e instanceof Error ? e.message : String(e));
}
