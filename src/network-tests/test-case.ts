import path from "node:path";
import { HoconError, parseHoconFile, type JsonObject, type JsonValue } from "../agents/hocon.js";
import { isJsonObject } from "../json.js";

/**
 * One data-driven test case (neuro-san's format): an agent, a conversation of interactions, the tests each answer
 * must pass, and how many repeated runs must pass. A file holds one case.
 *
 * Where a test looks (the key grammar of `response`):
 *   text                          the answer's text
 *   sly_data[.<key>]...           the returned sly_data, or a value inside it
 *   structure[.<key>]...          the answer's structure, or a value inside it
 * A path is written either nested (`sly_data { totals { sum {...} } }`) or dotted (`"sly_data.totals.sum" {...}`; HOCON
 * reads unquoted dotted keys as nesting anyway), so data keys containing dots cannot be addressed. Descent stops at the
 * first object whose keys are all test names: that object is the tests. A data key named like a test (`value`) can
 * therefore only be tested through its parent.
 *
 * A test's criterion may be one value or a list; a list means every element must pass (for `value`, compare with a
 * list-valued key by wrapping it: `value: [[1, 2]]`).
 */

export const TEST_NAMES = [
  "value",
  "not_value",
  "less",
  "not_less",
  "greater",
  "not_greater",
  "keywords",
  "not_keywords",
  "gist",
  "not_gist",
] as const;
export type TestName = (typeof TEST_NAMES)[number];

export const RESPONSE_PARTS = ["text", "sly_data", "structure"] as const;
export type ResponsePart = (typeof RESPONSE_PARTS)[number];

export type ChatFilterType = "MINIMAL" | "MAXIMAL";

export interface Assertion {
  /** Where it looks, as written in reports: `text`, `sly_data.totals.sum`. */
  target: string;
  part: ResponsePart;
  /** Keys below `sly_data` or `structure`; empty means the whole part. */
  path: string[];
  test: TestName;
  /** One criterion: a list in the file becomes one assertion per element. */
  expected: JsonValue;
}

export interface Interaction {
  text: string;
  slyData: JsonObject | undefined;
  chatFilter: ChatFilterType;
  /** Whether the next interaction continues this conversation (gets this answer's chat_context). */
  continueConversation: boolean;
  timeoutSeconds: number | undefined;
  assertions: Assertion[];
}

export interface SuccessRatio {
  /** Runs that must pass. */
  required: number;
  /** Runs to make. */
  runs: number;
}

export interface NetworkTestCase {
  /** Absolute path of the case file. */
  file: string;
  agent: string;
  successRatio: SuccessRatio;
  /** A deadline for the whole case, every run included. */
  timeoutSeconds: number | undefined;
  /** Request metadata, sent as HTTP headers with every request. */
  metadata: Record<string, string>;
  interactions: Interaction[];
}

export class TestCaseError extends Error {
  override readonly name = "TestCaseError";
  constructor(
    readonly file: string,
    /** The offending key, e.g. `interactions[0].response.text.keyword`; empty for the file as a whole. */
    readonly key: string,
    readonly reason: string,
  ) {
    super(key === "" ? `${file}: ${reason}` : `${file}: ${key}: ${reason}`);
  }
}

export async function loadTestCase(file: string, options: { projectRoot?: string } = {}): Promise<NetworkTestCase> {
  const absoluteFile = path.resolve(file);
  let document: JsonObject;
  try {
    ({ value: document } = await parseHoconFile(absoluteFile, { projectRoot: options.projectRoot }));
  } catch (error) {
    if (!(error instanceof HoconError)) throw error;
    const location = error.line === undefined ? "" : `line ${error.line}${error.column === undefined ? "" : `:${error.column}`}`;
    throw new TestCaseError(error.file, location, error.reason);
  }
  return parseTestCase(document, absoluteFile);
}

const CASE_KEYS = ["agent", "interactions", "success_ratio", "timeout_in_seconds", "metadata", "connections", "use_direct"];
const INTERACTION_KEYS = ["text", "sly_data", "chat_filter", "continue_conversation", "timeout_in_seconds", "response"];

/** Validates a parsed case file; every problem names the key it is about. */
export function parseTestCase(document: JsonObject, file: string): NetworkTestCase {
  const fail = (key: string, reason: string): never => {
    throw new TestCaseError(file, key, reason);
  };
  requireKnownKeys(document, CASE_KEYS, "", fail);

  const agent = document.agent;
  if (typeof agent !== "string" || agent.trim() === "") fail("agent", "required: the name of the network to test");

  // neuro-san picks transports with these; Axon always speaks HTTP to the server it is given, so they are only checked.
  const connections = document.connections;
  if (connections !== undefined && typeof connections !== "string" && !isStringList(connections)) {
    fail("connections", "expected a string or a list of strings");
  }
  if (document.use_direct !== undefined && typeof document.use_direct !== "boolean") fail("use_direct", "expected a boolean");

  const interactions = document.interactions;
  if (!Array.isArray(interactions) || interactions.length === 0) {
    fail("interactions", "required: a non-empty list of interactions");
  }
  return {
    file,
    agent: agent as string,
    successRatio: parseSuccessRatio(document.success_ratio, fail),
    timeoutSeconds: parseTimeout(document.timeout_in_seconds, "timeout_in_seconds", fail),
    metadata: parseMetadata(document.metadata, fail),
    interactions: (interactions as JsonValue[]).map((interaction, index) =>
      parseInteraction(interaction, `interactions[${index}]`, fail),
    ),
  };
}

type Fail = (key: string, reason: string) => never;

function parseSuccessRatio(value: JsonValue | undefined, fail: Fail): SuccessRatio {
  if (value === undefined) return { required: 1, runs: 1 };
  const match = typeof value === "string" ? /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(value) : null;
  if (!match) fail("success_ratio", `expected "k/n" (k of n runs must pass), got ${JSON.stringify(value)}`);
  const required = Number(match?.[1]);
  const runs = Number(match?.[2]);
  if (runs < 1 || required < 1 || required > runs) {
    fail("success_ratio", `"${String(value)}" needs 1 <= k <= n`);
  }
  return { required, runs };
}

function parseTimeout(value: JsonValue | undefined, key: string, fail: Fail): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !(value > 0)) fail(key, "expected a positive number of seconds");
  return value as number;
}

function parseMetadata(value: JsonValue | undefined, fail: Fail): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) fail("metadata", "expected an object of header names to values");
  const metadata: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(value as JsonObject)) {
    if (typeof headerValue === "object" && headerValue !== null) fail(`metadata.${name}`, "expected a scalar value");
    metadata[name] = String(headerValue);
  }
  return metadata;
}

function parseInteraction(value: JsonValue, key: string, fail: Fail): Interaction {
  if (!isJsonObject(value)) fail(key, "expected an object");
  const interaction = value as JsonObject;
  requireKnownKeys(interaction, INTERACTION_KEYS, `${key}.`, fail);

  if (typeof interaction.text !== "string") fail(`${key}.text`, "required: the user message to send");
  const slyData = interaction.sly_data;
  if (slyData !== undefined && slyData !== null && !isJsonObject(slyData)) fail(`${key}.sly_data`, "expected an object");
  const continueConversation = interaction.continue_conversation ?? true;
  if (typeof continueConversation !== "boolean") fail(`${key}.continue_conversation`, "expected a boolean");
  const response = interaction.response ?? {};
  if (!isJsonObject(response)) fail(`${key}.response`, "expected an object of tests");

  return {
    text: interaction.text as string,
    slyData: isJsonObject(slyData) ? slyData : undefined,
    chatFilter: parseChatFilter(interaction.chat_filter, `${key}.chat_filter`, fail),
    continueConversation: continueConversation as boolean,
    timeoutSeconds: parseTimeout(interaction.timeout_in_seconds, `${key}.timeout_in_seconds`, fail),
    assertions: parseResponse(response as JsonObject, `${key}.response`, fail),
  };
}

/** neuro-san files write the type as a string; the wire form `{chat_filter_type: ...}` is accepted too. */
function parseChatFilter(value: JsonValue | undefined, key: string, fail: Fail): ChatFilterType {
  if (value === undefined || value === null) return "MINIMAL";
  const type = isJsonObject(value) ? value.chat_filter_type : value;
  const name = typeof type === "string" ? type.toUpperCase() : undefined;
  if (name !== "MINIMAL" && name !== "MAXIMAL") fail(key, `expected "MINIMAL" or "MAXIMAL", got ${JSON.stringify(value)}`);
  return name as ChatFilterType;
}

function parseResponse(response: JsonObject, key: string, fail: Fail): Assertion[] {
  const assertions: Assertion[] = [];
  for (const [name, block] of Object.entries(response)) {
    const [part, ...path] = name.split(".");
    if (!isResponsePart(part)) fail(`${key}.${name}`, `unknown response key (expected ${RESPONSE_PARTS.join(", ")})`);
    if (part === "text" && path.length > 0) fail(`${key}.${name}`, "text is a string: it has no keys to test");
    assertions.push(...parseTestBlock(part as ResponsePart, path, block, `${key}.${name}`, fail));
  }
  return assertions;
}

function parseTestBlock(part: ResponsePart, path: string[], block: JsonValue, key: string, fail: Fail): Assertion[] {
  if (!isJsonObject(block)) fail(key, "expected an object of tests (value, keywords, ...) or of keys to descend into");
  const names = Object.keys(block as JsonObject);
  if (names.length === 0) fail(key, "empty: name at least one test");
  const tests = names.filter(isTestName);
  const dataKeys = names.filter((name) => !isTestName(name));

  if (tests.length > 0 && dataKeys.length > 0) {
    fail(key, `mixes tests (${tests.join(", ")}) with keys (${dataKeys.join(", ")}); give the keys their own blocks`);
  }
  if (dataKeys.length > 0) {
    if (part === "text") fail(`${key}.${dataKeys[0]}`, `unknown test (expected one of ${TEST_NAMES.join(", ")})`);
    return dataKeys.flatMap((dataKey) =>
      parseTestBlock(part, [...path, ...dataKey.split(".")], (block as JsonObject)[dataKey] as JsonValue, `${key}.${dataKey}`, fail),
    );
  }

  const target = [part, ...path].join(".");
  return (tests as TestName[]).flatMap((test) => {
    const criterion = (block as JsonObject)[test] as JsonValue;
    const criteria = Array.isArray(criterion) ? criterion : [criterion];
    if (criteria.length === 0) fail(`${key}.${test}`, "empty list: give at least one criterion");
    criteria.forEach((expected, index) => {
      const problem = criterionProblem(test, expected);
      if (problem) fail(`${key}.${test}${Array.isArray(criterion) ? `[${index}]` : ""}`, problem);
    });
    return criteria.map((expected) => ({ target, part, path, test, expected }));
  });
}

function criterionProblem(test: TestName, expected: JsonValue): string | undefined {
  switch (test) {
    case "value":
    case "not_value":
      return undefined;
    case "less":
    case "not_less":
    case "greater":
    case "not_greater":
      return typeof expected === "number" || typeof expected === "string" ? undefined : "expected a number or a string";
    case "keywords":
    case "not_keywords":
      return (typeof expected === "string" && expected !== "") || typeof expected === "number"
        ? undefined
        : "expected a non-empty string";
    case "gist":
    case "not_gist":
      return typeof expected === "string" && expected.trim() !== "" ? undefined : "expected a non-empty description";
  }
}

function requireKnownKeys(object: JsonObject, known: string[], prefix: string, fail: Fail): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) fail(`${prefix}${key}`, `unknown key (expected one of ${known.join(", ")})`);
  }
}

function isTestName(name: string): name is TestName {
  return (TEST_NAMES as readonly string[]).includes(name);
}

function isResponsePart(name: string | undefined): name is ResponsePart {
  return (RESPONSE_PARTS as readonly (string | undefined)[]).includes(name);
}

function isStringList(value: JsonValue): boolean {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}
