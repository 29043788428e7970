/**
 * Yielding to the event loop inside a long piece of synchronous work, so I/O that arrived
 * meanwhile (a reply to answer, a handshake to go on with) is handled before the work goes on.
 */

/** Resolves on a later turn of the event loop, after the I/O callbacks pending now. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
