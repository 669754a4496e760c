// Secrets given as files (docs/secrets.md): Kubernetes and Docker mount secrets as files that change in place. Each
// `*File` field names the file holding one secret (the same as its TOLLGATE_* variable, or TOLLGATE_*_FILE in the
// environment); the Node entry reads them at start and again when they change, without a restart. Workers take secret
// bindings instead (a `*File` field there is a config error).
import * as z from "zod";

const path = z.string({ error: 'expected a file path like "/run/secrets/tollgate/upstream-api-key"' }).min(1);

export const secretFilesSchema = z
  .strictObject({
    /** The upstream API key (as TOLLGATE_UPSTREAM_API_KEY); a new one is used from the next upstream call. */
    upstreamApiKeyFile: path.optional(),
    /**
     * The token secret (as TOLLGATE_TOKEN_SECRET, or a "kid:secret,…" list as TOLLGATE_TOKEN_SECRETS); a new one signs
     * from then on, the one it replaced still verifies for tokenGraceSeconds.
     */
    tokenSecretFile: path.optional(),
    /** The alert webhooks' signing secret (as TOLLGATE_WEBHOOK_SECRET); deliveries from then on are signed with it. */
    webhookSecretFile: path.optional(),
    /** The bearer that may read /_tollgate/metrics (as TOLLGATE_METRICS_TOKEN). */
    metricsTokenFile: path.optional(),
    /** The wallet's private key (as TOLLGATE_WALLET_KEY): read at start only (a new wallet is a restart). */
    walletKeyFile: path.optional(),
    /** The PKCS#11 token's PIN (as TOLLGATE_PKCS11_PIN): read at start only. */
    pkcs11PinFile: path.optional(),
    /** How long tokens signed with a replaced token secret stay valid (default: a day, the longest a token lives). */
    tokenGraceSeconds: z
      .number({ error: "expected a number of seconds" })
      .int()
      .nonnegative()
      .max(30 * 86_400)
      .default(86_400),
    /** How often the secret files and the config file (Node: `tollgate start --config`) are checked for a change; a SIGHUP checks at once. */
    checkSeconds: z.number({ error: "expected a number of seconds" }).positive().max(3600).default(5),
  })
  .default({ tokenGraceSeconds: 86_400, checkSeconds: 5 });

export type SecretFilesConfig = z.infer<typeof secretFilesSchema>;
