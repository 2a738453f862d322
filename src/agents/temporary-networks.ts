import { randomUUID } from "node:crypto";
import type { JsonObject } from "./hocon.js";
import type { AgentNetwork } from "./agent-network.js";
import { buildNetwork } from "./network.js";
import { llmConfigProblems } from "./llm-config-problems.js";
import { RegistryProblemsError, type RegistryProblem } from "./problem.js";
import type { LlmInfo } from "../llm/llm-info.js";
import type { Toolbox } from "./toolbox/toolbox-info.js";

/**
 * A network deployed under a reserved name (neuro-san's temporary networks, `Reservationist`): served beside the
 * manifest's networks until it expires. Its spec is what a network file holds, already parsed.
 */
export interface TemporaryNetworkSpec {
  name: string;
  spec: JsonObject;
  public: boolean;
  expiresAt: Date;
}

/** One network a coded tool's Reservationist deploys, under the name it reserved. */
export interface TemporaryDeployment {
  name: string;
  lifetimeSeconds: number;
  spec: JsonObject;
}

export interface DeployedNetwork {
  name: string;
  expiresAt: Date;
}

/**
 * Where a coded tool's Reservationist deploys (the server's database): all or none, each spec checked as a network
 * file is, served before this resolves. `owner` names the network whose tool deployed them.
 */
export type DeployTemporaryNetworks = (owner: string, deployments: TemporaryDeployment[]) => Promise<DeployedNetwork[]>;

/** neuro-san's reservation ids: an optional prefix and a dash, then a version 4 UUID. */
const RESERVATION_NAME = /(^|-)[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
/** neuro-san refuses these in a prefix, which must stay one URL path segment. */
const PREFIX_REFUSED = /[/:\s\u0000-\u001f\u007f]/;
export const MAX_PREFIX_LENGTH = 64;

/** Whether a name has the shape of a reserved one: only such names are looked for among temporary networks. */
export function isReservationName(name: string): boolean {
  return RESERVATION_NAME.test(name);
}

/** What is wrong with a prefix, or undefined for a good one (the empty prefix included). */
export function prefixProblem(prefix: string): string | undefined {
  if (prefix.length > MAX_PREFIX_LENGTH) return `at most ${MAX_PREFIX_LENGTH} characters`;
  if (PREFIX_REFUSED.test(prefix)) return 'no "/", ":", whitespace or control characters';
  return undefined;
}

/** A fresh reserved name: `<prefix>-<uuid>`, or the UUID alone. */
export function newReservationName(prefix: string): string {
  return prefix === "" ? randomUUID() : `${prefix}-${randomUUID()}`;
}

/** Keys of a network file that name files on the server: a spec from a client may not. */
const FILE_KEYS = ["toolbox_info_file", "llm_info_file"];

/**
 * A temporary network built as a network file is (the server's toolbox and LLM info apply), with what would keep it
 * from being served in `problems` (thrown as RegistryProblemsError) and what would not in its warnings.
 */
export function buildTemporaryNetwork(temporary: Omit<TemporaryNetworkSpec, "expiresAt">, toolbox: Toolbox, llmInfo: LlmInfo): AgentNetwork {
  const file = `temporary network ${temporary.name}`;
  const refused: RegistryProblem[] = FILE_KEYS.filter((key) => key in temporary.spec).map((key) => ({
    file,
    key,
    reason: "a temporary network cannot name files on the server",
  }));
  let network: AgentNetwork;
  try {
    network = buildNetwork({ name: temporary.name, file, public: temporary.public, mcp: temporary.public, raw: temporary.spec, toolbox });
  } catch (error) {
    throw error instanceof RegistryProblemsError ? new RegistryProblemsError([...refused, ...error.problems]) : error;
  }
  const problems = [...refused, ...llmConfigProblems(network, llmInfo)];
  if (problems.length > 0) throw new RegistryProblemsError(problems);
  return network;
}
