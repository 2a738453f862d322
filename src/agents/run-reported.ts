import type { JsonObject } from "@bufbuild/protobuf";
import { ChatMessage_ChatMessageType as MessageType, type Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { ChatSession } from "./chat-session.js";

/** A tool run as MAXIMAL shows it: an AGENT note with its arguments, then one with its output, under its own origin. */
export async function runReported(session: ChatSession, origin: Origin[], args: JsonObject, run: () => Promise<string>): Promise<string> {
  session.emit({ type: MessageType.AGENT, origin, structure: { tool_start: true, tool_args: args } });
  const text = await run();
  session.emit({ type: MessageType.AGENT, origin, structure: { tool_end: true, tool_output: text } });
  return text;
}
