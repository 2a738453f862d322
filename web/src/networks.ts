import type { AgentInfo } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { ChatPanel } from "./chat.js";
import { agents, concierge, describeError } from "./clients.js";
import { button, element } from "./dom.js";
import { renderGraph, type NetworkGraph } from "./graph.js";
import { layoutGraph } from "./graph-layout.js";
import { functionDetails, sampleQueries, slyDataTemplate } from "./network-info.js";
import { ThinkingLog } from "./thinking.js";

/**
 * The networks tab: the public networks (Concierge List); picking one shows what it takes, its agents as a graph,
 * a chat and the agents' thinking. Each network keeps its view, so a conversation survives a look at another one.
 */
export async function showNetworks(): Promise<void> {
  const list = document.querySelector<HTMLUListElement>("#network-list")!;
  const views = document.querySelector<HTMLElement>("#network-views")!;
  const opened = new Map<string, HTMLElement>();

  function select(network: AgentInfo, item: HTMLElement): void {
    for (const other of list.querySelectorAll("[aria-current]")) other.removeAttribute("aria-current");
    item.setAttribute("aria-current", "true");
    let view = opened.get(network.agentName);
    if (!view) {
      view = networkView(network);
      opened.set(network.agentName, view);
      views.append(view);
    }
    for (const other of views.children) (other as HTMLElement).hidden = other !== view;
  }

  try {
    const { agents: networks } = await concierge.list({});
    if (networks.length === 0) list.replaceChildren(element("li", { class: "muted" }, "No public networks."));
    for (const network of networks) {
      const item = element(
        "button",
        { type: "button", class: "network", "data-network": network.agentName },
        element("strong", {}, network.agentName),
        network.description && element("span", { class: "network-description" }, network.description),
      );
      item.addEventListener("click", () => select(network, item));
      list.append(element("li", {}, item));
    }
  } catch (error) {
    list.replaceChildren(element("li", { class: "error" }, describeError(error)));
  }
}

function networkView(network: AgentInfo): HTMLElement {
  const name = network.agentName;
  const graphHost = element("div", { class: "graph" }, element("p", { class: "muted" }, "Loading…"));
  const about = element("div", { class: "about" });
  const samples = element("div", { class: "samples" });
  const thinking = new ThinkingLog();
  let graph: NetworkGraph | undefined;
  let chat: ChatPanel | undefined;
  const chatHost = element("div", { class: "chat-host" });

  const view = element(
    "article",
    { class: "network-view", "data-network": name },
    element(
      "header",
      { class: "network-header" },
      element("h2", { class: "network-title" }, name),
      network.description && element("p", { class: "network-description" }, network.description),
      network.tags.length > 0 && element("ul", { class: "tags", "aria-label": "tags" }, ...network.tags.map((tag) => element("li", { class: "tag" }, tag))),
      about,
      samples,
    ),
    element(
      "div",
      { class: "workspace" },
      element("section", { class: "pane graph-pane", "aria-label": "agents" }, element("h3", {}, "Agents"), graphHost),
      element("section", { class: "pane chat-pane", "aria-label": "chat" }, element("h3", {}, "Chat"), chatHost),
      element("section", { class: "pane thinking-pane", "aria-label": "thinking" }, element("h3", {}, "Thinking"), thinking.container),
    ),
  );

  void (async () => {
    const [fn, connectivity] = await Promise.allSettled([agents.function({ agentName: name }), agents.connectivity({ agentName: name })]);
    const declared = fn.status === "fulfilled" ? fn.value.function : undefined;
    const template = slyDataTemplate(declared?.slyDataSchema);
    chat = new ChatPanel(name, { thinking, onActivity: (agent) => graph?.highlight(agent), ...(template ? { slyDataTemplate: template } : {}) });
    chatHost.replaceChildren(chat.root);
    const details = functionDetails(declared);
    if (details) about.replaceChildren(element("details", { class: "function" }, element("summary", {}, "What it takes"), details));

    if (connectivity.status === "rejected") {
      graphHost.replaceChildren(element("p", { class: "error" }, describeError(connectivity.reason)));
      return;
    }
    graph = renderGraph(layoutGraph(connectivity.value.connectivityInfo));
    graphHost.replaceChildren(graph.root);
    const queries = sampleQueries(connectivity.value.metadata);
    if (queries.length > 0) {
      samples.replaceChildren(
        element("span", { class: "muted" }, "Try"),
        ...queries.map((query) => button(query, () => chat?.suggest(query), { class: "sample" })),
      );
    }
  })();
  return view;
}
