// autocannon ships no types; the benchmarks use only its promise API.
declare module "autocannon" {
  interface Result {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number; average: number };
    throughput: { average: number };
    non2xx: number;
    errors: number;
  }
  function autocannon(opts: Record<string, unknown>): Promise<Result>;
  export default autocannon;
}
