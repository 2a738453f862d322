import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Request } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { describeError, isCanceled, isUnauthenticated, operator, operatorSecret } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";
import { secretForm } from "./secret-form.js";

const retryMs = 3000;
const catchUpMs = 1000;

/**
 * The operator queue: requests by status (ListRequests), decided with Approve / Deny / Revoke at the revision shown
 * (expected_revision: a stale view is refused, not applied). WatchEvents reloads the list whenever anything changes.
 */
export function showOperator(root: HTMLElement): void {
  const status = element("p", { class: "status", role: "status" });
  const rows = element("tbody");
  const filter = element(
    "select",
    { name: "status" },
    ...["pending", "active", "history", "all"].map((value) => element("option", { value }, value)),
  );
  filter.addEventListener("change", () => void load());
  let events: AbortController | undefined;
  let loading: Promise<void> | undefined;
  let reloadAgain = false;

  // Events can come in bursts: one list call at a time, and one more after it if anything arrived meanwhile.
  function load(): Promise<void> {
    if (loading) {
      reloadAgain = true;
      return loading;
    }
    loading = list().finally(() => {
      loading = undefined;
      if (reloadAgain) {
        reloadAgain = false;
        void load();
      }
    });
    return loading;
  }

  async function list(): Promise<void> {
    if (!operatorSecret.value) {
      rows.replaceChildren();
      status.textContent = "Enter the operator secret to see the queue.";
      return;
    }
    try {
      const { requests } = await operator.listRequests({ status: filter.value, limit: 100 });
      rows.replaceChildren(...requests.map(row));
      status.textContent = requests.length === 0 ? `No ${filter.value} requests.` : "";
    } catch (error) {
      status.textContent = describeError(error);
    }
  }

  function row(request: Request): HTMLTableRowElement {
    const decide = (action: "approve" | "deny" | "revoke") => async () => {
      const call = { id: request.id, expectedRevision: request.revision };
      try {
        if (action === "approve") await operator.approveRequest(call);
        else if (action === "deny") await operator.denyRequest(call);
        else await operator.revokeRequest(call);
        status.textContent = `${request.id}: ${action}d`;
      } catch (error) {
        status.textContent = `${request.id}: ${describeError(error)}`;
      }
      await load();
    };
    const actions =
      request.status === "pending"
        ? [button("Approve", decide("approve"), { class: "approve" }), button("Deny", decide("deny"), { class: "deny" })]
        : request.status === "active" || request.status === "approved"
          ? [button("Revoke", decide("revoke"), { class: "revoke" })]
          : [];
    return element(
      "tr",
      { class: "request", "data-id": request.id, "data-status": request.status },
      element("td", { class: "mono" }, request.id),
      element("td", {}, request.clientId),
      element("td", {}, request.operation, element("pre", {}, prettyJson(request.target ?? {}))),
      element("td", {}, request.reason),
      element("td", {}, `${request.status} · r${request.revision}`),
      element("td", {}, request.createdAt ? timestampDate(request.createdAt).toLocaleTimeString() : ""),
      element("td", { class: "actions" }, ...actions),
    );
  }

  async function watchEvents(): Promise<void> {
    events?.abort();
    if (!operatorSecret.value) return;
    const controller = (events = new AbortController());
    while (!controller.signal.aborted) {
      // The stream starts "from now on" once the server has subscribed, which may be after the list was read:
      // one reload a moment later covers what fell in between.
      const catchUp = setTimeout(() => void load(), catchUpMs);
      try {
        for await (const _ of operator.watchEvents({}, { signal: controller.signal })) void load();
      } catch (error) {
        if (isCanceled(error) || controller.signal.aborted) return;
        status.textContent = `live updates: ${describeError(error)}`;
        if (isUnauthenticated(error)) return;
      } finally {
        clearTimeout(catchUp);
      }
      // The stream ended or broke (a restart): listen again, and catch up on what was missed.
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  const changed = () => {
    void load();
    void watchEvents();
  };
  root.replaceChildren(
    element("h2", {}, "Operator queue"),
    secretForm(operatorSecret, "operator secret", changed),
    element("div", { class: "toolbar" }, element("label", {}, "Status ", filter), button("Refresh", () => void load())),
    status,
    element(
      "table",
      { class: "requests-table" },
      element("thead", {}, element("tr", {}, ...["Request", "Client", "Operation", "Reason", "Status", "Created", ""].map((name) => element("th", {}, name)))),
      rows,
    ),
  );
  changed();
}
