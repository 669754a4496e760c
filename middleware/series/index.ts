// Several steps of the chain run as one step of Hono's. Each step of its own costs Hono's `compose` an async frame, a
// promise and its ticks: on a relayed runtime call, a dozen of them were ~4 µs of self time (bench/PROFILE.md). Steps
// that do nothing after `next()` lose nothing by sharing one: an error thrown below them passes through them either
// way, and the app's error handler answers it at the shared step, as compose would have at the step that threw.
import type { Env, MiddlewareHandler, Next } from "hono";

/**
 * Runs `steps` in order as one middleware. Every step but the last must do nothing after `next()` (return it, or not
 * call it): a step that does (a quota claiming what was created, a meter settling) would see an error of a later step of
 * the series thrown at it, where, a step of its own, it saw that error's answer. The last step may.
 * @example app.use(series([validHost(), publicHostsOnly(services), portHosts(ports, trusted)]))
 */
export function series<E extends Env>(steps: MiddlewareHandler<E>[]): MiddlewareHandler<E> {
  if (steps.length === 1) return steps[0]!;
  const last = steps.length;
  return function seriesOfSteps(c, next) {
    let i = 0;
    const step: Next = () => {
      if (i === last) return next();
      const ran = steps[i++]!(c, step);
      // A step that answers without a promise still hands the one before it a promise (it may call `.then`).
      return (ran instanceof Promise ? ran : Promise.resolve(ran)) as Promise<void>;
    };
    return step();
  };
}
