/**
 * Test support for the docker provider: one private dockerd per test file (started in
 * `beforeAll`, stopped by its pid in `afterAll`) with the locally built test image, and the
 * reason to skip when no engine can start on this machine.
 */
import {
  EngineUnavailableError,
  engineUnavailableReason,
  ensureTestImage,
  type PrivateEngine,
  startPrivateEngine,
} from "../../conformance/docker-engine.js";

/** Why docker tests are skipped here (checked without starting anything), or `undefined`. */
export const DOCKER_SKIP: string | undefined = engineUnavailableReason();

/** A private engine and the test image imported into it. */
export interface TestEngine {
  readonly engine: PrivateEngine;
  readonly socketPath: string;
  readonly image: string;
}

/** Starts a private engine and imports the test image. The caller stops it. */
export async function startTestEngine(): Promise<TestEngine> {
  const engine = await startPrivateEngine();
  try {
    const image = await ensureTestImage(engine.socketPath);
    return { engine, socketPath: engine.socketPath, image };
  } catch (e) {
    await engine.stop();
    throw e;
  }
}

export { EngineUnavailableError };
