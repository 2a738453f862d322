import { ChatMessage_ChatMessageType as MessageType, type ChatMessage, type Origin } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { element, prettyJson } from "./dom.js";

/**
 * The network thinking, turn by turn: every message a MAXIMAL chat streams besides the answer, labelled by its
 * type's name (HUMAN, AI, AGENT, AGENT_TOOL_RESULT, ...) and by the path of agents it came from.
 */
export class ThinkingLog {
  readonly root = element("ol", { class: "thinking-log", "aria-live": "off" });
  private readonly empty = element("p", { class: "muted empty-state" }, "Each agent's messages, tool calls and results show here while the network works.");
  readonly container = element("div", { class: "thinking" }, this.empty, this.root);
  private turns = 0;

  /** A new group for one turn of the conversation; messages go into it as they stream. */
  startTurn(userText: string): (message: ChatMessage) => void {
    this.empty.hidden = true;
    const steps = element("ol", { class: "steps" });
    const turn = element("li", { class: "turn" }, element("h4", {}, `Turn ${++this.turns}`, element("span", { class: "turn-text" }, userText)), steps);
    this.root.append(turn);
    return (message) => {
      steps.append(thinkingStep(message));
      // Follow the newest step inside the pane only: scrollIntoView would scroll the page under the chat too.
      this.container.scrollTop = this.container.scrollHeight;
    };
  }

  clear(): void {
    this.root.replaceChildren();
    this.turns = 0;
    this.empty.hidden = false;
  }
}

/** The name of a message's type, as neuro-san's documentation writes it. */
export function typeName(type: MessageType): string {
  return MessageType[type] ?? `TYPE_${type}`;
}

/** `MusicNerd › Critic#2`: the agents a message came through, with the instance when an agent ran more than once. */
export function originPath(origin: readonly Origin[]): string {
  return origin.map((step) => (step.instantiationIndex > 1 ? `${step.tool}#${step.instantiationIndex}` : step.tool)).join(" › ");
}

function thinkingStep(message: ChatMessage): HTMLElement {
  const name = typeName(message.type);
  const from = message.type === MessageType.AGENT_TOOL_RESULT && message.toolResultOrigin.length > 0 ? `from ${originPath(message.toolResultOrigin)}` : "";
  const body = message.text
    ? element("p", { class: "step-text" }, message.text)
    : message.structure && Object.keys(message.structure).length > 0
      ? element("pre", {}, prettyJson(message.structure))
      : null;
  return element(
    "li",
    { class: `step ${name.toLowerCase()}`, "data-type": name },
    element("div", { class: "step-head" }, element("span", { class: "step-type" }, name), element("span", { class: "step-origin" }, originPath(message.origin)), from && element("span", { class: "step-from" }, from)),
    body,
  );
}
