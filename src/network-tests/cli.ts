import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { renderReport } from "./report.js";
import { AxonError } from "../errors.js";
import { createLlmClient } from "../llm/providers.js";
import { InvalidTestFilesError, runNetworkTests } from "./runner.js";

const USAGE = `Usage: tsx src/network-tests/cli.ts [--url URL] [--timeout SECONDS] [--json] FILE_OR_FOLDER...

Runs data-driven network test cases (.hocon) against an Axon or neuro-san server's REST API.
A folder stands for the .hocon files directly inside it.

  --url URL           the server (default http://localhost:8080)
  --timeout SECONDS   per interaction, unless the case file sets timeout_in_seconds (default 180)
  --json              print the report as JSON instead of text
  --judge MODEL       the LLM that judges gist tests (needs its provider's key, e.g. OPENAI_API_KEY);
                      without it gist tests are reported as skipped

Exit status: 0 all cases passed, 1 a case failed, 2 bad usage or an invalid case file.`;

/** The whole command, minus the process: returns the exit status (a later `axon test` can wrap it). */
export async function runNetworkTestsCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: "string", default: "http://localhost:8080" },
        timeout: { type: "string" },
        json: { type: "boolean", default: false },
        judge: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (error) {
    return usageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 0) return usageError("name at least one test case file or folder");
  const timeoutSeconds = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutSeconds !== undefined && !(timeoutSeconds > 0)) return usageError("--timeout needs a positive number of seconds");

  let files: string[];
  try {
    files = positionals.flatMap(expandFolder);
  } catch (error) {
    return usageError(error instanceof Error ? error.message : String(error));
  }

  try {
    const judge = values.judge === undefined ? undefined : createLlmClient({ model_name: values.judge });
    const report = await runNetworkTests(files, {
      url: values.url,
      timeoutSeconds,
      ...(judge ? { judge } : {}),
      // Progress goes to stderr so that --json output stays parseable.
      onProgress: (event) => {
        if (event.kind === "run-finished") {
          console.error(`${event.agent} run ${event.run.run}/${event.runs}: ${event.run.passed ? "passed" : "failed"}`);
        }
      },
    });
    console.log(values.json ? JSON.stringify(report, null, 2) : renderReport(report));
    return report.passed ? 0 : 1;
  } catch (error) {
    if (error instanceof InvalidTestFilesError) {
      console.error(`Invalid test case file${error.errors.length === 1 ? "" : "s"}:\n${error.message}`);
      return 2;
    }
    if (error instanceof AxonError) return usageError(`${error.message} (${error.reason})`);
    throw error;
  }
}

function expandFolder(entry: string): string[] {
  if (!statSync(entry, { throwIfNoEntry: false })?.isDirectory()) return [entry];
  const files = readdirSync(entry)
    .filter((name) => name.endsWith(".hocon"))
    .sort()
    .map((name) => path.join(entry, name));
  if (files.length === 0) throw new Error(`${entry} holds no .hocon files`);
  return files;
}

function usageError(message: string): number {
  console.error(`${message}\n\n${USAGE}`);
  return 2;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runNetworkTestsCommand(process.argv.slice(2));
}
