// The gateway's own hand on a session's CDP stream (docs/cdp-guard.md). On the client's connection the gateway opens a
// browser-level session of its own (Target.attachToBrowserTarget), whose messages the client never sees, and through it
//  - enforces the navigation floor: every target whose committed URL the caller's `domains` policy refuses (page script,
//    a redirect, window.open) is closed, and the event reported;
//  - answers `Tollgate.fillSecret` {name, selector}: types a tenant secret into a field of the page, only when the
//    page's origin is one of the secret's hosts, and from then on keeps the value out of everything the client receives.
// Web standards only: the same guard runs on the Node relay and on the Workers bridge (src/web/websocket.ts).
import type { RelayIo, RelayTap } from "../web/websocket.js";
import { navigationRefusal } from "../agent-policy/engine.js";
import { MIN_FORM, SecretRedaction } from "./secret-redaction.js";
import {
  COMMAND_TIMEOUT_MS,
  CdpCommandError,
  type CdpGuardOptions,
  type CdpMessage,
  FillRefused,
  MAX_HELD,
  OWN_ID_BASE,
  originOf,
  REFUSED_AFTER_FILL,
  secretHostMatches,
  type TargetInfo,
} from "./cdp-guard-rules.js";

export class CdpGuard implements RelayTap {
  private nextId = OWN_ID_BASE;
  private readonly pending = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  /** The gateway's own sessions (its browser session, and page sessions it attached for a fill). */
  private readonly own = new Set<string>();
  private browserSession?: string;
  private attachingBrowser = false;
  private ready = false;
  private held: string[] = [];
  private ended = false;
  /** The client's flattened sessions → their target. */
  private readonly clientTargets = new Map<string, string>();
  /** Targets being closed by the floor. */
  private readonly closing = new Set<string>();
  /** Targets holding a filled field (until their main frame navigates) → the gateway's page session on each. */
  private readonly filled = new Map<string, string>();
  private readonly redaction = new SecretRedaction();

  constructor(
    private readonly io: RelayIo,
    private readonly opts: CdpGuardOptions,
  ) {
    this.start().then(
      () => this.release(),
      (err: Error) => this.fail(`the gateway could not watch this browser (${err.message})`),
    );
  }

  private async start(): Promise<void> {
    this.attachingBrowser = true;
    const attached = await this.send("Target.attachToBrowserTarget", {});
    const sessionId = attached.sessionId;
    if (typeof sessionId !== "string") throw new CdpCommandError("no browser session");
    this.browserSession = sessionId;
    this.own.add(sessionId);
    this.attachingBrowser = false;
    // The floor: every target's info, now and on each change. Targets present now are reported at once.
    if (this.opts.layers.length) await this.send("Target.setDiscoverTargets", { discover: true }, sessionId);
    for (const v of (await this.opts.secretValues?.()) ?? []) if (v.length >= MIN_FORM) this.redaction.add(v);
  }

  private release(): void {
    this.ready = true;
    const held = this.held;
    this.held = [];
    for (const m of held) this.fromClient(m);
  }

  private fail(reason: string): void {
    if (this.ended) return;
    this.opts.events.failed({ reason });
    this.io.close(1011, "navigation floor unavailable");
  }

  /** Sends a command of the gateway's own; its answer never reaches the client. */
  private send(method: string, params: Record<string, unknown>, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CdpCommandError(`${method} timed out`));
      }, COMMAND_TIMEOUT_MS);
      this.pending.set(id, {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.io.toUpstream(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  private reply(msg: CdpMessage, body: { result: unknown } | { error: { code: number; message: string } }): void {
    this.io.toClient(
      JSON.stringify({
        ...(typeof msg.id === "number" ? { id: msg.id } : {}),
        ...body,
        ...(typeof msg.sessionId === "string" ? { sessionId: msg.sessionId } : {}),
      }),
    );
  }

  private mentionsOwn(text: string): boolean {
    for (const s of this.own) if (text.includes(s)) return true;
    return false;
  }

  fromClient(text: string): void {
    if (this.ended) return;
    if (!this.ready) {
      if (this.held.length >= MAX_HELD) this.fail("too many messages before the guard started");
      else this.held.push(text);
      return;
    }
    let msg: CdpMessage;
    try {
      msg = JSON.parse(text) as CdpMessage;
    } catch {
      // Not JSON: the browser answers it with its own parse error, unless it names one of the gateway's sessions.
      if (!this.mentionsOwn(text)) this.io.toUpstream(text);
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (typeof msg.id === "number" && msg.id >= OWN_ID_BASE) {
      this.reply(msg, { error: { code: -32600, message: `Command ids from ${OWN_ID_BASE} up are reserved by the gateway.` } });
      return;
    }
    if (this.mentionsOwn(text)) {
      this.reply(msg, { error: { code: -32602, message: "No session with given id" } });
      return;
    }
    const method = typeof msg.method === "string" ? msg.method : "";
    if (method.startsWith("Tollgate.")) {
      void this.tollgateCommand(method, msg);
      return;
    }
    if (this.filled.size && REFUSED_AFTER_FILL.has(method)) {
      // On a page's session: refused while that page holds a filled field (a session the guard cannot place: refused).
      // On the browser session only Tracing (which can record screenshots and strings) reads pages.
      const sid = typeof msg.sessionId === "string" ? msg.sessionId : undefined;
      const targetId = sid === undefined ? undefined : this.clientTargets.get(sid);
      const refuse = sid === undefined ? method === "Tracing.start" : targetId === undefined || this.filled.has(targetId);
      if (refuse) {
        this.opts.events.readRefused?.({ method, targetId: targetId ?? "" });
        this.reply(msg, {
          error: {
            code: -32000,
            message: `${method} is refused on this page after Tollgate.fillSecret, until the page navigates (docs/cdp-guard.md).`,
          },
        });
        return;
      }
    }
    this.io.toUpstream(text);
  }

  fromUpstream(text: string): void {
    if (this.ended) return;
    if (this.mayConcernGuard(text)) {
      let msg: CdpMessage | undefined;
      try {
        msg = JSON.parse(text) as CdpMessage;
      } catch {
        msg = undefined;
      }
      if (msg && this.consume(msg)) return;
    }
    this.io.toClient(this.redaction.active ? this.redaction.apply(text) : text);
  }

  /** Cheap pre-check before parsing: most upstream traffic (screencast frames, network events) is not the guard's. */
  private mayConcernGuard(text: string): boolean {
    if (this.pending.size && text.includes(`"id":${String(OWN_ID_BASE).slice(0, 2)}`)) return true;
    if (text.includes("Target.attachedToTarget") || text.includes("Target.detachedFromTarget")) return true;
    return this.mentionsOwn(text);
  }

  /** Handles a message meant for the gateway; true when the client must not see it. */
  private consume(msg: CdpMessage): boolean {
    if (typeof msg.id === "number" && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id)!;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new CdpCommandError(msg.error.message ?? "CDP error"));
      else p.resolve(msg.result ?? {});
      return true;
    }
    if (typeof msg.sessionId === "string" && this.own.has(msg.sessionId)) {
      this.ownEvent(msg);
      return true;
    }
    const params = msg.params ?? {};
    const sid = typeof params.sessionId === "string" ? params.sessionId : undefined;
    if (msg.method === "Target.attachedToTarget" && sid) {
      const info = params.targetInfo as TargetInfo | undefined;
      if (this.own.has(sid)) return true;
      // The gateway's own browser session announces itself on the root session before the answer names it.
      if (this.attachingBrowser && info?.type === "browser" && msg.sessionId === undefined) {
        this.own.add(sid);
        return true;
      }
      if (info?.targetId) this.clientTargets.set(sid, info.targetId);
      return false;
    }
    if (msg.method === "Target.detachedFromTarget" && sid) {
      if (this.own.has(sid)) return true;
      this.clientTargets.delete(sid);
    }
    return false;
  }

  /** Events on the gateway's own sessions. */
  private ownEvent(msg: CdpMessage): void {
    const params = msg.params ?? {};
    switch (msg.method) {
      case "Target.targetCreated":
      case "Target.targetInfoChanged":
        this.checkTarget(params.targetInfo as TargetInfo | undefined);
        return;
      case "Target.targetDestroyed": {
        const targetId = params.targetId as string;
        this.closing.delete(targetId);
        this.filled.delete(targetId);
        return;
      }
      case "Target.detachedFromTarget": {
        const sid = params.sessionId as string;
        this.own.delete(sid);
        for (const [t, s] of this.filled) if (s === sid) this.filled.delete(t);
        return;
      }
      case "Page.frameNavigated": {
        // A new document in a filled page's main frame: the field is gone, reads are allowed again.
        const frame = params.frame as { parentId?: string } | undefined;
        if (frame && !frame.parentId) for (const [t, s] of this.filled) if (s === msg.sessionId) this.filled.delete(t);
        return;
      }
    }
  }

  private checkTarget(info: TargetInfo | undefined): void {
    if (!info?.targetId || !info.url || this.closing.has(info.targetId)) return;
    const refusal = navigationRefusal(this.opts.layers, info.url);
    if (!refusal) return;
    this.closing.add(info.targetId);
    this.opts.events.navigationClosed({ targetId: info.targetId, type: info.type, origin: originOf(info.url), refusal });
    this.send("Target.closeTarget", { targetId: info.targetId }, this.browserSession).catch(() => {
      // A target the browser will not close (an out-of-process frame): the page holding it goes instead, when the frame
      // sits in the page's main frame (a page's target id is its main frame's id).
      const parent = info.parentFrameId;
      if (parent && parent !== info.targetId)
        this.send("Target.closeTarget", { targetId: parent }, this.browserSession).catch(() => this.closing.delete(info.targetId));
      else this.closing.delete(info.targetId);
    });
  }

  // ── Tollgate.* commands ──

  private async tollgateCommand(method: string, msg: CdpMessage): Promise<void> {
    try {
      if (method !== "Tollgate.fillSecret") throw new FillRefused(`'${method}' wasn't found`);
      const result = await this.fillSecret(msg);
      this.reply(msg, { result });
    } catch (err) {
      const message = err instanceof FillRefused ? err.message : "Tollgate.fillSecret failed: the page did not answer.";
      this.reply(msg, { error: { code: err instanceof FillRefused ? -32000 : -32603, message } });
    }
  }

  private async fillSecret(msg: CdpMessage): Promise<Record<string, unknown>> {
    const params = msg.params ?? {};
    const name = params.name;
    const selector = params.selector;
    if (typeof name !== "string" || !name || typeof selector !== "string" || !selector)
      throw new FillRefused("Tollgate.fillSecret takes {name, selector} (strings).");
    const targetId =
      typeof msg.sessionId === "string"
        ? this.clientTargets.get(msg.sessionId)
        : typeof params.targetId === "string"
          ? params.targetId
          : undefined;
    if (!targetId) throw new FillRefused("Send Tollgate.fillSecret on the page's session (flattened), or name its targetId.");
    if (!this.opts.secrets) throw new FillRefused("Tenant secrets are not available on this gateway.");
    const secret = await this.opts.secrets(name);
    if (!secret) throw new FillRefused(`No tenant secret named "${name}".`);
    if (secret.value.length < MIN_FORM)
      throw new FillRefused(`Secret "${name}" is shorter than ${MIN_FORM} characters: too short to keep out of CDP messages.`);

    // The gateway's own session on the page: the client's DOM and Runtime state are left as they were.
    const attached = await this.send("Target.attachToTarget", { targetId, flatten: true }, this.browserSession);
    const page = attached.sessionId as string;
    this.own.add(page);
    let keep = false;
    try {
      const tree = await this.send("Page.getFrameTree", {}, page);
      const url = ((tree.frameTree as { frame?: { url?: string } } | undefined)?.frame?.url ?? "") as string;
      if (!secretHostMatches(secret.hosts, url))
        throw new FillRefused(`The page's origin (${originOf(url)}) is not one of the hosts of secret "${name}"; nothing was typed.`);
      const doc = await this.send("DOM.getDocument", { depth: 0 }, page);
      const root = (doc.root as { nodeId: number }).nodeId;
      const found = await this.send("DOM.querySelector", { nodeId: root, selector }, page).catch(() => ({ nodeId: 0 }));
      if (!found.nodeId) throw new FillRefused(`No element matches ${JSON.stringify(selector)} in the page's main frame.`);
      const resolved = await this.send("DOM.resolveNode", { nodeId: found.nodeId }, page);
      const objectId = (resolved.object as { objectId?: string } | undefined)?.objectId;
      // Focus the field and clear it; mask what it shows (screenshots, screencasts and the live view draw discs).
      const prepared = await this.send(
        "Runtime.callFunctionOn",
        {
          objectId,
          functionDeclaration: `function () {
            const field = this instanceof HTMLInputElement || this instanceof HTMLTextAreaElement;
            if (!field && !this.isContentEditable) return false;
            this.focus();
            if (field) this.value = ""; else this.textContent = "";
            this.style.setProperty("-webkit-text-security", "disc", "important");
            return document.activeElement === this;
          }`,
          returnByValue: true,
        },
        page,
      );
      if ((prepared.result as { value?: unknown } | undefined)?.value !== true)
        throw new FillRefused(`${JSON.stringify(selector)} is not a text field that can take focus.`);
      // From here the value may reach the page: keep it out of everything the client receives.
      this.redaction.add(secret.value);
      await this.send("Input.insertText", { text: secret.value }, page);
      await this.send("Runtime.releaseObject", { objectId }, page).catch(() => {});
      // Watch the page for its next document (then the field is gone and reads are allowed again).
      await this.send("Page.enable", {}, page);
      this.filled.set(targetId, page);
      keep = true;
      const origin = originOf(url);
      this.opts.events.secretFilled({ name, origin, targetId });
      return { filled: true, name, origin };
    } finally {
      if (!keep) {
        this.own.delete(page);
        this.send("Target.detachFromTarget", { sessionId: page }, this.browserSession).catch(() => {});
      }
    }
  }

  closed(): void {
    this.ended = true;
    for (const p of this.pending.values()) p.reject(new CdpCommandError("connection closed"));
    this.pending.clear();
    this.held = [];
  }
}

/** The relay tap for a CDP connection (src/web/websocket.ts `tap`). */
export function cdpGuard(opts: CdpGuardOptions): (io: RelayIo) => RelayTap {
  return (io) => new CdpGuard(io, opts);
}
