/**
 * The one xxhash-wasm instance of the process (fingerprint.ts, fingerprint-files.ts). Its
 * WebAssembly module is compiled asynchronously, started when this module is first imported;
 * the bundled CLI is CommonJS, where a module cannot `await` at top level, so readiness is
 * a promise ({@link xxhReady}) and the hasher a synchronous accessor ({@link xxh}) that
 * throws until then.
 */
import xxhash from "xxhash-wasm";

/** The hasher's API (h64ToString, h64Raw, create64, …). */
export type Xxh = Awaited<ReturnType<typeof xxhash>>;

let instance: Xxh | undefined;

/** Resolves once {@link xxh} may be called; rejects only if the WebAssembly module fails to load. */
export const xxhReady: Promise<void> = xxhash().then((h) => {
  instance = h;
});

/**
 * The hasher. Throws when called before {@link xxhReady} resolved: a caller hashing
 * synchronously must have awaited it first (or awaited something that does).
 */
export function xxh(): Xxh {
  if (instance === undefined) throw new Error("xxhash-wasm is not ready yet: await xxhReady before hashing");
  return instance;
}
