import type { OperationRow } from "../../src/operations/store.js";

/** An operation row as a test writes it straight to the store: alice's approved `test.op`, with `fields` over it. */
export function operationRow<Fields extends Partial<OperationRow>>(id: string, fields?: Fields) {
  const now = new Date();
  const row = {
    id,
    clientId: "alice",
    idempotencyKey: id,
    requestHash: "00",
    operation: "test.op",
    target: {},
    arguments: {},
    reason: "test",
    state: "approved",
    revision: 1,
    presentationTitle: "test",
    presentationSummary: "test",
    approvalId: null as string | null,
    errorCode: null as string | null,
    errorMessage: null as string | null,
    createdAt: now,
    updatedAt: now,
    terminalAt: null as Date | null,
    traceContext: null as string | null,
    claimedBy: null as string | null,
    claimedAt: null as Date | null,
  };
  return { ...row, ...(fields as Fields) } satisfies Omit<OperationRow, "result" | "recoveredBy">;
}
