import type { JsonObject } from "@bufbuild/protobuf";
import { urlFetcher } from "./url-fetcher.js";

/** Axon's own implementation of a library tool class that toolbox entries name (LangChain classes in neuro-san). */
export interface LibraryTool {
  /** What the LLM is told, unless the agent spec has a function block. */
  description: string;
  parameters: JsonObject;
  /** `input` comes from the LLM; `settings` are the entry's `args` with the agent spec's `args` over them. */
  invoke(input: JsonObject, settings: JsonObject, signal: AbortSignal): Promise<string>;
}

export const REQUESTS_GET_CLASS = "langchain_community.tools.requests.tool.RequestsGetTool";

const LIBRARY_TOOLS: ReadonlyMap<string, LibraryTool> = new Map([[REQUESTS_GET_CLASS, urlFetcher]]);

export function libraryToolOf(className: string | undefined): LibraryTool | undefined {
  return className === undefined ? undefined : LIBRARY_TOOLS.get(className);
}

/** A library tool whose class Axon does not implement runs that class itself (a LangChain tool) in a Python worker. */
export function runsInPython<T extends { kind: string; className?: string }>(spec: T): spec is T & { className: string } {
  return spec.kind === "library_tool" && spec.className !== undefined && !LIBRARY_TOOLS.has(spec.className);
}
