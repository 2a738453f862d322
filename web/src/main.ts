import { showNetworks } from "./networks.js";
import { showOperations } from "./operations.js";
import { showOperator } from "./operator.js";

// Three tabs over one page: hidden panels keep their streams (a watched operation stays live behind the queue).
const tabs = document.querySelectorAll<HTMLButtonElement>("nav [data-tab]");
for (const tab of tabs) {
  tab.addEventListener("click", () => {
    for (const other of tabs) other.setAttribute("aria-selected", String(other === tab));
    for (const panel of document.querySelectorAll<HTMLElement>("[data-panel]")) panel.hidden = panel.dataset.panel !== tab.dataset.tab;
  });
}

void showNetworks();
showOperations(document.querySelector<HTMLElement>("#operations")!);
showOperator(document.querySelector<HTMLElement>("#operator")!);
