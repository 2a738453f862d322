import type { LibraryTool } from "./library-tool.js";
import { urlFetcher } from "./url-fetcher.js";

export const REQUESTS_GET_CLASS = "langchain_community.tools.requests.tool.RequestsGetTool";

const LIBRARY_TOOLS: ReadonlyMap<string, LibraryTool> = new Map([[REQUESTS_GET_CLASS, urlFetcher]]);

export function libraryToolOf(className: string | undefined): LibraryTool | undefined {
  return className === undefined ? undefined : LIBRARY_TOOLS.get(className);
}

/** A library tool whose class Axon does not implement runs that class itself (a LangChain tool) in a Python worker. */
export function runsInPython<T extends { kind: string; className?: string }>(spec: T): spec is T & { className: string } {
  return spec.kind === "library_tool" && spec.className !== undefined && !LIBRARY_TOOLS.has(spec.className);
}
