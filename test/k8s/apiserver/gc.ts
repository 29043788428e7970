/**
 * The garbage collector of kube-controller-manager, for namespaced objects: when an owner is
 * gone, every dependent whose `metadata.ownerReferences` names it (by uid) and no other live
 * owner is deleted (background propagation; pods gracefully). A dependent created with an
 * owner that does not exist is deleted too, as the real collector does once it finds the owner
 * absent. `propagationPolicy: Orphan` instead strips the reference ({@link orphanDependents}).
 */
import { RESOURCES } from "./resources.js";
import type { KObject } from "./selectors.js";
import type { Store, StoreEvent } from "./store.js";

interface OwnerRef {
  readonly uid?: string;
  readonly kind?: string;
  readonly name?: string;
}

const refsOf = (o: KObject): OwnerRef[] => (o.metadata.ownerReferences ?? []) as OwnerRef[];

/** Every namespaced object of `ns`, with its resource. */
function objectsIn(store: Store, ns: string): { resource: string; obj: KObject }[] {
  return RESOURCES.filter((d) => d.namespaced).flatMap((d) =>
    store.list(d.resource, ns).map((obj) => ({ resource: d.resource, obj })),
  );
}

/** Deletes one object through the REST layer (grace, preconditions and events as a client's delete). */
export type DeleteObject = (resource: string, ns: string, name: string, uid: string) => void;

/** Watches the store and deletes dependents of deleted owners. Stop with {@link GarbageCollector.stop}. */
export class GarbageCollector {
  private readonly store: Store;
  private readonly del: DeleteObject;
  private readonly unsubscribe: () => void;

  constructor(store: Store, del: DeleteObject) {
    this.store = store;
    this.del = del;
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  stop(): void {
    this.unsubscribe();
  }

  private onEvent(e: StoreEvent): void {
    const ns = e.object.metadata.namespace;
    if (ns === undefined) return;
    if (e.type === "DELETED") setImmediate(() => this.collect(ns));
    else if (e.type === "ADDED" && refsOf(e.object).length > 0) setImmediate(() => this.collect(ns));
  }

  /** Deletes every object of `ns` whose owners (by uid) are all gone. */
  private collect(ns: string): void {
    const all = objectsIn(this.store, ns);
    const live = new Set(all.map((x) => x.obj.metadata.uid));
    for (const { resource, obj } of all) {
      const refs = refsOf(obj);
      if (refs.length === 0 || refs.some((r) => r.uid !== undefined && live.has(r.uid))) continue;
      if (obj.metadata.deletionTimestamp) continue;
      try {
        this.del(resource, ns, obj.metadata.name!, obj.metadata.uid!);
      } catch {
        // already gone or changed: the next event collects again
      }
    }
  }
}

/** Removes references to `ownerUid` from the dependents in `ns` (delete with `propagationPolicy: Orphan`). */
export function orphanDependents(store: Store, ns: string, ownerUid: string): void {
  for (const { resource, obj } of objectsIn(store, ns)) {
    const refs = refsOf(obj);
    if (!refs.some((r) => r.uid === ownerUid)) continue;
    const rest = refs.filter((r) => r.uid !== ownerUid);
    const metadata = { ...obj.metadata };
    if (rest.length) metadata.ownerReferences = rest;
    else delete metadata.ownerReferences;
    store.put(resource, { ...obj, metadata });
  }
}
