/**
 * The object store: every object of every resource, one global resourceVersion counter bumped
 * on every write, a bounded event history for watches from a given resourceVersion (older ones
 * get 410 Expired), and live subscribers. Stored objects are never mutated in place (every write
 * replaces the object), so history entries and readers can hold references safely.
 */
import type { KObject } from "./selectors.js";

/** One change, as a watch delivers it. */
export interface StoreEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly resource: string;
  readonly object: KObject;
  /** The object before this change (MODIFIED/DELETED). */
  readonly prev?: KObject | undefined;
  readonly rv: number;
}

const keyOf = (ns: string | undefined, name: string) => `${ns ?? ""}/${name}`;

/** In-memory object store with a watch history. */
export class Store {
  private rv = 1;
  private readonly objects = new Map<string, Map<string, KObject>>();
  private history: StoreEvent[] = [];
  /** Watches from a resourceVersion below this get 410 Expired. */
  private oldest = 1;
  private readonly subscribers = new Set<(e: StoreEvent) => void>();

  private readonly historyLimit: number;

  constructor(historyLimit = 5_000) {
    this.historyLimit = historyLimit;
  }

  /** The current resourceVersion (as a list reports it). */
  currentRv(): number {
    return this.rv;
  }

  /** The oldest resourceVersion a watch may start from. */
  oldestRv(): number {
    return this.oldest;
  }

  private bucket(resource: string): Map<string, KObject> {
    let b = this.objects.get(resource);
    if (!b) {
      b = new Map();
      this.objects.set(resource, b);
    }
    return b;
  }

  get(resource: string, ns: string | undefined, name: string): KObject | undefined {
    return this.objects.get(resource)?.get(keyOf(ns, name));
  }

  /** Objects of `resource`, in `ns` when given, sorted by namespace then name. */
  list(resource: string, ns?: string): KObject[] {
    const all = [...(this.objects.get(resource)?.values() ?? [])];
    return all
      .filter((o) => ns === undefined || o.metadata.namespace === ns)
      .sort((a, b) =>
        keyOf(a.metadata.namespace, a.metadata.name!).localeCompare(
          keyOf(b.metadata.namespace, b.metadata.name!),
        ),
      );
  }

  /** Writes `obj` (created or replaced), stamping a new resourceVersion. Returns the stored object. */
  put(resource: string, obj: KObject): KObject {
    const key = keyOf(obj.metadata.namespace, obj.metadata.name!);
    const prev = this.bucket(resource).get(key);
    const rv = ++this.rv;
    const stored: KObject = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
    this.bucket(resource).set(key, stored);
    this.record({ type: prev ? "MODIFIED" : "ADDED", resource, object: stored, prev, rv });
    return stored;
  }

  /** Removes an object; the DELETED event carries its last state with a new resourceVersion. */
  remove(resource: string, ns: string | undefined, name: string): KObject | undefined {
    const key = keyOf(ns, name);
    const prev = this.bucket(resource).get(key);
    if (!prev) return undefined;
    this.bucket(resource).delete(key);
    const rv = ++this.rv;
    const last: KObject = { ...prev, metadata: { ...prev.metadata, resourceVersion: String(rv) } };
    this.record({ type: "DELETED", resource, object: last, prev, rv });
    return last;
  }

  private record(e: StoreEvent): void {
    this.history.push(e);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.oldest = dropped[dropped.length - 1]!.rv;
    }
    for (const s of this.subscribers) s(e);
  }

  /** Events with resourceVersion > `rv`, or undefined when history no longer reaches back that far. */
  since(rv: number): StoreEvent[] | undefined {
    if (rv < this.oldest) return undefined;
    return this.history.filter((e) => e.rv > rv);
  }

  /** Calls `fn` for every later change; returns the unsubscribe function. */
  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** Forgets the event history: watches from any earlier resourceVersion get 410. */
  compact(): void {
    this.history = [];
    this.oldest = this.rv;
  }

  /** Drops every object (the counter keeps rising, as etcd's would after a restore). */
  clear(): void {
    this.objects.clear();
    this.compact();
  }
}
