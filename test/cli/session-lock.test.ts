/**
 * The control lock of operator commands: another operator's lock is refused at once (naming
 * the holder); the controller's momentary bookkeeping lock is waited out, never refused.
 */
import { describe, expect, it } from "vitest";
import { lockSession, type Target } from "../../internal/operate/target.js";
import { BOOKKEEPING_PURPOSE } from "../../internal/session/lock.js";
import { openMemoryStore } from "../../internal/session/memory-store.js";

function target(): Target {
  // lockSession reads only the name and the store.
  return { name: "alpha", store: openMemoryStore({ singleTenant: true }) } as unknown as Target;
}

describe("lockSession", () => {
  it("refuses at once while another operator holds the session, naming the holder", async () => {
    const t = target();
    const held = await t.store.tryLock("alpha", { purpose: "gc run" });
    await expect(lockSession(t, "gc nudge")).rejects.toMatchObject({
      code: "GC_LOCKED",
      message: expect.stringContaining("(gc run)"),
    });
    await held.release();
    const mine = await lockSession(t, "gc nudge");
    expect(mine.holder.purpose).toBe("gc nudge");
    await mine.release();
  });

  it("waits for the controller's bookkeeping lock to be released, then takes it", async () => {
    const t = target();
    const held = await t.store.tryLock("alpha", { purpose: BOOKKEEPING_PURPOSE });
    let tries = 0;
    const tryLock = t.store.tryLock.bind(t.store);
    t.store.tryLock = (name, opts) => {
      tries++;
      return tryLock(name, opts);
    };
    let released = false;
    const waiting = lockSession(t, "gc run").then((l) => {
      expect(released).toBe(true);
      return l;
    });
    // Still waiting (asking again, not refused) while the bookkeeping holds it.
    await expect.poll(() => tries).toBeGreaterThan(3);
    expect((await t.store.lockHolder("alpha"))?.purpose).toBe(BOOKKEEPING_PURPOSE);
    released = true;
    await held.release();
    const lock = await waiting;
    expect(lock.holder.purpose).toBe("gc run");
    await lock.release();
  });
});
