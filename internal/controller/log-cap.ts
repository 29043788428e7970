/**
 * Keeps `.gc/controller.log` bounded. The background controller's stdout and stderr are that
 * file, inherited as one descriptor opened for appending, so it cannot be renamed and
 * reopened: once larger than the cap, its content is copied to `controller.log.1` (replacing
 * an older one) and the file is truncated in place; appends go on at its new end. A line
 * written between the copy and the truncation is lost (the copy-truncate trade-off).
 */
import { copyFile, stat, truncate } from "node:fs/promises";

/** The size at which the controller log is moved to `controller.log.1`. */
export const CONTROLLER_LOG_MAX_BYTES = 10 * 1024 * 1024;

/**
 * Moves `path`'s content to `<path>.1` and empties `path` when it exceeds `maxBytes`.
 * Resolves whether it did; never throws (a log problem must not stop the controller).
 */
export async function capLog(path: string, maxBytes = CONTROLLER_LOG_MAX_BYTES): Promise<boolean> {
  try {
    if ((await stat(path)).size <= maxBytes) return false;
    await copyFile(path, `${path}.1`);
    await truncate(path, 0);
    return true;
  } catch {
    return false;
  }
}
