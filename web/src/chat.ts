import type { JsonObject } from "@bufbuild/protobuf";
import { ChatFilter_ChatFilterType as ChatFilterType } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { ChatMessage_ChatMessageType as MessageType, type ChatContext } from "../../src/gen/neuro_san/api/grpc/chat_pb.js";
import { agents, describeError, isCanceled } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";
import type { ThinkingLog } from "./thinking.js";

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

export interface ChatPanelOptions {
  thinking: ThinkingLog;
  /** The agent working now (the last of a message's origin), and undefined once the answer is in. */
  onActivity(agent: string | undefined): void;
  /** A sly_data object to start from, offered when the network declares a sly_data schema. */
  slyDataTemplate?: JsonObject;
}

/**
 * A conversation with one network. The server keeps nothing between turns: the chat_context of each answer is
 * sent back with the next message, and "New conversation" drops it. The sly_data editor's content goes with every
 * turn, as the CLI sends it.
 */
export class ChatPanel {
  readonly root: HTMLElement;
  private chatContext: ChatContext | undefined;
  /** What the network returned in sly_data so far: sent again with the next turn, over the editor's content. */
  private carried: JsonObject = {};
  private running: AbortController | undefined;
  private readonly conversation = element("ol", { class: "conversation", "aria-live": "polite", "aria-label": "conversation" });
  private readonly message: HTMLTextAreaElement;
  private readonly slyEditor = element("textarea", { name: "sly_data", rows: "3", placeholder: '{"key": "value"}', spellcheck: "false", "aria-label": "sly_data, a JSON object" });
  private readonly slyError = element("p", { class: "sly-error", role: "alert" });
  private readonly send = element("button", { type: "submit", class: "primary" }, "Send");

  constructor(
    private readonly network: string,
    private readonly options: ChatPanelOptions,
  ) {
    this.message = element("textarea", { name: "message", rows: "2", placeholder: `Message ${network}`, "aria-label": `Message to ${network}`, "aria-describedby": `${network}-keys` });
    const template = options.slyDataTemplate;
    const form = element(
      "form",
      { class: "chat-form" },
      this.message,
      element("p", { class: "keys muted", id: `${network}-keys` }, element("kbd", {}, "Enter"), " sends · ", element("kbd", {}, "Shift"), "+", element("kbd", {}, "Enter"), " new line"),
      element(
        "details",
        { class: "sly-data", ...(template ? { open: true } : {}) },
        element("summary", {}, "sly_data", template ? element("span", { class: "muted" }, " · this network reads it") : null),
        this.slyEditor,
        template ? button("Fill from the schema", () => (this.slyEditor.value = prettyJson(template)), { class: "secondary small" }) : null,
        this.slyError,
      ),
      element("div", { class: "actions" }, this.send, button("New conversation", () => this.reset(), { class: "secondary new-conversation" })),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.ask();
    });
    this.message.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    const empty = element("li", { class: "muted empty-state" }, `Ask ${network} something.`);
    this.conversation.append(empty);
    this.root = element("div", { class: "chat-panel" }, this.conversation, form);
  }

  /** Puts a sample question in the message box, ready to send or edit. */
  suggest(text: string): void {
    this.message.value = text;
    this.message.focus();
  }

  private reset(): void {
    this.running?.abort();
    this.chatContext = undefined;
    this.carried = {};
    this.conversation.replaceChildren(element("li", { class: "muted empty-state" }, `Ask ${this.network} something.`));
    this.options.thinking.clear();
    this.message.focus();
  }

  private append(item: HTMLElement): void {
    this.conversation.querySelector(".empty-state")?.remove();
    this.conversation.append(item);
    this.conversation.scrollTop = this.conversation.scrollHeight;
  }

  private async ask(): Promise<void> {
    const text = this.message.value.trim();
    if (!text || this.running) return;
    const { slyData: given, error } = parseSlyData(this.slyEditor.value);
    this.slyError.textContent = error ?? "";
    if (error) return;
    const slyData = given || Object.keys(this.carried).length > 0 ? { ...given, ...this.carried } : undefined;

    this.message.value = "";
    this.append(element("li", { class: "message human" }, element("p", {}, text)));
    const answer = element("div", { class: "answer pending" }, element("span", { class: "typing", "aria-label": "thinking" }, "thinking…"));
    this.append(element("li", { class: "message agent" }, answer));
    const think = this.options.thinking.startTurn(text);

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
        if (response.type === MessageType.AGENT_FRAMEWORK && response.origin.length === 0) {
          answered = true;
          this.chatContext = response.chatContext;
          if (response.slyData) this.carried = { ...this.carried, ...response.slyData };
          answer.replaceChildren(...[element("p", {}, response.text), structureOf(response.structure), returnedSlyData(response.slyData)].filter((part) => part !== null));
          answer.classList.remove("pending");
        } else {
          think(response);
          this.options.onActivity(response.origin.at(-1)?.tool);
        }
      }
      if (!answered) throw new Error("the stream ended without an answer");
    } catch (error) {
      answer.classList.remove("pending");
      answer.classList.add("error");
      answer.replaceChildren(element("p", {}, isCanceled(error) ? "(stopped)" : describeError(error)));
    } finally {
      if (this.running === running) this.running = undefined;
      this.send.disabled = false;
      this.options.onActivity(undefined);
      this.conversation.scrollTop = this.conversation.scrollHeight;
    }
  }
}

function structureOf(structure: JsonObject | undefined): HTMLElement | null {
  if (!structure || Object.keys(structure).length === 0) return null;
  return element("details", { class: "structure" }, element("summary", {}, "structure"), element("pre", {}, prettyJson(structure)));
}

function returnedSlyData(slyData: JsonObject | undefined): HTMLElement | null {
  if (!slyData || Object.keys(slyData).length === 0) return null;
  return element("details", { class: "returned-sly-data" }, element("summary", {}, "sly_data returned"), element("pre", {}, prettyJson(slyData)));
}
