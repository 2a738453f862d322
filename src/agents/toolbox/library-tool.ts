import type { JsonObject } from "@bufbuild/protobuf";

/** Axon's own implementation of a library tool class that toolbox entries name (LangChain classes in neuro-san). */
export interface LibraryTool {
  /** What the LLM is told, unless the agent spec has a function block. */
  description: string;
  parameters: JsonObject;
  /** `input` comes from the LLM; `settings` are the entry's `args` with the agent spec's `args` over them. */
  invoke(input: JsonObject, settings: JsonObject, signal: AbortSignal): Promise<string>;
}
