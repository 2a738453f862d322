import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { entryFile, runningBuild } from "../project-root.js";
import { formatLogLine } from "./log-lines.js";

/**
 * `axon serve`: the server in this process, its JSON logs on stdout, when stdout is a pipe or a file (what log
 * collectors read). On a terminal it runs as a child whose JSON lines are shown for a person, as `| pino-pretty`
 * would: the server itself always logs JSON.
 */
export async function serve(): Promise<void> {
  if (!process.stdout.isTTY) {
    await import("../main.js");
    return;
  }
  const child = spawn(process.execPath, [...sameLoader(), entryFile("main")], { stdio: ["inherit", "pipe", "inherit"] });
  const color = process.env.NO_COLOR === undefined && process.env.TERM !== "dumb";
  createInterface({ input: child.stdout! }).on("line", (line) => process.stdout.write(`${formatLogLine(line, color)}\n`));
  // Ctrl-C reaches the child from the terminal too; a signal sent to this process alone is passed on. Either way the
  // child drains and stops, and its exit ends this process.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    process.exitCode = code ?? (signal ? 1 : 0);
  });
}

/** `axon mcp`: the MCP server on stdio, in this process; it reads its options from process.argv. */
export async function serveMcp(token: string | undefined): Promise<void> {
  process.argv = [process.argv[0] ?? "node", entryFile("mcp/stdio"), ...(token ? ["--token", token] : [])];
  await import("../mcp/stdio.js");
}

function sameLoader(): string[] {
  return runningBuild ? [] : ["--import", import.meta.resolve("tsx")];
}
