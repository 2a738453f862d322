import { toJson } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { OperationSchema, type Operation } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { clientSecret, describeError, isCanceled, isUnauthenticated, operations } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";
import { SecretForm } from "./secret-form.js";

const retryMs = 3000;

/** What each state means to the person who asked for the operation. */
export const STATE_WORDS: Record<string, string> = {
  pending: "waiting for approval",
  approved: "approved, about to run",
  executing: "running",
  succeeded: "succeeded",
  failed: "failed",
  denied: "denied",
  expired: "expired",
  canceled: "canceled",
};

const stateBadge = (state: string) => element("span", { class: `state state-${state}`, "data-state": state, title: state }, STATE_WORDS[state] ?? state);

/** What each way of recovering an outcome means, for an operation whose replica stopped while it ran. */
const RECOVERY_WORDS: Record<string, string> = {
  replay: "recovered by replay: its replica stopped, and the request was sent again with the same idempotency key",
};

/** The state, and beside it whether the outcome was recovered after its replica stopped. */
export function stateWithRecovery(operation: Pick<Operation, "state" | "recoveredBy">): HTMLElement {
  if (!operation.recoveredBy) return stateBadge(operation.state);
  const recovered = element("span", { class: "recovered", "data-recovered-by": operation.recoveredBy, title: RECOVERY_WORDS[operation.recoveredBy] ?? operation.recoveredBy }, `recovered by ${operation.recoveredBy}`);
  return element("span", {}, stateBadge(operation.state), " ", recovered);
}

/**
 * The operations tab, as one Agent V1 client sees them: the list (ListOperations), kept live by WatchOperations
 * (new operations appear, changed ones update), and the selected operation's detail, followed by WatchOperation.
 * The client secret is asked once per browser session, and again if the server turns it down.
 */
export function showOperations(root: HTMLElement): void {
  const status = element("p", { class: "status", role: "status" });
  const rows = element("tbody");
  const detail = element("div", { class: "operation-detail", "aria-live": "polite" });
  const rowsById = new Map<string, HTMLTableRowElement>();
  let live: AbortController | undefined;
  let watching: AbortController | undefined;
  const secretForm = new SecretForm(clientSecret, "client secret", () => void load());

  const table = element(
    "div",
    { class: "table-scroll" },
    element(
      "table",
      { class: "operations-table" },
      element("thead", {}, element("tr", {}, ...["Operation", "State", "Reason", "Updated"].map((name) => element("th", { scope: "col" }, name)))),
      rows,
    ),
  );

  function failed(error: unknown): void {
    if (isUnauthenticated(error)) {
      live?.abort();
      rows.replaceChildren();
      rowsById.clear();
      status.textContent = "";
      secretForm.rejected();
    } else {
      status.textContent = describeError(error);
    }
  }

  async function load(): Promise<void> {
    live?.abort();
    watching?.abort();
    rows.replaceChildren();
    rowsById.clear();
    detail.replaceChildren();
    if (!clientSecret.value) {
      status.textContent = "Enter a client secret to see that client's operations.";
      return;
    }
    status.textContent = "Loading…";
    const controller = (live = new AbortController());
    try {
      const { operations: list } = await operations.listOperations({ limit: 50 });
      if (controller.signal.aborted) return;
      status.textContent = list.length === 0 ? "No operations yet. New ones appear here as they are submitted." : "";
      for (const operation of list) upsert(operation, false);
    } catch (error) {
      failed(error);
      return;
    }
    void followAll(controller);
  }

  // New and changed operations of this client, live; after a break, listen again and re-read the list.
  async function followAll(controller: AbortController): Promise<void> {
    while (!controller.signal.aborted) {
      try {
        for await (const { operation } of operations.watchOperations({}, { signal: controller.signal })) {
          if (operation) upsert(operation, true);
        }
      } catch (error) {
        if (isCanceled(error) || controller.signal.aborted) return;
        if (isUnauthenticated(error)) return failed(error);
        status.textContent = `live updates: ${describeError(error)}`;
      }
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  function upsert(operation: Operation, fresh: boolean): void {
    let tr = rowsById.get(operation.id);
    if (!tr) {
      tr = element("tr", { class: "operation", "data-id": operation.id, tabindex: "0" });
      const id = operation.id;
      tr.addEventListener("click", () => void watch(id));
      tr.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          void watch(id);
        }
      });
      rowsById.set(operation.id, tr);
      if (fresh) {
        rows.prepend(tr);
        tr.classList.add("fresh");
        if (status.textContent?.startsWith("No operations")) status.textContent = "";
      } else {
        rows.append(tr);
      }
    }
    fillRow(tr, operation);
  }

  // Follows one operation until it is terminal or another is picked; each new revision updates its row too.
  async function watch(id: string): Promise<void> {
    watching?.abort();
    const controller = (watching = new AbortController());
    for (const selected of rows.querySelectorAll("[aria-selected]")) selected.removeAttribute("aria-selected");
    rowsById.get(id)?.setAttribute("aria-selected", "true");
    detail.replaceChildren(element("p", { class: "muted" }, "Loading…"));
    try {
      for await (const { operation } of operations.watchOperation({ id, afterRevision: 0 }, { signal: controller.signal })) {
        if (!operation) continue;
        renderDetail(operation);
        const tr = rowsById.get(id);
        if (tr) fillRow(tr, operation);
      }
    } catch (error) {
      if (!isCanceled(error) && watching === controller) detail.append(element("p", { class: "error" }, describeError(error)));
    }
  }

  function renderDetail(operation: Operation): void {
    detail.replaceChildren(
      element("h3", {}, operation.presentation?.title || operation.operation),
      element("p", {}, operation.presentation?.summary ?? ""),
      element(
        "dl",
        { class: "fields" },
        ...field("state", stateWithRecovery(operation)),
        ...field("operation", operation.operation),
        ...field("id", element("span", { class: "mono" }, operation.id)),
        ...field("reason", operation.reason),
        ...(operation.approvalId ? field("approval", element("span", { class: "mono" }, operation.approvalId)) : []),
        ...(operation.error ? field("error", `${operation.error.message} (${operation.error.code})`) : []),
        ...field("revision", String(operation.revision)),
      ),
      element("details", {}, element("summary", {}, "JSON"), element("pre", {}, prettyJson(toJson(OperationSchema, operation)))),
    );
  }

  root.replaceChildren(
    element("div", { class: "panel-head" }, element("h2", {}, "Operations"), secretForm.root),
    element("div", { class: "toolbar" }, button("Reload", () => void load(), { class: "secondary small" }), element("span", { class: "muted" }, "New operations and changes appear by themselves.")),
    status,
    element("div", { class: "split" }, table, detail),
  );
  void load();
}

function fillRow(tr: HTMLTableRowElement, operation: Operation): void {
  tr.dataset.state = operation.state;
  tr.replaceChildren(
    element("td", {}, element("strong", {}, operation.presentation?.title || operation.operation), element("div", { class: "mono muted" }, operation.id)),
    element("td", {}, stateWithRecovery(operation)),
    element("td", {}, operation.reason),
    element("td", {}, operation.updatedAt ? timestampDate(operation.updatedAt).toLocaleTimeString() : ""),
  );
}

export function field(name: string, value: string | Node): HTMLElement[] {
  return [element("dt", {}, name), element("dd", {}, value)];
}
