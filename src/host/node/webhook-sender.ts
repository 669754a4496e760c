// Node's alert webhook sender: resolves the receiver's name itself, refuses it when any address it resolves to is in
// a blocked range (../../operators/alerts/destinations.ts), and connects to the address it checked (no second lookup a DNS
// rebinding could answer differently). node:http never follows redirects.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import type { DestinationPolicy } from "../../operators/alerts/destinations.js";
import { DestinationRules, destinationHost } from "../../operators/alerts/destinations.js";
import type { WebhookSender } from "../../operators/alerts/webhook-sender.js";

/** A dns lookup that fails when any address of the name is refused by `rules`. */
function checkedLookup(rules: DestinationRules): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      for (const a of addresses) {
        const problem = rules.addressProblem(a.address);
        if (problem) return callback(Object.assign(new Error(`refused: ${hostname} resolves to ${problem}`), { code: "EREFUSED" }), "", 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** @example createGateway(config, { ..., webhookSender: nodeWebhookSender(config.alerts) }) */
export function nodeWebhookSender(policy: DestinationPolicy): WebhookSender {
  const rules = new DestinationRules(policy);
  const lookup = checkedLookup(rules);
  return ({ url, headers, body, timeoutMs }) =>
    new Promise<number>((resolve, reject) => {
      const u = new URL(url);
      // An IP literal is connected to without a lookup: checked here, through the normaliser the config check uses.
      const host = destinationHost(u.hostname);
      const problem = "ip" in host ? rules.addressProblem(host.ip) : undefined;
      if (problem) return reject(new Error(`refused: ${problem}`));
      const send = u.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(u, { method: "POST", headers: Object.fromEntries(headers), lookup, timeout: timeoutMs, agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve(res.statusCode ?? 0));
      });
      req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on("error", (err) =>
        reject(
          new Error(
            (err as Error).message.startsWith("refused:")
              ? err.message
              : `unreachable (${(err as NodeJS.ErrnoException).code ?? err.message})`,
          ),
        ),
      );
      req.end(body);
    });
}
