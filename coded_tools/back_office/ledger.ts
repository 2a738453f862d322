import type { JsonObject } from "@bufbuild/protobuf";
import type { CodedTool } from "../../src/agents/coded-tools.js";

/**
 * Keeps a running total in sly_data. The server keeps nothing between turns: the client gets the total back
 * (to_upstream) and sends its sly_data again with the next turn, so the total carries across turns.
 */
export class Ledger implements CodedTool {
  invoke(args: JsonObject, slyData: JsonObject): JsonObject {
    const total = Number(slyData.running_total ?? 0);
    if (args.action === "add") {
      const amount = Number(args.amount);
      if (!Number.isFinite(amount)) throw new Error("amount must be a number");
      slyData.running_total = total + amount;
    }
    slyData.currency = args.currency ?? "EUR";
    return { running_total: slyData.running_total ?? total, currency: slyData.currency };
  }
}
