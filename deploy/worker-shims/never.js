// What a stand-in does if the code it replaces is called in the Worker after all: it counts the call where the Workers
// tests look (an array on globalThis under Symbol.for("tollgate.standInCalls"), read by test/workers/stand-ins.ts), then
// refuses it by name. A count stays visible even when a library catches the error.
export function never(what, message) {
  const key = Symbol.for("tollgate.standInCalls");
  globalThis[key] ??= [];
  globalThis[key].push(what);
  throw new Error(message);
}
