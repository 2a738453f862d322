import type { JsonObject } from "@bufbuild/protobuf";
import { argumentProblems, type ArgumentProblem, type PrebuiltMiddleware } from "./middleware-args.js";
import { contextEditingMiddleware } from "./context-editing.js";
import { humanInTheLoopMiddleware } from "./human-in-the-loop.js";
import { llmToolSelectorMiddleware } from "./llm-tool-selector.js";
import { modelCallLimitMiddleware } from "./model-call-limit.js";
import { modelFallbackMiddleware } from "./model-fallback.js";
import { modelRetryMiddleware } from "./model-retry.js";
import { piiMiddleware } from "./pii.js";
import { summarizationMiddleware } from "./summarization.js";
import { todoListMiddleware } from "./todo-list.js";
import { toolCallLimitMiddleware } from "./tool-call-limit.js";
import { toolRetryMiddleware } from "./tool-retry.js";

/** LangChain's prebuilt middleware that Axon runs itself, by class name: networks that name them need no Python. */
const prebuilt: Record<string, PrebuiltMiddleware> = {
  PIIMiddleware: piiMiddleware,
  SummarizationMiddleware: summarizationMiddleware,
  HumanInTheLoopMiddleware: humanInTheLoopMiddleware,
  ModelCallLimitMiddleware: modelCallLimitMiddleware,
  ToolCallLimitMiddleware: toolCallLimitMiddleware,
  ModelFallbackMiddleware: modelFallbackMiddleware,
  ModelRetryMiddleware: modelRetryMiddleware,
  ToolRetryMiddleware: toolRetryMiddleware,
  LLMToolSelectorMiddleware: llmToolSelectorMiddleware,
  ContextEditingMiddleware: contextEditingMiddleware,
  TodoListMiddleware: todoListMiddleware,
};

const LANGCHAIN_MIDDLEWARE = "langchain.agents.middleware.";

/**
 * The prebuilt class a name stands for: `langchain.agents.middleware.PIIMiddleware`, or the same class by the module
 * that defines it (`langchain.agents.middleware.pii.PIIMiddleware`). Any other class runs in Python.
 */
export function prebuiltMiddlewareOf(className: string): PrebuiltMiddleware | undefined {
  if (!className.startsWith(LANGCHAIN_MIDDLEWARE)) return undefined;
  const name = className.slice(className.lastIndexOf(".") + 1);
  return Object.hasOwn(prebuilt, name) ? prebuilt[name] : undefined;
}

/** What is wrong with a middleware entry's args, for the classes Axon implements (Python checks its own when it makes them). */
export function middlewareArgumentProblems(className: string, args: JsonObject): ArgumentProblem[] {
  const found = prebuiltMiddlewareOf(className);
  return found === undefined ? [] : argumentProblems(className.slice(className.lastIndexOf(".") + 1), found, args);
}
