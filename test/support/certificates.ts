import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";

/** A private CA made by the openssl CLI (P-256 keys: fast), and the certificates it issues, as PEM files. */
export class TestCa {
  private serial = 1;

  private constructor(
    readonly dir: string,
    readonly name: string,
  ) {}

  static create(name = "ca"): TestCa {
    const dir = mkdtempSync(path.join(os.tmpdir(), "axon-tls-"));
    const ca = new TestCa(dir, name);
    openssl(dir, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "2", "-subj", `/CN=Axon test ${name}`]);
    return ca;
  }

  get certFile(): string {
    return path.join(this.dir, `${this.name}.pem`);
  }

  get pem(): Buffer {
    return readFileSync(this.certFile);
  }

  /** A certificate for `commonName` with these SAN entries (`DNS:localhost`, `IP:127.0.0.1`), and its key. */
  issue(file: string, commonName: string, subjectAltNames: string[] = []): { certFile: string; keyFile: string } {
    const { dir } = this;
    openssl(dir, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${file}.key`, "-out", `${file}.csr`, "-subj", `/CN=${commonName}`]);
    writeFileSync(path.join(dir, `${file}.ext`), subjectAltNames.length > 0 ? `subjectAltName=${subjectAltNames.join(",")}\n` : "\n");
    openssl(dir, ["x509", "-req", "-in", `${file}.csr`, "-CA", `${this.name}.pem`, "-CAkey", `${this.name}.key`, "-set_serial", String(this.serial++), "-days", "1", "-out", `${file}.pem`, "-extfile", `${file}.ext`]);
    return { certFile: path.join(dir, `${file}.pem`), keyFile: path.join(dir, `${file}.key`) };
  }
}

/** Replaces a file in place the way deployment tools do: write beside it, then rename over it. */
export function replaceFile(target: string, source: string): void {
  const staged = `${target}.new`;
  writeFileSync(staged, readFileSync(source));
  renameSync(staged, target);
}

function openssl(cwd: string, args: string[]): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/**
 * A `fetch` that trusts `ca` (and may present a client certificate): Node's own fetch takes no CA, and clients such as
 * the MCP SDK take a fetch. Enough of fetch for JSON requests and streamed answers.
 */
export function fetchTrusting(ca: Buffer, client?: { cert: Buffer; key: Buffer }): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    return new Promise<Response>((resolve, reject) => {
      // The test certificates name localhost: an IP address is no TLS server name (RFC 6066).
      const request = https.request(url, { method: init.method ?? "GET", headers, ca, servername: "localhost", ...client }, (response) => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) responseHeaders.set(name, String(value));
        const noBody = response.statusCode === 204 || response.statusCode === 304;
        resolve(new Response(noBody ? null : (Readable.toWeb(response) as unknown as ReadableStream), { status: response.statusCode!, headers: responseHeaders }));
      });
      request.on("error", reject);
      init.signal?.addEventListener("abort", () => request.destroy());
      request.end(body);
    });
  }) as typeof fetch;
}
