import { CliFailure, ExitStatus } from "./cli-failure.js";

/** The global options every command sees, resolved from flags and the environment. */
export interface CliContext {
  url: string;
  json: boolean;
  token: string | undefined;
  operatorToken: string | undefined;
}

export type Json = Record<string, unknown>;

/** A JSON object given on the command line (`--target '{"network": "x"}'`). */
export function parseJsonObject(text: string, option: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliFailure(`${option} is not valid JSON: ${(error as Error).message}`, ExitStatus.usage);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new CliFailure(`${option} must be a JSON object`, ExitStatus.usage);
  return value as Json;
}

/** A positive integer option (`--minutes 10`). */
export function parsePositiveInteger(text: string, option: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new CliFailure(`${option} needs a positive integer, not ${JSON.stringify(text)}`, ExitStatus.usage);
  return value;
}

export function requireToken(token: string | undefined, which: "client" | "operator"): string {
  if (token !== undefined && token !== "") return token;
  const hint = which === "client" ? "--token or AXON_TOKEN" : "--operator-token or AXON_OPERATOR_TOKEN";
  throw new CliFailure(`${which === "client" ? "a client" : "an operator"} secret is required: pass ${hint}`, ExitStatus.auth);
}
