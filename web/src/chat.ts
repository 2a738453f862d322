import type { JsonObject } from "@bufbuild/protobuf";
import { ChatFilter_ChatFilterType as ChatFilterType } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatContext, type ChatMessage } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { agents, describeError, isCanceled } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";

/** Parses the sly_data editor: empty is none; anything but a JSON object is refused before sending. */
export function parseSlyData(text: string): { slyData?: JsonObject; error?: string } {
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `sly_data is not JSON: ${(error as Error).message}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "sly_data must be a JSON object" };
  return { slyData: value as JsonObject };
}

/**
 * A conversation with one network. The server keeps nothing between turns: the chat_context of each answer is
 * sent back with the next message, and "New conversation" drops it.
 */
export class ChatPanel {
  readonly root: HTMLElement;
  private chatContext: ChatContext | undefined;
  private running: AbortController | undefined;
  private readonly conversation = element("div", { class: "conversation", "aria-live": "polite" });
  private readonly message = element("textarea", { name: "message", rows: "2", placeholder: "Message", required: true });
  private readonly slyEditor = element("textarea", { name: "sly_data", rows: "3", placeholder: '{"key": "value"}', spellcheck: "false" });
  private readonly slyError = element("div", { class: "sly-error", role: "alert" });
  private readonly send = element("button", { type: "submit" }, "Send");

  constructor(private readonly network: string) {
    const form = element(
      "form",
      { class: "chat-form" },
      this.message,
      element("details", { class: "sly-data" }, element("summary", {}, "sly_data"), this.slyEditor, this.slyError),
      element("div", { class: "actions" }, this.send, button("New conversation", () => this.reset(), { class: "new-conversation" })),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.ask();
    });
    this.message.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    this.root = element("div", { class: "chat-panel" }, this.conversation, form);
  }

  /** Stops a running answer (the network was left). */
  close(): void {
    this.running?.abort();
  }

  private reset(): void {
    this.running?.abort();
    this.chatContext = undefined;
    this.conversation.replaceChildren();
  }

  private async ask(): Promise<void> {
    const text = this.message.value.trim();
    if (!text || this.running) return;
    const { slyData, error } = parseSlyData(this.slyEditor.value);
    this.slyError.textContent = error ?? "";
    if (error) return;

    this.message.value = "";
    this.conversation.append(element("div", { class: "message human" }, text));
    const steps = element("ol");
    const summary = element("summary", {}, "Thinking");
    const thinking = element("details", { class: "thinking", open: true }, summary, steps);
    const answer = element("div", { class: "answer pending" }, "…");
    this.conversation.append(element("div", { class: "message agent" }, thinking, answer));

    const running = (this.running = new AbortController());
    this.send.disabled = true;
    try {
      const stream = agents.streamingChat(
        {
          agentName: this.network,
          userMessage: { type: MessageType.HUMAN, text },
          chatFilter: { chatFilterType: ChatFilterType.MAXIMAL },
          ...(slyData ? { slyData } : {}),
          ...(this.chatContext ? { chatContext: this.chatContext } : {}),
        },
        { signal: running.signal },
      );
      let answered = false;
      for await (const { response } of stream) {
        if (!response) continue;
        if (response.type === MessageType.AGENT_FRAMEWORK) {
          answered = true;
          this.chatContext = response.chatContext;
          answer.replaceChildren(response.text, returnedSlyData(response.slyData));
          answer.classList.remove("pending");
        } else {
          steps.append(thinkingStep(response));
          summary.textContent = `Thinking · ${steps.childElementCount}`;
        }
      }
      if (!answered) throw new Error("the stream ended without an answer");
      thinking.open = false;
    } catch (error) {
      answer.classList.remove("pending");
      answer.classList.add("error");
      answer.textContent = isCanceled(error) ? "(stopped)" : describeError(error);
    } finally {
      if (this.running === running) this.running = undefined;
      this.send.disabled = false;
    }
  }
}

const typeLabels: Partial<Record<MessageType, string>> = {
  [MessageType.AI]: "AI",
  [MessageType.AGENT]: "AGENT",
  [MessageType.AGENT_TOOL_RESULT]: "TOOL RESULT",
  [MessageType.AGENT_PROGRESS]: "PROGRESS",
  [MessageType.SYSTEM]: "SYSTEM",
};

function thinkingStep(message: ChatMessage): HTMLElement {
  const origin = message.origin.map((origin) => origin.tool).join(" › ");
  const body = message.text || (message.structure ? prettyJson(message.structure) : "");
  return element(
    "li",
    { class: `step ${(typeLabels[message.type] ?? "OTHER").toLowerCase().replace(" ", "-")}` },
    element("span", { class: "step-type" }, typeLabels[message.type] ?? String(message.type)),
    origin && element("span", { class: "step-origin" }, origin),
    element("pre", {}, body),
  );
}

function returnedSlyData(slyData: JsonObject | undefined): HTMLElement | string {
  if (!slyData || Object.keys(slyData).length === 0) return "";
  return element("details", { class: "returned-sly-data" }, element("summary", {}, "sly_data returned"), element("pre", {}, prettyJson(slyData)));
}
