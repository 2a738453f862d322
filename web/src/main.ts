import { showNetworks } from "./networks.js";
import { showOperations } from "./operations.js";
import { showOperator } from "./operator.js";

// Three tabs over one page: hidden panels keep their streams (a watched operation stays live behind the queue).
const tabs = [...document.querySelectorAll<HTMLButtonElement>("nav [data-tab]")];
function select(tab: HTMLButtonElement): void {
  for (const other of tabs) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    // One tab stop for the tab list; arrow keys move between tabs (the WAI-ARIA tabs pattern).
    other.tabIndex = selected ? 0 : -1;
  }
  for (const panel of document.querySelectorAll<HTMLElement>("[data-panel]")) panel.hidden = panel.dataset.panel !== tab.dataset.tab;
}
for (const [index, tab] of tabs.entries()) {
  tab.addEventListener("click", () => select(tab));
  tab.addEventListener("keydown", (event) => {
    const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
    if (step === 0) return;
    const next = tabs[(index + step + tabs.length) % tabs.length]!;
    select(next);
    next.focus();
  });
}

void showNetworks();
showOperations(document.querySelector<HTMLElement>("#operations")!);
showOperator(document.querySelector<HTMLElement>("#operator")!);
