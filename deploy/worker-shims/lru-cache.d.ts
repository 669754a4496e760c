// The stand-in answers as lru-cache does for the options the gateway uses: its types are lru-cache's.
export { LRUCache } from "lru-cache";
