import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Reply, ScriptedRequest } from "./script.js";

/** One provider's HTTP dialect: how requests look and how replies and errors are written. */
export interface Wire {
  matches(pathname: string): boolean;
  credential(headers: IncomingHttpHeaders): string | undefined;
  parse(body: JsonObject): ScriptedRequest;
  /** Writes the whole reply, as one JSON body or as server-sent events when the request asked to stream. */
  write(response: ServerResponse, reply: Reply, request: ScriptedRequest, body: JsonObject, serial: number): void;
  /** Like the real APIs, a 401 quotes the key it got: tests prove Axon never passes provider text on. */
  errorBody(status: number, credential?: string): JsonObject;
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
