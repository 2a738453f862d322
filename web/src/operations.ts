import { toJson } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { OperationSchema, type Operation } from "../../src/gen/axon/agent/v1/agent_pb.js";
import { clientSecret, describeError, isCanceled, operations } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";
import { secretForm } from "./secret-form.js";

/**
 * The operations tab, as one Agent V1 client sees them: the list (ListOperations) and the selected operation's
 * detail, kept live by WatchOperation. The client secret is asked once per browser session.
 */
export function showOperations(root: HTMLElement): void {
  const status = element("p", { class: "status", role: "status" });
  const rows = element("tbody");
  const detail = element("div", { class: "operation-detail" });
  const rowsById = new Map<string, HTMLTableRowElement>();
  let watching: AbortController | undefined;

  const table = element(
    "table",
    { class: "operations-table" },
    element("thead", {}, element("tr", {}, ...["Operation", "Kind", "State", "Rev", "Reason", "Updated"].map((name) => element("th", {}, name)))),
    rows,
  );

  async function load(): Promise<void> {
    watching?.abort();
    rows.replaceChildren();
    rowsById.clear();
    detail.replaceChildren();
    if (!clientSecret.value) {
      status.textContent = "Enter a client secret to see its operations.";
      return;
    }
    status.textContent = "Loading…";
    try {
      const { operations: list } = await operations.listOperations({ limit: 50 });
      status.textContent = list.length === 0 ? "No operations yet." : "";
      for (const operation of list) rows.append(row(operation));
    } catch (error) {
      status.textContent = describeError(error);
    }
  }

  function row(operation: Operation): HTMLTableRowElement {
    const tr = element("tr", { class: "operation", "data-id": operation.id, tabindex: "0" });
    fillRow(tr, operation);
    tr.addEventListener("click", () => void watch(operation.id));
    rowsById.set(operation.id, tr);
    return tr;
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
        {},
        ...field("id", operation.id),
        ...field("state", element("span", { class: `state state-${operation.state}`, "data-state": operation.state }, operation.state)),
        ...field("revision", String(operation.revision)),
        ...field("reason", operation.reason),
        ...(operation.approvalId ? field("approval", operation.approvalId) : []),
        ...(operation.error ? field("error", `${operation.error.code}: ${operation.error.message}`) : []),
      ),
      element("details", {}, element("summary", {}, "JSON"), element("pre", {}, prettyJson(toJson(OperationSchema, operation)))),
    );
  }

  root.replaceChildren(
    element("h2", {}, "Operations"),
    secretForm(clientSecret, "client secret", () => void load()),
    element("div", { class: "toolbar" }, button("Refresh", () => void load())),
    status,
    element("div", { class: "split" }, table, detail),
  );
  void load();
}

function fillRow(tr: HTMLTableRowElement, operation: Operation): void {
  tr.dataset.state = operation.state;
  tr.replaceChildren(
    element("td", { class: "mono" }, operation.id),
    element("td", {}, operation.operation),
    element("td", {}, element("span", { class: `state state-${operation.state}` }, operation.state)),
    element("td", {}, String(operation.revision)),
    element("td", {}, operation.reason),
    element("td", {}, operation.updatedAt ? timestampDate(operation.updatedAt).toLocaleTimeString() : ""),
  );
}

function field(name: string, value: string | Node): HTMLElement[] {
  return [element("dt", {}, name), element("dd", {}, value)];
}
