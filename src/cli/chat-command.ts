import { createInterface } from "node:readline";
import type { CliContext, Json } from "./context.js";
import { dim, printJson, printLine, startSpinner, text } from "./output.js";
import { streamingChatOver } from "./chat-transports.js";
import { CliFailure, ExitStatus, failureLine } from "./cli-failure.js";
import { toCliFailure } from "./failure.js";

export interface ChatOptions {
  protocol: string;
  slyData?: Json;
  maximal: boolean;
  /** Non-interactive turns, sent in order. */
  messages: string[];
}

/** Words that end an interactive chat instead of being sent (neuro-san's CLI ends on `quit` too). */
const ENDING_WORDS = new Set(["quit", "exit"]);

/**
 * `axon chat <network>`: the server keeps no conversation, so each turn sends back the chat_context of the previous
 * answer, and the sly_data the user gave with what the network returned merged over it (a network returns only
 * what its to_upstream policy lets out, never the user's own keys).
 */
export async function chat(context: CliContext, network: string, options: ChatOptions): Promise<void> {
  const streamingChat = streamingChatOver(options.protocol, context.url);
  const finals: Json[] = [];
  let chatContext: unknown;
  let slyData: Json | undefined = options.slyData;
  // Thinking goes where it cannot spoil the one JSON document of --json.
  const thinking = context.json ? process.stderr : process.stdout;
  const abort = new AbortController();

  const turn = async (userText: string): Promise<void> => {
    const request: Json = {
      user_message: { text: userText },
      ...(chatContext === undefined ? {} : { chat_context: chatContext }),
      ...(slyData === undefined ? {} : { sly_data: slyData }),
      ...(options.maximal ? { chat_filter: { chat_filter_type: "MAXIMAL" } } : {}),
    };
    // --maximal shows its own progress, line by line.
    const spinner = options.maximal || context.json ? undefined : startSpinner(`${network} is thinking…`);
    let final: Json | undefined;
    try {
      for await (const chunk of streamingChat(network, request, abort.signal)) {
        const message = chunk.response as Json | undefined;
        if (!message) continue;
        // The answer is the one AGENT_FRAMEWORK message without an origin; everything else is the network thinking.
        if (message.type === "AGENT_FRAMEWORK" && message.origin === undefined) {
          final = message;
        } else if (options.maximal) {
          thinking.write(`${dim(`[${originPath(message)}] ${text(message.type)}: ${describe(message)}`, thinking)}\n`);
        }
      }
    } finally {
      spinner?.stop();
    }
    if (!final) throw new CliFailure("the chat ended without an answer", ExitStatus.server);
    finals.push(final);
    if (final.chat_context !== undefined) chatContext = final.chat_context;
    if (final.sly_data !== undefined) slyData = { ...slyData, ...(final.sly_data as Json) };
    if (!context.json) printLine(text(final.text) || JSON.stringify(final.structure ?? {}));
  };

  try {
    if (options.messages.length > 0) {
      for (const message of options.messages) await turn(message);
    } else {
      await interactive(network, context, turn, abort);
    }
  } finally {
    // The answers so far, even when a later turn failed: the failure follows on stderr.
    if (context.json) printJson(finals);
  }
}

/**
 * One turn per line until Ctrl-D, the end of piped input, or `quit`. A failed turn is reported and the session goes
 * on (the context of the last answer still holds); the exit status says whether the last turn failed.
 */
async function interactive(network: string, context: CliContext, turn: (text: string) => Promise<void>, abort: AbortController): Promise<void> {
  const tty = process.stdin.isTTY === true;
  // The prompt goes to stderr: stdout carries only answers.
  const readline = createInterface({ input: process.stdin, output: process.stderr, terminal: tty, prompt: tty ? "> " : "" });
  readline.on("SIGINT", () => {
    abort.abort();
    readline.close();
  });
  // Piped input can end while a turn is still answering; on Node 24 a prompt after that throws (ERR_USE_AFTER_CLOSE).
  let inputEnded = false;
  readline.on("close", () => (inputEnded = true));
  if (tty) process.stderr.write(`Chatting with ${network}. Type quit or press Ctrl-D to end.\n`);
  let lastTurn: CliFailure | undefined;
  readline.prompt();
  try {
    for await (const line of readline) {
      const userText = line.trim();
      if (ENDING_WORDS.has(userText.toLowerCase())) break;
      if (userText !== "") {
        lastTurn = await turn(line).then(
          () => undefined,
          (error: unknown) => toCliFailure(error, context.url),
        );
        if (lastTurn) process.stderr.write(failureLine(lastTurn));
      }
      if (!inputEnded) readline.prompt();
    }
  } finally {
    readline.close();
  }
  if (lastTurn) process.exitCode = lastTurn.exitStatus;
}

function originPath(message: Json): string {
  const origin = (message.origin as Json[] | undefined) ?? [];
  return origin.map((step) => text(step.tool)).join("/") || "-";
}

function describe(message: Json): string {
  if (message.text !== undefined && message.text !== "") return text(message.text);
  return JSON.stringify(message.structure ?? message.tool_result_origin ?? {});
}
