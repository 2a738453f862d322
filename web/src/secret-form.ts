import { button, element } from "./dom.js";
import type { StoredSecret } from "./clients.js";

/**
 * Asks for `secret` once: a password field while none is stored, a "Forget" button once one is.
 * `changed` runs after either, so the view reloads with (or without) it.
 */
export function secretForm(secret: StoredSecret, label: string, changed: () => void): HTMLElement {
  const container = element("div", { class: "secret-form" });
  const render = () => {
    if (secret.value) {
      container.replaceChildren(
        element("span", { class: "muted" }, `${label} set for this browser session`),
        button("Forget", () => {
          secret.clear();
          render();
          changed();
        }),
      );
      return;
    }
    const input = element("input", { type: "password", name: "secret", placeholder: label, autocomplete: "off", required: true });
    const form = element("form", {}, input, element("button", { type: "submit" }, "Use"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!input.value.trim()) return;
      secret.set(input.value.trim());
      render();
      changed();
    });
    container.replaceChildren(form);
  };
  render();
  return container;
}
