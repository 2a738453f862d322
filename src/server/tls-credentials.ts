import { readFileSync, unwatchFile, watchFile } from "node:fs";
import tls from "node:tls";
import type { TlsSettings } from "../config.js";
import type { Logger } from "../logger.js";

/** How often the certificate, key and client CA files are re-stat'ed for a replacement. */
const pollIntervalMs = 1_000;

/**
 * The server's certificate chain and key (and the CA its clients' certificates must chain to), read from their files
 * and read again when any of them is replaced, so that a renewed certificate reaches new connections within seconds
 * with no restart and no signal. Open connections keep the context they were made with.
 */
export class TlsCredentials {
  private constructor(
    private readonly settings: TlsSettings,
    private readonly logger: Logger | undefined,
    private options: tls.SecureContextOptions,
  ) {}

  /** Throws (naming the file, never its content) when the files do not make a usable context. */
  static load(settings: TlsSettings, logger?: Logger): TlsCredentials {
    return new TlsCredentials(settings, logger, readContextOptions(settings));
  }

  get requestsClientCertificates(): boolean {
    return this.settings.clientCaFile !== undefined;
  }

  current(): tls.SecureContextOptions {
    return this.options;
  }

  /**
   * Calls `onChange` with the new options each time a file changes and the files make a usable context again. A
   * half-replaced pair (a new certificate beside the old key) fails to load and keeps the previous context serving
   * until the other file follows.
   */
  watch(onChange: (options: tls.SecureContextOptions) => void): () => void {
    const files = [this.settings.certFile, this.settings.keyFile, ...(this.settings.clientCaFile ? [this.settings.clientCaFile] : [])];
    const reload = (): void => {
      try {
        this.options = readContextOptions(this.settings);
        onChange(this.options);
        this.logger?.info({ files }, "TLS certificate reloaded");
      } catch (error) {
        this.logger?.warn({ reason: reasonOf(error) }, "TLS files changed but do not load yet; the previous certificate stays");
      }
    };
    const listener = (current: { mtimeMs: number }, previous: { mtimeMs: number }): void => {
      if (current.mtimeMs !== previous.mtimeMs) reload();
    };
    for (const file of files) watchFile(file, { interval: pollIntervalMs, persistent: false }, listener);
    return () => {
      for (const file of files) unwatchFile(file, listener);
    };
  }
}

function readContextOptions(settings: TlsSettings): tls.SecureContextOptions {
  const read = (what: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(`cannot read the TLS ${what} file ${file}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
    }
  };
  const options: tls.SecureContextOptions = {
    cert: read("certificate", settings.certFile),
    key: read("key", settings.keyFile),
    ...(settings.clientCaFile ? { ca: read("client CA", settings.clientCaFile) } : {}),
  };
  try {
    // Proves that the key is the certificate's and that each PEM parses, before anything is served with them.
    tls.createSecureContext(options);
  } catch (error) {
    throw new Error(`the TLS certificate ${settings.certFile} and key ${settings.keyFile} do not make a usable pair: ${reasonOf(error)}`);
  }
  return options;
}

/** OpenSSL's reason code alone: its messages never carry key material, but nothing else of the error is needed. */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : error instanceof Error ? error.message.slice(0, 200) : "unknown";
}
