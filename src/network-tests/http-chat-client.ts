import { Code } from "@connectrpc/connect";
import type { JsonObject, JsonValue } from "../agents/hocon.js";
import type { FinalAnswer } from "./assertions.js";
import type { ChatFilterType } from "./test-case.js";
import { isJsonObject } from "../json.js";

/**
 * One StreamingChat over the REST API (`POST /api/v1/{agent}/streaming_chat`, answered with json-lines), as any
 * neuro-san HTTP client makes it. Works against Axon and neuro-san alike.
 */

export interface StreamingChatRequest {
  agent: string;
  text: string;
  slyData: JsonObject | undefined;
  chatFilter: ChatFilterType;
  /** The previous answer's chat_context, to continue that conversation. */
  chatContext: JsonValue | undefined;
  /** Request metadata, sent as headers. */
  headers: Record<string, string>;
  signal: AbortSignal;
}

export interface ChatAnswer extends FinalAnswer {
  chatContext: JsonValue | undefined;
}

/** A google.rpc.Status from the server, or a failure to talk to it at all. */
export class ChatCallError extends Error {
  override readonly name = "ChatCallError";
  constructor(
    message: string,
    readonly status: { httpStatus?: number; code?: number; codeName?: string; reason?: string } = {},
  ) {
    super(message);
  }
}

export async function streamingChat(serverUrl: string, request: StreamingChatRequest): Promise<ChatAnswer> {
  const url = new URL(`api/v1/${encodeURIComponent(request.agent)}/streaming_chat`, withTrailingSlash(serverUrl));
  const body: JsonObject = {
    user_message: { text: request.text },
    chat_filter: { chat_filter_type: request.chatFilter },
  };
  if (request.slyData !== undefined) body.sly_data = request.slyData;
  if (request.chatContext !== undefined) body.chat_context = request.chatContext;

  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { ...request.headers, "content-type": "application/json", accept: "application/json-lines" },
      body: JSON.stringify(body),
      signal: request.signal,
    });
  } catch (error) {
    if (request.signal.aborted) throw error;
    throw new ChatCallError(`cannot reach ${url.origin}: ${describeFetchFailure(error)}`);
  }
  if (!response.ok) throw await httpStatusError(response);
  if (!response.body) throw new ChatCallError("the server answered 200 without a body");

  let final: JsonObject | undefined;
  let lineNumber = 0;
  for await (const line of jsonLines(response.body)) {
    lineNumber++;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new ChatCallError(`line ${lineNumber} of the stream is not JSON: ${line.slice(0, 200)}`);
    }
    if (!isJsonObject(parsed)) throw new ChatCallError(`line ${lineNumber} of the stream is not a JSON object`);
    // An error after the headers went out arrives as one more line: a google.rpc.Status, not a ChatResponse.
    if ("code" in parsed && !("response" in parsed)) throw statusError(parsed, undefined);
    const message = parsed.response;
    // The answer is the AGENT_FRAMEWORK message without origin; others may carry one under MAXIMAL.
    if (isJsonObject(message) && isFramework(message) && (final === undefined || !hasOrigin(message) || hasOrigin(final))) {
      final = message;
    }
  }
  if (!final) throw new ChatCallError("the stream ended without a final AGENT_FRAMEWORK message");
  return {
    text: typeof final.text === "string" ? final.text : "",
    slyData: isJsonObject(final.sly_data) ? final.sly_data : undefined,
    structure: isJsonObject(final.structure) ? final.structure : undefined,
    chatContext: final.chat_context,
  };
}

/** Splits the body on newlines and skips blank lines, as json-lines clients do. */
async function* jsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const lines = buffered.split("\n");
      buffered = done ? "" : (lines.pop() ?? "");
      for (const line of lines) if (line.trim() !== "") yield line;
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

async function httpStatusError(response: Response): Promise<ChatCallError> {
  const text = await response.text().catch(() => "");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isJsonObject(parsed) && "code" in parsed) return statusError(parsed, response.status);
  const excerpt = text.trim().slice(0, 200);
  return new ChatCallError(`HTTP ${response.status} ${response.statusText}${excerpt ? `: ${excerpt}` : ""}`, {
    httpStatus: response.status,
  });
}

/** `NOT_FOUND (5): No agent named x [reason AGENT_NOT_FOUND] (HTTP 404)` */
function statusError(status: JsonObject, httpStatus: number | undefined): ChatCallError {
  const code = typeof status.code === "number" ? status.code : undefined;
  const codeName = code === undefined ? String(status.code) : codeNameOf(code);
  const message = typeof status.message === "string" ? status.message : "(no message)";
  const errorInfo = Array.isArray(status.details)
    ? status.details.find((detail) => isJsonObject(detail) && String(detail["@type"]).endsWith("google.rpc.ErrorInfo"))
    : undefined;
  const reason = isJsonObject(errorInfo) && typeof errorInfo.reason === "string" ? errorInfo.reason : undefined;
  const text = [
    `${codeName}${code === undefined ? "" : ` (${code})`}: ${message}`,
    reason === undefined ? "" : ` [reason ${reason}]`,
    httpStatus === undefined ? "" : ` (HTTP ${httpStatus})`,
  ].join("");
  return new ChatCallError(text, { httpStatus, code, codeName, reason });
}

/** Connect's Code enum names codes in PascalCase (`NotFound`); google.rpc writes NOT_FOUND. */
function codeNameOf(code: number): string {
  const name = (Code as unknown as Record<number, string | undefined>)[code];
  if (code === 0) return "OK";
  return name === undefined ? `code ${code}` : name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

function describeFetchFailure(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function isFramework(message: JsonObject): boolean {
  return message.type === "AGENT_FRAMEWORK" || message.type === 101;
}

function hasOrigin(message: JsonObject): boolean {
  return Array.isArray(message.origin) && message.origin.length > 0;
}

function withTrailingSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}
