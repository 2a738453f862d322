import type { JsonObject } from "@bufbuild/protobuf";
import type { CodedTool } from "../../../src/agents/coded-tool.js";

/** The benchmark network's leaf: constant work, so the figures are Axon's and not the tool's. */
export class Lookup implements CodedTool {
  invoke(args: JsonObject, slyData: JsonObject): JsonObject {
    slyData.lookups = Number(slyData.lookups ?? 0) + 1;
    return { topic: String(args.topic ?? ""), fact: "benchmarks measure, they do not assert" };
  }
}
