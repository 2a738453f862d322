import { button, element } from "./dom.js";
import type { StoredSecret } from "./clients.js";

/**
 * Asks for a secret once per browser session: a password field while none is stored, a "Forget" button once one
 * is. When the server turns the secret down, `rejected()` forgets it and asks again, saying why.
 */
export class SecretForm {
  readonly root = element("div", { class: "secret-form" });

  constructor(
    private readonly secret: StoredSecret,
    private readonly label: string,
    /** Runs after a secret is entered or forgotten, so the view reloads with (or without) it. */
    private readonly changed: () => void,
  ) {
    this.render();
  }

  rejected(): void {
    this.secret.clear();
    this.render(`That ${this.label} was not accepted. Enter it again.`);
  }

  private render(problem?: string): void {
    if (this.secret.value) {
      this.root.replaceChildren(
        element(
          "div",
          { class: "signed-in" },
          element("span", { class: "muted" }, `Using the ${this.label} given in this browser session.`),
          button("Forget", () => {
            this.secret.clear();
            this.render();
            this.changed();
          }, { class: "secondary small" }),
        ),
      );
      return;
    }
    const input = element("input", { type: "password", name: "secret", placeholder: this.label, "aria-label": this.label, autocomplete: "off", required: true, ...(problem ? { "aria-invalid": "true" } : {}) });
    const form = element("form", {}, input, element("button", { type: "submit", class: "primary" }, "Use"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!input.value.trim()) return;
      this.secret.set(input.value.trim());
      this.render();
      this.changed();
    });
    this.root.replaceChildren(...[problem ? element("p", { class: "secret-problem", role: "alert" }, problem) : null, form].filter((node) => node !== null));
    if (problem) input.focus();
  }
}
