import { agents, concierge, describeError } from "./clients.js";
import { ChatPanel } from "./chat.js";
import { element } from "./dom.js";
import { renderGraph } from "./graph.js";
import { layoutGraph } from "./graph-layout.js";

/** The networks tab: the public networks (Concierge List); picking one draws its graph and opens a chat. */
export async function showNetworks(): Promise<void> {
  const list = document.querySelector<HTMLUListElement>("#network-list")!;
  const title = document.querySelector<HTMLElement>("#network-title")!;
  const graph = document.querySelector<HTMLElement>("#network-graph")!;
  const chat = document.querySelector<HTMLElement>("#chat")!;
  let panel: ChatPanel | undefined;
  let selection = 0;

  async function select(network: string, item: HTMLElement): Promise<void> {
    const current = ++selection;
    for (const other of list.querySelectorAll("[aria-current]")) other.removeAttribute("aria-current");
    item.setAttribute("aria-current", "true");
    title.textContent = network;
    panel?.close();
    panel = new ChatPanel(network);
    chat.replaceChildren(panel.root);
    graph.replaceChildren(element("p", { class: "muted" }, "Loading…"));
    try {
      const { connectivityInfo } = await agents.connectivity({ agentName: network });
      if (current !== selection) return;
      graph.replaceChildren(renderGraph(layoutGraph(connectivityInfo)));
    } catch (error) {
      if (current === selection) graph.replaceChildren(element("p", { class: "error" }, describeError(error)));
    }
  }

  try {
    const { agents: networks } = await concierge.list({});
    if (networks.length === 0) list.replaceChildren(element("li", { class: "muted" }, "No public networks."));
    for (const network of networks) {
      const item = element(
        "li",
        { class: "network", tabindex: "0", "data-network": network.agentName },
        element("strong", {}, network.agentName),
        element("p", {}, network.description),
        element("div", { class: "tags" }, ...network.tags.map((tag) => element("span", { class: "tag" }, tag))),
      );
      item.addEventListener("click", () => void select(network.agentName, item));
      item.addEventListener("keydown", (event) => {
        if (event.key === "Enter") void select(network.agentName, item);
      });
      list.append(item);
    }
  } catch (error) {
    list.replaceChildren(element("li", { class: "error" }, describeError(error)));
  }
}
