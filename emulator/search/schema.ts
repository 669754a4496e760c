// Request bodies of web search and fetch (the SDK's WebSearchParams / FetchParams), checked before any work or payment.
import * as z from "zod";

const FILETYPES = ["pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "html"] as const;

const location = z.object({
  // The x402 OpenAPI marks country required once a location is given.
  country: z.string().regex(/^([A-Za-z]{2}|RANDOM_COUNTRY)$/, "expected a 2-letter country code"),
  state: z.string().max(64).optional(),
  city: z.string().max(128).optional(),
});

const hostLike = z
  .string()
  .trim()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9.-]+(\/\S*)?$/, "expected a host name such as example.com");

export const webSearchParams = z.object({
  query: z.string().trim().min(1, "query must not be empty").max(2000),
  page: z.int().min(1).max(100).optional(),
  maxAgeSeconds: z.number().min(0).optional(),
  location: location.optional(),
  filters: z
    .object({
      exactPhrase: z.boolean().optional(),
      semanticPhrase: z.boolean().optional(),
      excludeTerms: z.array(z.string().trim().min(1).max(100)).max(50).optional(),
      boostTerms: z.array(z.string().trim().min(1).max(100)).max(50).optional(),
      filetype: z.enum(FILETYPES).optional(),
      site: hostLike.optional(),
      excludeSite: hostLike.optional(),
      intitle: z.string().trim().min(1).max(200).optional(),
      inurl: z.string().trim().min(1).max(200).optional(),
    })
    .optional(),
});
export type WebSearchParams = z.infer<typeof webSearchParams>;

const outputFormat = z.union([
  z.enum(["markdown", "html", "links", "screenshot", "branding"]),
  z.object({ type: z.enum(["markdown", "html", "links", "screenshot", "branding"]) }).passthrough(),
  z.object({ type: z.literal("json"), prompt: z.string().optional(), schema: z.any().optional() }).passthrough(),
]);

export const fetchParams = z.object({
  url: z
    .string()
    .trim()
    .url("url must be an absolute http(s) URL")
    .refine((u) => /^https?:\/\//i.test(u), "url must be http or https"),
  stealth: z.enum(["none", "auto", "ultra"]).optional(),
  outputs: z
    .object({
      formats: z.array(outputFormat).max(10).optional(),
      sanitize: z.enum(["none", "basic", "advanced"]).optional(),
      includeSelectors: z.array(z.string()).optional(),
      excludeSelectors: z.array(z.string()).optional(),
      storageState: z.record(z.string(), z.unknown()).optional(),
    })
    .passthrough()
    .optional(),
  browser: z
    .object({
      screen: z.object({ width: z.int().positive(), height: z.int().positive() }).optional(),
      profileId: z.string().optional(),
      solveCaptchas: z.boolean().optional(),
      location: location.partial().optional(),
    })
    .passthrough()
    .optional(),
  navigation: z
    .object({
      waitUntil: z.enum(["load", "domcontentloaded", "networkidle"]).optional(),
      timeoutMs: z.number().positive().optional(),
      waitFor: z.number().min(0).optional(),
    })
    .passthrough()
    .optional(),
  cache: z
    .object({ maxAgeSeconds: z.number().min(0).optional() })
    .passthrough()
    .optional(),
});
export type FetchParams = z.infer<typeof fetchParams>;

/** Names the first bad field the way a client can act on: `filters.filetype: Invalid option ...`. */
export function describeIssues(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request body";
  const path = issue.path.map(String).join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}
