import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Reply, ScriptedRequest } from "./script.js";

/** One provider's HTTP dialect: how requests look and how replies and errors are written. */
export interface Wire {
  matches(pathname: string): boolean;
  credential(headers: IncomingHttpHeaders): string | undefined;
  /** `pathname` carries what some APIs put in the path (Bedrock: the model, and whether to stream). */
  parse(body: JsonObject, pathname: string): ScriptedRequest;
  /** Writes the whole reply, as one JSON body or as server-sent events when the request asked to stream. */
  write(response: ServerResponse, reply: Reply, request: ScriptedRequest, body: JsonObject, serial: number): void;
  /** Like the real APIs, a 401 quotes the key it got: tests prove Axon never passes provider text on. */
  errorBody(status: number, credential?: string): JsonObject;
  /** Headers an error carries besides its body (Bedrock names the error's type in one). */
  errorHeaders?(status: number): Record<string, string>;
}

export function writeJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

export function startEvents(response: ServerResponse) {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : ""))
    .join("");
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function bearer(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  return authorization?.startsWith("Bearer ") ? authorization.slice("Bearer ".length) : undefined;
}
