// Answers finished in one turn of the event loop go out together: the server's fetch wrapper waits for the end of the
// turn (setImmediate, one promise shared by every answer of the turn) before node-server writes the answer, so the
// answers of one turn reach the kernel back to back instead of between the next requests' work. On a loaded gateway
// that is what a write costs: a write to a client that has gone back to sleep wakes it (an inter-processor interrupt on
// another core), and one that comes while it is still awake from the last costs almost nothing (bench/PROFILE.md, "the
// pace"). (Corking the socket would not do: `ServerResponse.end()` uncorks it fully.) Latency added: the rest of the
// turn. Bodies that stream on are written as they come.

let turn: Promise<void> | undefined;

/** Resolves once this turn of the event loop has run its I/O callbacks (shared by every caller of the turn). */
export function turnEnd(): Promise<void> {
  turn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turn = undefined;
      resolve();
    }),
  );
  return turn;
}
