/** Grouping a list by a key. Pure. */

/**
 * `items` grouped by `keyOf` — groups in the order their keys first appear, items in order —
 * each item stored as `valueFor(item)`; an item whose key is `undefined` is left out. Pure.
 */
export function groupBy<T, K, V = T>(
  items: Iterable<T>,
  keyOf: (item: T) => K | undefined,
  valueFor: (item: T) => V = (item) => item as unknown as V,
): Map<K, V[]> {
  const out = new Map<K, V[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    const list = out.get(key);
    if (list) list.push(valueFor(item));
    else out.set(key, [valueFor(item)]);
  }
  return out;
}
