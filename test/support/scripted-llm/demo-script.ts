import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmMessage, LlmToolCall } from "../../../src/llm/llm.js";
import type { Reply, ScriptedRequest } from "./script.js";

/**
 * `npm run demo`'s model: deterministic, and good enough that the example networks answer what a person asks them
 * ("What is 6 times 7?" is 6 × 7 = 42, worked out by math_guy's Calculator; "Welsh" gets a Welsh greeting). It reads
 * what a real model would: the instructions, the offered tools' schemas and the conversation. The front man (the
 * node the user talks to) calls the tools it can fill from the user's words; a sub-agent, whose input is its
 * arguments as sentences ("The language is Welsh."), answers from what it knows.
 */
export function demoReply(request: ScriptedRequest): Reply {
  const round = lastToolRound(request.messages);
  if (round.length > 0) return { text: answerFromTools(request, round) };
  const last = request.messages.at(-1);
  const userText = last?.role === "user" ? last.content : "";
  const isSubAgent = /^The \w+ is /.test(userText);
  if (!isSubAgent) {
    const calls = plannedCalls(request, userText);
    if (calls.length > 0) return { toolCalls: calls };
  }
  return { text: isSubAgent ? subAgentAnswer(request, userText) : frontManAnswer(request, userText) };
}

interface ToolRound {
  call: LlmToolCall;
  result: string;
}

/** The tool calls of the last assistant turn with their results, when the conversation ends with those results. */
function lastToolRound(messages: LlmMessage[]): ToolRound[] {
  const results = new Map<string, string>();
  let index = messages.length - 1;
  for (; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role !== "tool") break;
    results.set(message.toolCallId, message.content);
  }
  const assistant = messages[index];
  if (results.size === 0 || assistant?.role !== "assistant") return [];
  return (assistant.toolCalls ?? []).map((call) => ({ call, result: results.get(call.id) ?? "" }));
}

// ---- which tools to call, with which arguments ------------------------------------------------------------------

type Tool = ScriptedRequest["tools"][number];

function plannedCalls(request: ScriptedRequest, userText: string): { name: string; arguments: JsonObject }[] {
  const calls: { name: string; arguments: JsonObject }[] = [];
  for (const tool of request.tools) {
    const args = argumentsFor(tool, userText, request.messages);
    if (args !== undefined) calls.push({ name: tool.name, arguments: args });
  }
  return calls;
}

/** Arguments for `tool` from the user's words, or undefined when the words do not give what it requires. */
function argumentsFor(tool: Tool, userText: string, history: LlmMessage[]): JsonObject | undefined {
  const properties = (tool.parameters["properties"] ?? {}) as Record<string, JsonObject>;
  const names = Object.keys(properties);
  if (names.includes("operator") && names.includes("x") && names.includes("y")) return arithmetic(userText, history);
  if (names.includes("action") && names.includes("amount")) return ledgerEntry(userText);
  if (names.includes("language")) {
    const language = languageIn(userText);
    return language === undefined ? undefined : { language };
  }
  // Any other tool takes the user's words in its one required text parameter (question, plan, inquiry, city, ...).
  const required = (tool.parameters["required"] as string[] | undefined) ?? names.slice(0, 1);
  if (required.length !== 1 || properties[required[0]!]?.["type"] !== "string") return undefined;
  return { [required[0]!]: userText };
}

const OPERATORS: [RegExp, string, string][] = [
  [/\b(times|multipl\w*|product)\b|(?<=\d\s*)[×*x](?=\s*-?\d)/i, "multiply", "×"],
  [/\b(plus|add\w*|sum)\b|\+/i, "add", "+"],
  [/\b(minus|subtract\w*|less)\b|(?<=\d\s*)-(?=\s*\d)/i, "subtract", "−"],
  [/\b(divided|over)\b|[÷/]/i, "divide", "÷"],
];

/** "What is 6 times 7?" -> multiply 6 by 7; "and plus 3?" -> add 3 to the last answer in the conversation. */
function arithmetic(text: string, history: LlmMessage[]): JsonObject | undefined {
  const operator = OPERATORS.find(([pattern]) => pattern.test(text))?.[1];
  const numbers = (text.match(/(?<![\d.])-?\d+(?:\.\d+)?/g) ?? []).map(Number);
  if (operator === undefined || numbers.length === 0) return undefined;
  if (numbers.length === 1) {
    const previous = [...history].reverse().find((message) => message.role === "assistant" && /=\s*-?\d/.test(message.content));
    const lastResult = previous?.content.match(/=\s*(-?\d+(?:\.\d+)?)/)?.[1];
    if (lastResult === undefined) return undefined;
    numbers.unshift(Number(lastResult));
  }
  return { operator, x: numbers[0]!, y: numbers[1]! };
}

function ledgerEntry(text: string): JsonObject {
  const amount = text.match(/-?\d+(?:\.\d+)?/)?.[0];
  return amount === undefined || /\btotal\b/i.test(text) ? { action: "total" } : { action: "add", amount: Number(amount) };
}

/** Everyday greetings, in their script and as they are said. */
const GREETINGS: Record<string, string> = {
  welsh: "Shwmae! (shoo-my)",
  breton: "Demat! (day-mat)",
  irish: "Dia duit! (dee-ah gwit)",
  french: "Bonjour ! (bon-zhoor)",
  spanish: "¡Hola! (oh-la)",
  german: "Hallo! (ha-low)",
  italian: "Ciao! (chow)",
  japanese: "こんにちは (konnichiwa)",
  greek: "Γεια σου! (ya-soo)",
  hindi: "नमस्ते (namaste)",
  swahili: "Jambo! (jahm-bo)",
};

/** Where a trip planner would know which language to greet in. */
const CITY_LANGUAGES: Record<string, string> = {
  cardiff: "welsh", rennes: "breton", brest: "breton", dublin: "irish", paris: "french", madrid: "spanish",
  berlin: "german", rome: "italian", tokyo: "japanese", athens: "greek", delhi: "hindi", nairobi: "swahili",
};

function languageIn(text: string): string | undefined {
  const named = (words: string[]) => text.match(new RegExp(`\\b(${words.join("|")})\\b`, "i"))?.[1]?.toLowerCase();
  const word = named(Object.keys(GREETINGS)) ?? CITY_LANGUAGES[named(Object.keys(CITY_LANGUAGES)) ?? ""];
  if (word !== undefined) return word[0]!.toUpperCase() + word.slice(1);
  // A single word ("Basque") is a language name too, even one the phrasebook lacks.
  const single = text.trim().match(/^([A-Za-z]+)[.!?]?$/)?.[1];
  return single === undefined || /^(hi|hello|hey|help)$/i.test(single) ? undefined : single[0]!.toUpperCase() + single.slice(1).toLowerCase();
}

// ---- answers ----------------------------------------------------------------------------------------------------

const SYMBOLS = Object.fromEntries(OPERATORS.map(([, name, symbol]) => [name, symbol]));

/** The front man's answer once its tools have answered: one clean sentence per result. */
function answerFromTools(request: ScriptedRequest, round: ToolRound[]): string {
  return round.map(({ call, result }) => sentenceFor(call, result, request)).join("\n\n");
}

function sentenceFor(call: LlmToolCall, result: string, request: ScriptedRequest): string {
  const args = call.arguments;
  const value = parsed(result);
  if (typeof args["operator"] === "string") {
    if (typeof value?.["result"] !== "number") return `The calculator could not work that out: ${result}`;
    return `${String(args["x"])} ${SYMBOLS[args["operator"]] ?? args["operator"]} ${String(args["y"])} = ${value["result"]}`;
  }
  if (value !== undefined && "running_total" in value) {
    const currency = String(value["currency"] ?? "");
    const total = Number(value["running_total"]);
    const recorded = args["action"] === "add" ? `Recorded ${String(args["amount"])} ${currency}; the` : "The";
    return `${JSON.stringify({ total, currency })} ${recorded} running total is ${total} ${currency}.`;
  }
  // A greeting straight from the phrasebook says which language it is; a network's answer already does.
  if (typeof args["language"] === "string") return result.includes("That is hello") ? result : `${result} That is hello in ${args["language"]}.`;
  // Another agent's or network's answer, passed on under its name when the front man asked several.
  const answer = result.replace(/^Error: /, "");
  return request.tools.length > 1 ? `${call.name}: ${answer}` : answer;
}

function parsed(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

/** A sub-agent answers from its instructions, as a model playing that part would. */
function subAgentAnswer(request: ScriptedRequest, input: string): string {
  const instructions = request.system ?? "";
  const language = input.match(/^The language is ([^.]+)\./)?.[1];
  if (language !== undefined) return GREETINGS[language.toLowerCase()] ?? `Hello! (${language} is not in my phrasebook yet.)`;
  if (/opinion|review/i.test(instructions)) return "Essential. Side two's medley is the band at its most ambitious, and it still sounds fresh.";
  if (/facts|dates/i.test(instructions)) return "Abbey Road came out on Apple Records on 26 September 1969, the last album the Beatles recorded together.";
  if (/cost/i.test(instructions)) return "Day 1: 150 EUR (room and meals). Day 2: 120 EUR. Total: 270 EUR.";
  return `Noted: ${input}`;
}

/** The front man when no tool fits the words: it says what it can do, from its tools' descriptions. */
function frontManAnswer(request: ScriptedRequest, userText: string): string {
  if (request.tools.some((tool) => "language" in ((tool.parameters["properties"] ?? {}) as JsonObject))) {
    return "Hello! Name a language (Welsh, Breton, Japanese, ...) and I will greet you in it.";
  }
  if (request.tools.some((tool) => "operator" in ((tool.parameters["properties"] ?? {}) as JsonObject))) {
    return 'Ask me a calculation with two numbers, such as "What is 6 times 7?".';
  }
  return userText === "" ? "Hello!" : `You said: ${userText}`;
}
