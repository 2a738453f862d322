import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { projectRoot } from "./server.js";

type Json = Record<string, unknown>;

export const inferenceManifest = path.join(projectRoot, "test/fixtures/inference/manifest.hocon");

/** A fresh upstream key, long and unique enough to grep for anywhere it must never be. */
export const newUpstreamKey = () => `hf_${randomBytes(24).toString("hex")}`;

/**
 * The files an Axon serving `/v1` reads, in a folder of their own: clients (one secret each), an operator, admission
 * limits, the upstreams and, if given, network access and policy. Returns the environment naming them.
 */
export function inferenceFiles(options: {
  clients: Record<string, string>;
  operator: string;
  admission: Json;
  upstreams: Json;
  access?: Json;
  policy?: Json;
}): Record<string, string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "axon-inference-"));
  const file = (name: string, text: string) => {
    writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    return path.join(dir, name);
  };
  return {
    AXON_CLIENTS_FILE: file("clients", Object.entries(options.clients).map(([name, secret]) => `${name} = ${secret}\n`).join("")),
    AXON_OPERATORS_FILE: file("operators", `ops = ${options.operator}\n`),
    AXON_ADMISSION_FILE: file("admission.json", JSON.stringify(options.admission)),
    AXON_INFERENCE_FILE: file("inference.hocon", JSON.stringify(options.upstreams, null, 2)),
    ...(options.access ? { AXON_NETWORK_ACCESS_FILE: file("access.json", JSON.stringify(options.access)) } : {}),
    ...(options.policy ? { AXON_POLICY_FILE: file("policy.json", JSON.stringify(options.policy)) } : {}),
  };
}

/** Every response body an SDK client received, kept to search for what must never be in one. */
export interface Answers {
  bodies: string[];
}

/** The official SDK pointed at Axon's `/v1` with an Axon client secret as its key; what it receives is kept in `answers`. */
export function openAiClient(baseUrl: string, apiKey: string, answers: Answers, options: { maxRetries?: number } = {}): OpenAI {
  return new OpenAI({
    apiKey,
    baseURL: `${baseUrl}/v1`,
    maxRetries: options.maxRetries ?? 0,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      // Read beside the SDK, not before it: a stream must reach the SDK as it arrives.
      void response.clone().text().then((text) => answers.bodies.push(text), () => undefined);
      return response;
    },
  });
}

/** The text of every file under `dir` (the database, its journal, the secrets' hashes), to search for a secret. */
export function filesUnder(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name)).toString("latin1"))
    .join("\n");
}
