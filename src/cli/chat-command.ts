import { createInterface } from "node:readline";
import type { CliContext, Json } from "./context.js";
import { dim, printJson, printLine, text } from "./output.js";
import { streamingChatOver } from "./chat-transports.js";
import { CliFailure, ExitStatus, failureLine, toCliFailure } from "./failure.js";

export interface ChatOptions {
  protocol: string;
  slyData?: Json;
  maximal: boolean;
  /** Non-interactive turns, sent in order. */
  messages: string[];
}

/**
 * `axon chat <network>`: the server keeps no conversation, so each turn sends back the chat_context of the previous
 * answer. sly_data is sent on the first turn and then carried from each answer.
 */
export async function chat(context: CliContext, network: string, options: ChatOptions): Promise<void> {
  const streamingChat = streamingChatOver(options.protocol, context.url);
  const finals: Json[] = [];
  let chatContext: unknown;
  let slyData: unknown = options.slyData;
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
    let final: Json | undefined;
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
    if (!final) throw new CliFailure("the chat ended without an answer", ExitStatus.server);
    finals.push(final);
    if (final.chat_context !== undefined) chatContext = final.chat_context;
    if (final.sly_data !== undefined) slyData = final.sly_data;
    if (!context.json) printLine(text(final.text) || JSON.stringify(final.structure ?? {}));
  };

  if (options.messages.length > 0) {
    for (const message of options.messages) await turn(message);
  } else {
    // A failed turn is reported and the session goes on (the context of the last answer still holds); the exit
    // status says whether the last turn failed.
    let lastTurn: CliFailure | undefined;
    await interactive(
      network,
      (line) =>
        turn(line).then(
          () => void (lastTurn = undefined),
          (error: unknown) => {
            lastTurn = toCliFailure(error, context.url);
            process.stderr.write(failureLine(lastTurn));
          },
        ),
      abort,
    );
    if (lastTurn) process.exitCode = lastTurn.exitStatus;
  }
  if (context.json) printJson(finals);
}

async function interactive(network: string, turn: (text: string) => Promise<void>, abort: AbortController): Promise<void> {
  const tty = process.stdin.isTTY === true;
  // The prompt goes to stderr: stdout carries only answers.
  const readline = createInterface({ input: process.stdin, output: process.stderr, terminal: tty, prompt: tty ? "> " : "" });
  readline.on("SIGINT", () => {
    abort.abort();
    readline.close();
  });
  if (tty) process.stderr.write(`Chatting with ${network}. Ctrl-D ends.\n`);
  readline.prompt();
  try {
    // Ends at Ctrl-D or the end of piped input.
    for await (const line of readline) {
      if (line.trim() !== "") await turn(line);
      readline.prompt();
    }
  } finally {
    readline.close();
  }
}

function originPath(message: Json): string {
  const origin = (message.origin as Json[] | undefined) ?? [];
  return origin.map((step) => text(step.tool)).join("/") || "-";
}

function describe(message: Json): string {
  if (message.text !== undefined && message.text !== "") return text(message.text);
  return JSON.stringify(message.structure ?? message.tool_result_origin ?? {});
}
