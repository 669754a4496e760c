// `lru-cache` in the Worker: the part of LRUCache the gateway uses (~1 KiB instead of ~18 KiB minified), on a Map
// whose order is the recency (first = least recently used). Options: max, maxSize with sizeCalculation, maxEntrySize,
// ttl (per set too; 0 = none), ttlAutopurge, ttlResolution, perf. Methods: get, has, set, delete, clear; size,
// calculatedSize. test/foundation/worker-shims.test.ts drives it and lru-cache with the same operations and compares.
export class LRUCache {
  #map = new Map(); // key → { v, size, ttl, start, timer }
  #calculatedSize = 0;
  #max;
  #maxSize;
  #maxEntrySize;
  #sizeCalculation;
  #ttl;
  #ttlAutopurge;
  #now;

  constructor(options) {
    const o = options ?? {};
    this.#max = o.max ?? 0;
    this.#maxSize = o.maxSize ?? 0;
    this.#maxEntrySize = o.maxEntrySize ?? this.#maxSize;
    this.#sizeCalculation = o.sizeCalculation;
    this.#ttl = o.ttl ?? 0;
    this.#ttlAutopurge = !!o.ttlAutopurge;
    const perf = o.perf ?? globalThis.performance ?? Date;
    this.#now = () => perf.now();
    if (!this.#max && !this.#maxSize && !this.#ttl) throw new TypeError("At least one of max, maxSize, or ttl is required");
    if ((this.#maxSize || this.#maxEntrySize) && typeof this.#sizeCalculation !== "function")
      throw new TypeError("sizeCalculation set to non-function");
  }

  get size() {
    return this.#map.size;
  }

  get calculatedSize() {
    return this.#calculatedSize;
  }

  #stale(e) {
    return !!e.ttl && !!e.start && this.#now() - e.start > e.ttl;
  }

  get(key) {
    const e = this.#map.get(key);
    if (!e) return undefined;
    if (this.#stale(e)) {
      this.delete(key);
      return undefined;
    }
    this.#map.delete(key);
    this.#map.set(key, e);
    return e.v;
  }

  has(key) {
    const e = this.#map.get(key);
    return !!e && !this.#stale(e);
  }

  set(key, v, setOptions) {
    if (v === undefined) {
      this.delete(key);
      return this;
    }
    const size = this.#maxSize || this.#maxEntrySize ? this.#sizeCalculation(v, key) : 0;
    if (this.#maxEntrySize && size > this.#maxEntrySize) {
      this.delete(key);
      return this;
    }
    const old = this.#map.get(key);
    if (old) {
      this.#map.delete(key);
      this.#calculatedSize -= old.size;
      if (old.timer) clearTimeout(old.timer);
    } else if (this.#max && this.#map.size >= this.#max) this.#evict();
    if (this.#maxSize) while (this.#map.size && this.#calculatedSize + size > this.#maxSize) this.#evict();
    const ttl = setOptions?.ttl ?? this.#ttl;
    const e = { v, size, ttl, start: ttl ? this.#now() : 0, timer: undefined };
    if (ttl && this.#ttlAutopurge) {
      e.timer = setTimeout(() => {
        if (this.#map.get(key) === e && this.#stale(e)) this.delete(key);
      }, ttl + 1);
      e.timer?.unref?.();
    }
    this.#map.set(key, e);
    this.#calculatedSize += size;
    return this;
  }

  #evict() {
    const first = this.#map.keys().next();
    if (!first.done) this.delete(first.value);
  }

  delete(key) {
    const e = this.#map.get(key);
    if (!e) return false;
    if (e.timer) clearTimeout(e.timer);
    this.#map.delete(key);
    this.#calculatedSize -= e.size;
    return true;
  }

  clear() {
    for (const e of this.#map.values()) if (e.timer) clearTimeout(e.timer);
    this.#map.clear();
    this.#calculatedSize = 0;
  }
}
