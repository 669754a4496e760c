// The local web's TLS certificate: self-signed, made once per process with the host's openssl, trusted by the
// emulator's browsers through its key's hash alone (no CA is installed anywhere).
import { execFile } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface LocalWebCert {
  key: string;
  cert: string;
  /** base64 SHA-256 of the certificate's SubjectPublicKeyInfo, for --ignore-certificate-errors-spki-list. */
  spki: string;
}

let made: Promise<LocalWebCert | undefined> | undefined;

/** The certificate, or undefined when openssl is missing (the local web then answers plain HTTP only). */
export function localWebCert(): Promise<LocalWebCert | undefined> {
  made ??= (async () => {
    try {
      const { stdout } = await run(
        "openssl",
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "-", "-out", "-"].concat([
          "-subj",
          "/CN=local web (tollgate emulator)",
          "-days",
          "3650",
        ]),
        { timeout: 15_000 },
      );
      const key = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/.exec(stdout)?.[0];
      const cert = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(stdout)?.[0];
      if (!key || !cert) return undefined;
      const der = new X509Certificate(cert).publicKey.export({ type: "spki", format: "der" });
      return { key, cert, spki: createHash("sha256").update(der).digest("base64") };
    } catch {
      return undefined;
    }
  })();
  return made;
}
