import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmMessage } from "../../llm/llm.js";
import type { AgentState, Middleware, StateUpdate } from "../middleware-chain.js";
import { boolean, integer, oneOf, optional, required, string, type PrebuiltMiddleware } from "./middleware-args.js";

/*
 * LangChain's PIIMiddleware: one kind of personal data (a built-in type or a named one with its own `detector`
 * pattern), found in the last user message before each model call (`apply_to_input`), in the tool results since the
 * model's last answer (`apply_to_tool_results`), and in the model's answer (`apply_to_output`), and blocked, redacted,
 * masked or hashed as LangChain does it.
 */

export type PiiStrategy = "block" | "redact" | "mask" | "hash";

export interface PiiMatch {
  type: string;
  value: string;
  start: number;
  end: number;
}

type Detector = (content: string) => PiiMatch[];

// LangChain's `\b` counterparts that treat every non-ASCII character as a boundary, so that PII written against
// non-English text is found.
const before = "(?<![0-9A-Za-z_])";
const after = "(?![0-9A-Za-z_])";

const patterns = {
  // Sticky: tried only where an address can start, left of an `@` (see detectEmail).
  email: new RegExp(`${before}[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}${after}`, "y"),
  creditCard: /\b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b/g,
  ipv4: new RegExp(`${before}(?:[0-9]{1,3}\\.){3}[0-9]{1,3}${after}`, "g"),
  macAddress: new RegExp(`${before}(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}${after}`, "g"),
  schemeUrl: /https?:\/\/[^\s<>"{}|\\^`[\]]+/g,
  bareUrl: /\b(?:www\.)?[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+(?:\/\S*)?/g,
};

function matchesOf(pattern: RegExp, type: string, content: string, accept: (value: string) => boolean = () => true): PiiMatch[] {
  const found: PiiMatch[] = [];
  for (const match of content.matchAll(pattern)) {
    if (match[0] !== "" && accept(match[0])) found.push({ type, value: match[0], start: match.index, end: match.index + match[0].length });
  }
  return found;
}

/** A character of an address's local part: `[A-Za-z0-9._%+-]`. */
function isLocalPart(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 46 || code === 95 || code === 37 || code === 43 || code === 45;
}

/**
 * The matches LangChain's email pattern finds, scanning the text once: every address holds one `@`, so the pattern is
 * tried only at the starts of the local part before each `@`, leftmost first, as a global search would find them.
 */
function detectEmail(content: string): PiiMatch[] {
  const found: PiiMatch[] = [];
  let from = 0;
  for (let at = content.indexOf("@"); at >= 0; at = content.indexOf("@", Math.max(at + 1, from))) {
    let start = at;
    while (start > from && isLocalPart(content.charCodeAt(start - 1))) start--;
    for (let candidate = start; candidate < at; candidate++) {
      patterns.email.lastIndex = candidate;
      const match = patterns.email.exec(content);
      if (match === null) continue;
      found.push({ type: "email", value: match[0], start: candidate, end: candidate + match[0].length });
      from = candidate + match[0].length;
      break;
    }
  }
  return found;
}

/** Card numbers of 13 to 19 digits whose Luhn checksum holds. */
function passesLuhn(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, "");
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1 && (digit *= 2) > 9) digit -= 9;
    sum += digit;
  }
  return sum % 10 === 0;
}

/** An IPv4 address as Python's ipaddress reads one: each part 0 to 255, without leading zeros. */
function isIpv4(candidate: string): boolean {
  return candidate.split(".").every((part) => (part.length === 1 || part[0] !== "0") && Number(part) <= 255);
}

/** JavaScript's `\s`: where a bare URL match ends, since it holds none. */
function isSpace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  return code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

/**
 * The bare-URL pattern's matches in the words (runs of non-space) holding a `/` or `www.`: a match holds no space, so a
 * word's matches are its own, and in any other word every match would be refused (no path, no `www.`). The same accepted
 * matches as a search of the whole text, without a match object for each dotted word.
 */
function bareUrls(content: string): PiiMatch[] {
  const found: PiiMatch[] = [];
  const next = (from: number) => {
    const slash = content.indexOf("/", from);
    const www = content.indexOf("www.", from);
    return slash < 0 ? www : www < 0 ? slash : Math.min(slash, www);
  };
  for (let at = next(0), searched = 0; at >= 0; at = next(searched)) {
    let start = at;
    while (start > searched && !isSpace(content.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < content.length && !isSpace(content.charCodeAt(end))) end++;
    for (const match of matchesOf(patterns.bareUrl, "url", content.slice(start, end))) found.push({ ...match, start: match.start + start, end: match.end + start });
    searched = end;
  }
  return found;
}

/** URLs with an http(s) scheme and a host; bare ones only when they start with `www.` or have a path. */
function detectUrl(content: string): PiiMatch[] {
  const found = matchesOf(patterns.schemeUrl, "url", content, (url) => /^https?:\/\/[^/?#]+/.test(url));
  for (const match of bareUrls(content)) {
    if (found.some((known) => (known.start <= match.start && match.start < known.end) || (known.start < match.end && match.end <= known.end))) continue;
    const host = match.value.split("/")[0]!;
    if ((match.value.includes("/") || match.value.startsWith("www.")) && host.includes(".")) found.push(match);
  }
  return found;
}

const builtInDetectors: Record<string, Detector> = {
  email: detectEmail,
  credit_card: (content) => matchesOf(patterns.creditCard, "credit_card", content, passesLuhn),
  ip: (content) => matchesOf(patterns.ipv4, "ip", content, isIpv4),
  mac_address: (content) => matchesOf(patterns.macAddress, "mac_address", content),
  url: detectUrl,
};

/**
 * A Python regular expression as JavaScript runs it: named groups are spelt `(?<name>…)` there. Anything else the two
 * do not share fails to compile, and the network is refused saying so.
 */
export function pythonPattern(source: string): RegExp {
  return new RegExp(source.replace(/\(\?P</g, "(?<").replace(/\(\?P=(\w+)\)/g, "\\k<$1>"), "g");
}

export class PiiDetectionError extends Error {
  override readonly name = "PIIDetectionError";
  constructor(readonly piiType: string, count: number) {
    super(`Detected ${count} instance(s) of ${piiType} in text content`);
  }
}

function masked(match: PiiMatch): string {
  const { type, value } = match;
  switch (type) {
    case "email": {
      const [local, domain, ...rest] = value.split("@");
      if (domain === undefined || rest.length > 0) return "****";
      const labels = domain.split(".");
      return labels.length > 1 ? `${local}@****.${labels.at(-1)}` : `${local}@****`;
    }
    case "credit_card": {
      const last = value.replace(/\D/g, "").slice(-4);
      const separator = value.includes("-") ? "-" : value.includes(" ") ? " " : "";
      return separator === "" ? `************${last}` : ["****", "****", "****", last].join(separator);
    }
    case "ip": {
      const parts = value.split(".");
      return parts.length === 4 ? `*.*.*.${parts[3]}` : "****";
    }
    case "mac_address": {
      const separator = value.includes(":") ? ":" : "-";
      return [..."*****"].map(() => "**").concat(value.slice(-2)).join(separator);
    }
    case "url":
      return "[MASKED_URL]";
    default:
      return value.length > 4 ? `****${value.slice(-4)}` : "****";
  }
}

function replacement(match: PiiMatch, strategy: Exclude<PiiStrategy, "block">): string {
  if (strategy === "redact") return `[REDACTED_${match.type.toUpperCase()}]`;
  if (strategy === "mask") return masked(match);
  return `<${match.type}_hash:${createHash("sha256").update(match.value).digest("hex").slice(0, 8)}>`;
}

/** The content with the strategy applied to its matches; `block` throws when there is any. */
export function applyStrategy(content: string, matches: PiiMatch[], strategy: PiiStrategy): string {
  if (matches.length === 0) return content;
  if (strategy === "block") throw new PiiDetectionError(matches[0]!.type, matches.length);
  let result = "";
  let at = 0;
  for (const match of [...matches].sort((a, b) => a.start - b.start)) {
    if (match.start < at) continue;
    result += content.slice(at, match.start) + replacement(match, strategy);
    at = match.end;
  }
  return result + content.slice(at);
}

export interface PiiRule {
  piiType: string;
  strategy: PiiStrategy;
  detector: Detector;
}

export function piiRuleOf(args: JsonObject): PiiRule {
  const piiType = args["pii_type"] as string;
  const strategy = (args["strategy"] as PiiStrategy | undefined) ?? "redact";
  const source = args["detector"];
  if (typeof source !== "string") return { piiType, strategy, detector: builtInDetectors[piiType]! };
  const pattern = pythonPattern(source);
  return { piiType, strategy, detector: (content) => matchesOf(pattern, piiType, content) };
}

/** The rule applied to one text: the same text when nothing matched. */
export function redacted(rule: PiiRule, content: string): string {
  return content === "" ? content : applyStrategy(content, rule.detector(content), rule.strategy);
}

class PiiMiddleware implements Middleware {
  readonly name: string;
  readonly beforeModel?: Middleware["beforeModel"];
  readonly afterModel?: Middleware["afterModel"];

  constructor(
    private readonly rule: PiiRule,
    private readonly applyTo: { input: boolean; output: boolean; toolResults: boolean },
  ) {
    this.name = `PIIMiddleware[${rule.piiType}]`;
    if (applyTo.input || applyTo.toolResults) this.beforeModel = async (state) => this.checkBeforeModel(state);
    if (applyTo.output) this.afterModel = async (state) => this.checkAfterModel(state);
  }

  private checkBeforeModel(state: AgentState): StateUpdate | undefined {
    const messages = [...state.messages];
    let changed = false;
    const replace = (index: number, message: LlmMessage) => {
      const content = redacted(this.rule, message.content);
      if (content === message.content) return;
      messages[index] = { ...message, content } as LlmMessage;
      changed = true;
    };
    if (this.applyTo.input) {
      const lastUser = messages.findLastIndex((message) => message.role === "user");
      if (lastUser >= 0) replace(lastUser, messages[lastUser]!);
    }
    if (this.applyTo.toolResults) {
      const lastAnswer = messages.findLastIndex((message) => message.role === "assistant");
      if (lastAnswer >= 0) for (let index = lastAnswer + 1; index < messages.length; index++) if (messages[index]!.role === "tool") replace(index, messages[index]!);
    }
    return changed ? { messages } : undefined;
  }

  private checkAfterModel(state: AgentState): StateUpdate | undefined {
    const index = state.messages.findLastIndex((message) => message.role === "assistant");
    const answer = state.messages[index];
    if (answer === undefined) return undefined;
    const content = redacted(this.rule, answer.content);
    if (content === answer.content) return undefined;
    const messages = [...state.messages];
    messages[index] = { ...answer, content };
    return { messages };
  }
}

export const piiMiddleware: PrebuiltMiddleware = {
  args: {
    pii_type: required(string),
    strategy: oneOf("block", "redact", "mask", "hash"),
    detector: optional(string),
    apply_to_input: boolean,
    apply_to_output: boolean,
    apply_to_tool_results: boolean,
    // How far LangChain looks back across streamed deltas; Axon redacts whole messages, so any value does.
    stream_lookback: integer(0),
  },
  check(args) {
    const piiType = args["pii_type"] as string;
    const detector = args["detector"];
    if (typeof detector === "string") {
      try {
        pythonPattern(detector);
      } catch (error) {
        return [{ key: "detector", reason: `is not a regular expression Axon can run: ${(error as Error).message}` }];
      }
      return [];
    }
    if (builtInDetectors[piiType] === undefined) {
      return [{ key: "pii_type", reason: `${piiType} is not a built-in PII type (${Object.keys(builtInDetectors).join(", ")}): give a detector for it` }];
    }
    return [];
  },
  make: (args) =>
    new PiiMiddleware(piiRuleOf(args), {
      input: (args["apply_to_input"] as boolean | undefined) ?? true,
      output: (args["apply_to_output"] as boolean | undefined) ?? false,
      toolResults: (args["apply_to_tool_results"] as boolean | undefined) ?? false,
    }),
};
