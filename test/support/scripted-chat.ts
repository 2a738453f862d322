import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { ChatRunner, ChatTurn } from "../../src/agents/chat-runner.js";
import { AxonError } from "../../src/errors.js";
import {
  ChatMessage_ChatMessageType as MessageType,
  ChatMessageSchema,
  type ChatMessage,
} from "../../src/gen/neuro_san/api/grpc/chat_pb.js";

/**
 * A test-only message source for StreamingChat's transport: it answers like a network would (notes, an AI
 * message, then the final AGENT_FRAMEWORK message) without any LLM. The text steers it:
 *   "refuse"       -> throws before the stream starts
 *   "fail midway"  -> fails after the first messages went out
 *   "hang"         -> waits until the chat is cancelled (records it in `cancelled`)
 *   "slow N"       -> sends N progress messages 100 ms apart before answering
 */
export class ScriptedChats implements ChatRunner {
  readonly turns: ChatTurn[] = [];
  readonly cancelled: ChatTurn[] = [];
  private waiters: (() => void)[] = [];

  async start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>> {
    this.turns.push(turn);
    if (turn.text === "refuse") {
      throw new AxonError(Code.FailedPrecondition, "SCRIPTED_REFUSAL", "the scripted network refuses this turn");
    }
    return this.messages(turn);
  }

  /** Resolves once `count` chats have been cancelled. */
  whenCancelled(count = 1): Promise<void> {
    if (this.cancelled.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(() => this.cancelled.length >= count && resolve()));
  }

  private async *messages(turn: ChatTurn): AsyncGenerator<ChatMessage> {
    const frontMan = [{ tool: turn.network.frontMan.name, instantiationIndex: 1 }];
    yield message({ type: MessageType.AGENT, origin: frontMan, structure: { invoking_start: true } });
    yield message({ type: MessageType.AI, origin: frontMan, text: `thinking about ${turn.text}` });
    yield message({ type: MessageType.AGENT, origin: frontMan }); // empty: never streamed
    if (turn.text === "fail midway") {
      throw new AxonError(Code.Unavailable, "SCRIPTED_FAILURE", "the scripted network failed midway");
    }
    if (turn.text === "hang") {
      await new Promise<void>((resolve) => turn.signal.addEventListener("abort", () => resolve(), { once: true }));
      this.cancelled.push(turn);
      this.waiters.forEach((wake) => wake());
      return;
    }
    const slow = /^slow (\d+)$/.exec(turn.text);
    for (let i = 0; slow && i < Number(slow[1]); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      yield message({ type: MessageType.AGENT_PROGRESS, origin: frontMan, structure: { step: i + 1 } });
    }
    const previous = turn.chatContext?.chatHistories[0]?.messages ?? [];
    const answer = `echo ${turn.text} (turn ${previous.filter((m) => m.type === MessageType.HUMAN).length + 1})`;
    yield message({
      type: MessageType.AGENT_FRAMEWORK,
      text: answer,
      slyData: turn.slyData,
      chatContext: {
        chatHistories: [
          {
            origin: frontMan,
            messages: [
              ...previous,
              { type: MessageType.HUMAN, text: turn.text, origin: frontMan },
              { type: MessageType.AI, text: answer, origin: frontMan },
            ],
          },
        ],
      },
    });
  }
}

function message(init: Parameters<typeof create<typeof ChatMessageSchema>>[1]): ChatMessage {
  return create(ChatMessageSchema, init);
}
