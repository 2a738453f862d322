import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Request } from "../../src/gen/axon/operator/v1/operator_pb.js";
import { describeError, isCanceled, isUnauthenticated, operator, operatorSecret } from "./clients.js";
import { button, element, prettyJson } from "./dom.js";
import { field, stateWithRecovery } from "./operations.js";
import { SecretForm } from "./secret-form.js";

const retryMs = 3000;
const catchUpMs = 1000;

/** What each request status means to the operator deciding it. */
const STATUS_WORDS: Record<string, string> = {
  pending: "waiting for your decision",
  active: "approved, usable",
  consumed: "approved and used",
  denied: "denied",
  expired: "expired",
  revoked: "revoked",
  canceled: "canceled by the client",
  failed: "failed",
};

type Decision = "approve" | "deny" | "revoke";
const DECISION_WORDS: Record<Decision, { verb: string; done: string }> = {
  approve: { verb: "Approve", done: "Approved" },
  deny: { verb: "Deny", done: "Denied" },
  revoke: { verb: "Revoke", done: "Revoked" },
};

/**
 * The operator queue: requests by status (ListRequests), each with what its operation will do (GetRequest's linked
 * operation: its presentation names the method, the URL and the credential), decided after a confirmation at the
 * revision shown (a stale view is refused, not applied). WatchEvents reloads the queue whenever anything changes.
 */
export function showOperator(root: HTMLElement): void {
  const status = element("p", { class: "status", role: "status" });
  const cards = element("ul", { class: "requests" });
  const filter = element("select", { name: "status", "aria-label": "which requests" }, ...["pending", "active", "history", "all"].map((value) => element("option", { value }, value)));
  filter.addEventListener("change", () => void load());
  /** Linked operations by request id and revision: a reload refetches only what changed. */
  const details = new Map<string, Request>();
  let events: AbortController | undefined;
  let loading: Promise<void> | undefined;
  let reloadAgain = false;
  const secretForm = new SecretForm(operatorSecret, "operator secret", () => changed());

  function failed(error: unknown): boolean {
    if (!isUnauthenticated(error)) return false;
    events?.abort();
    cards.replaceChildren();
    status.textContent = "";
    secretForm.rejected();
    return true;
  }

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
      cards.replaceChildren();
      status.textContent = "Enter the operator secret to see the queue.";
      return;
    }
    try {
      const { requests } = await operator.listRequests({ status: filter.value, limit: 100 });
      const withOperations = await Promise.all(requests.map(linked));
      // A decision's confirmation in progress survives a reload of the same request at the same revision.
      const open = new Map([...cards.querySelectorAll<HTMLElement>(".request-card[data-confirming]")].map((card) => [`${card.dataset.id}@${card.dataset.revision}`, card]));
      // Moving the kept card takes the focus from its reason field; the operator may be typing in it.
      const focused = document.activeElement;
      cards.replaceChildren(...withOperations.map((request) => open.get(`${request.id}@${request.revision}`) ?? card(request)));
      if (focused instanceof HTMLElement && focused.isConnected && document.activeElement !== focused) focused.focus();
      if (requests.length === 0) status.textContent = filter.value === "pending" ? "Nothing waits for a decision. New requests appear here by themselves." : `No ${filter.value} requests.`;
      else if (!status.classList.contains("done")) status.textContent = "";
    } catch (error) {
      if (!failed(error)) status.textContent = describeError(error);
    }
  }

  async function linked(request: Request): Promise<Request> {
    const key = `${request.id}@${request.revision}`;
    const known = details.get(key);
    if (known) return known;
    const { request: full } = await operator.getRequest({ id: request.id });
    const result = full ?? request;
    details.set(key, result);
    return result;
  }

  function card(request: Request): HTMLElement {
    const operation = request.linkedOperation;
    const title = operation?.presentation?.title || `${request.operation} for ${request.clientId}`;
    const summary = operation?.presentation?.summary;
    const actions = element("div", { class: "actions" });
    const item = element(
      "li",
      { class: "request-card request", "data-id": request.id, "data-status": request.status, "data-revision": String(request.revision) },
      element("h3", {}, title, element("span", { class: `state state-${request.status}`, "data-state": request.status }, STATUS_WORDS[request.status] ?? request.status)),
      summary ? element("div", { class: "will-call" }, element("strong", {}, "It will call"), element("span", { class: "summary" }, summary)) : null,
      element(
        "dl",
        { class: "fields" },
        ...field("client", request.clientId),
        ...field("reason", request.reason),
        ...field("grant", grantTerms(request)),
        ...(operation ? field("operation", element("span", {}, stateWithRecovery(operation), " ", element("span", { class: "mono" }, operation.id))) : []),
        ...(request.expiresAt ? field(request.status === "pending" ? "decide by" : "expires", timestampDate(request.expiresAt).toLocaleString()) : []),
        ...field("requested", request.createdAt ? timestampDate(request.createdAt).toLocaleString() : ""),
      ),
      element("details", {}, element("summary", {}, "target"), element("pre", {}, prettyJson(request.target ?? {}))),
      operation?.arguments ? element("details", { class: "asks-for" }, element("summary", {}, "what it asks for"), element("pre", {}, prettyJson(operation.arguments))) : null,
      actions,
    );
    // A held tool call may let the operator change what it runs with (HumanInTheLoopMiddleware's `edit`).
    const asked = operation?.arguments;
    const editable = Array.isArray(asked?.allowed_decisions) && asked.allowed_decisions.includes("edit");
    const decisions: Decision[] = request.status === "pending" ? ["approve", "deny"] : request.status === "active" ? ["revoke"] : [];
    const showButtons = () => {
      delete item.dataset.confirming;
      actions.replaceChildren(...decisions.map((decision) => button(`${DECISION_WORDS[decision].verb}…`, () => confirm(decision), { class: decision === "approve" ? `primary ${decision}` : `secondary ${decision}` })));
    };
    const confirm = (decision: Decision) => {
      item.dataset.confirming = decision;
      const reason = element("input", { name: "reason", placeholder: "reason, for the audit (optional)", "aria-label": "reason for the audit" });
      const edited =
        decision === "approve" && editable
          ? element("textarea", { name: "arguments", rows: "6", "aria-label": "the arguments it runs with (JSON)" }, prettyJson(asked?.arguments ?? {}))
          : null;
      const words = DECISION_WORDS[decision];
      const panel = element(
        "div",
        { class: `confirm ${decision}`, role: "group", "aria-label": `${words.verb} ${title}` },
        element("p", {}, element("strong", {}, `${words.verb} “${title}”?`), summary && decision === "approve" ? ` It will call ${summary}.` : ""),
        edited ? element("label", { class: "edit-arguments" }, "Runs with (JSON; change it to run the call otherwise):", edited) : null,
        reason,
        element(
          "div",
          { class: "actions" },
          button(`Confirm: ${words.verb.toLowerCase()}`, () => void decide(request, decision, reason.value, title, edited?.value), {
            class: decision === "approve" ? "primary confirm-decision" : "danger confirm-decision",
          }),
          button("Cancel", showButtons, { class: "secondary" }),
        ),
      );
      panel.addEventListener("keydown", (event) => {
        if (event.key === "Escape") showButtons();
      });
      actions.replaceChildren(panel);
      reason.focus();
    };
    showButtons();
    return item;
  }

  async function decide(request: Request, decision: Decision, reason: string, title: string, argumentsText?: string): Promise<void> {
    const call = { id: request.id, expectedRevision: request.revision, ...(reason.trim() ? { reason: reason.trim() } : {}) };
    status.classList.remove("done");
    let edited: JsonObject | undefined;
    if (argumentsText !== undefined) {
      edited = jsonObjectOf(argumentsText);
      if (edited === undefined) {
        status.textContent = `${title}: the arguments must be a JSON object`;
        return;
      }
      // Unchanged arguments are no edit: the call runs as it asked.
      if (prettyJson(edited) === prettyJson(request.linkedOperation?.arguments?.arguments ?? {})) edited = undefined;
    }
    try {
      if (decision === "approve") await operator.approveRequest({ ...call, ...(edited ? { arguments: edited } : {}) });
      else if (decision === "deny") await operator.denyRequest(call);
      else await operator.revokeRequest(call);
      status.textContent = `${DECISION_WORDS[decision].done}: ${title}${decision === "approve" ? ". It runs now." : "."}`;
      status.classList.add("done");
    } catch (error) {
      if (!failed(error)) status.textContent = `${title}: ${describeError(error)}`;
    }
    const card = cards.querySelector<HTMLElement>(`.request-card[data-id="${request.id}"]`);
    if (card) delete card.dataset.confirming;
    await load();
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
        if (failed(error)) return;
        status.textContent = `live updates: ${describeError(error)}`;
      } finally {
        clearTimeout(catchUp);
      }
      // The stream ended or broke (a restart): listen again, and catch up on what was missed.
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  function changed(): void {
    status.classList.remove("done");
    void load();
    void watchEvents();
  }
  root.replaceChildren(
    element("div", { class: "panel-head" }, element("h2", {}, "Operator queue"), secretForm.root),
    element("div", { class: "toolbar" }, element("label", {}, "Show ", filter), button("Reload", () => void load(), { class: "secondary small" })),
    status,
    cards,
  );
  changed();
}

/** The grant an approval gives, in words: once for this operation, or a window of uses. */
function grantTerms(request: Request): string {
  if (request.mode === "execution") return "once, for this operation only";
  const parts = [request.minutes !== undefined ? `for ${request.minutes} minutes` : "", request.maxUses !== undefined ? `up to ${request.maxUses} uses` : ""].filter(Boolean);
  return `a window ${parts.join(", ")}`.trim();
}

function jsonObjectOf(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}
