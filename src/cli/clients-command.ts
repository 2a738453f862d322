import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parsePrincipals, PRINCIPAL_NAME } from "../auth/principals.js";
import { generateSecret } from "../auth/secrets.js";
import type { CliContext } from "./context.js";
import { CliFailure, ExitStatus } from "./cli-failure.js";
import { printJson, printLine } from "./output.js";

/** The clients file the server reads, as it finds it: AXON_CLIENTS_FILE, else $AXON_DATA_DIR/clients (./data/clients). */
export function defaultClientsFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AXON_CLIENTS_FILE ?? path.join(env.AXON_DATA_DIR ?? "data", "clients"));
}

/**
 * `axon clients add <name>`: appends `name = <secret>` and shows the secret once. The file is parsed first, so a
 * malformed file or a name already there is refused before anything is written. A running server reads the file at
 * start: restart it to admit the new client.
 */
export async function addClient(context: CliContext, name: string, file: string): Promise<void> {
  if (!PRINCIPAL_NAME.test(name)) throw new CliFailure(`${JSON.stringify(name)} is not a valid client name (letters, digits, . _ -; at most 64)`, ExitStatus.usage);
  const existing = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw new CliFailure(`cannot read ${file}: ${error.message}`, ExitStatus.failed);
  });
  if (existing !== undefined) {
    let names: readonly string[];
    try {
      names = parsePrincipals(existing, file, "client").names;
    } catch (error) {
      throw new CliFailure((error as Error).message, ExitStatus.failed);
    }
    if (names.includes(name)) throw new CliFailure(`${file} already has a client named ${name}`, ExitStatus.conflict);
  }
  const secret = generateSecret();
  const line = `${name} = ${secret}\n`;
  if (existing === undefined) {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    // flag "wx": never overwrite a file that appeared meanwhile; 0600 because it holds secrets.
    await writeFile(file, line, { mode: 0o600, flag: "wx" });
  } else {
    await appendFile(file, `${existing === "" || existing.endsWith("\n") ? "" : "\n"}${line}`);
  }
  if (context.json) return printJson({ name, secret, file });
  printLine(secret);
  process.stderr.write(`Added client ${name} to ${file}. The secret is shown only now; restart the server to admit it.\n`);
}
