import type { JsonObject } from "@bufbuild/protobuf";
import type { CodedTool, CodedToolContext } from "../../src/agents/coded-tools.js";

const operations: Record<string, (x: number, y: number) => number> = {
  add: (x, y) => x + y,
  subtract: (x, y) => x - y,
  multiply: (x, y) => x * y,
  divide: (x, y) => x / y,
};

/** Applies one arithmetic operation; the result also goes to sly_data.last_result for the client. */
export class Calculator implements CodedTool {
  asyncInvoke(args: JsonObject, slyData: JsonObject, context: CodedToolContext): JsonObject {
    const operation = operations[String(args.operator)];
    const x = Number(args.x);
    const y = Number(args.y);
    if (!operation) throw new Error(`unknown operator ${String(args.operator)}; use add, subtract, multiply or divide`);
    if (!Number.isFinite(x) || !Number.isFinite(y)) throw new Error("x and y must be numbers");
    if (args.operator === "divide" && y === 0) throw new Error("cannot divide by zero");
    context.reportProgress({ calculating: `${x} ${String(args.operator)} ${y}` });
    const result = operation(x, y);
    slyData.last_result = result;
    slyData.calculations = Number(slyData.calculations ?? 0) + 1;
    return { result };
  }
}
