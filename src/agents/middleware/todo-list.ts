import type { JsonObject } from "@bufbuild/protobuf";
import type { LlmResponse } from "../../llm/llm.js";
import type { Middleware, ModelHandler, ModelRequest } from "../middleware-chain.js";
import type { Activation, OfferedTool } from "../tool-call.js";
import { string, type PrebuiltMiddleware } from "./middleware-args.js";

const defaultSystemPrompt = [
  "## write_todos",
  "For a task of several steps, keep a to-do list with the write_todos tool: write the steps when you start, mark one",
  "in_progress as you work on it and completed once it is done, and add steps you discover. Skip it for simple requests.",
].join("\n");

const defaultToolDescription =
  "Writes the whole to-do list for the current task, replacing the previous one. Each item has its content and a status: pending, in_progress or completed.";

interface Todo {
  content: string;
  status: "pending" | "in_progress" | "completed";
}

/**
 * LangChain's TodoListMiddleware: a `write_todos` tool the model plans with, and a system prompt telling it how. The
 * list lives for the agent's run.
 */
class TodoList implements Middleware {
  readonly name = "TodoListMiddleware";
  readonly tools: OfferedTool[];
  todos: Todo[] = [];

  constructor(
    private readonly systemPrompt: string,
    toolDescription: string,
  ) {
    const activation: Activation = {
      invoke: async (args: JsonObject) => {
        this.todos = todosOf(args["todos"]);
        return `Updated todo list to ${JSON.stringify(this.todos)}`;
      },
    };
    this.tools = [
      {
        name: "write_todos",
        originName: "write_todos",
        description: toolDescription,
        parameters: {
          type: "object",
          properties: {
            todos: {
              type: "array",
              items: {
                type: "object",
                properties: { content: { type: "string" }, status: { type: "string", enum: ["pending", "in_progress", "completed"] } },
                required: ["content", "status"],
              },
            },
          },
          required: ["todos"],
        },
        activation,
      },
    ];
  }

  beforeAgent = async (): Promise<undefined> => {
    this.todos = [];
    return undefined;
  };

  wrapModelCall(request: ModelRequest, handler: ModelHandler): Promise<LlmResponse> {
    return handler({ ...request, systemPrompt: request.systemPrompt === "" ? this.systemPrompt : `${request.systemPrompt}\n\n${this.systemPrompt}` });
  }
}

function todosOf(value: unknown): Todo[] {
  if (!Array.isArray(value)) throw new Error("todos must be a list of {content, status} items");
  return value.map((item: JsonObject) => {
    const status = item["status"];
    if (typeof item["content"] !== "string" || (status !== "pending" && status !== "in_progress" && status !== "completed")) {
      throw new Error("each todo needs content and a status of pending, in_progress or completed");
    }
    return { content: item["content"], status };
  });
}

export const todoListMiddleware: PrebuiltMiddleware = {
  args: { system_prompt: string, tool_description: string },
  make: (args) => new TodoList((args["system_prompt"] as string | undefined) ?? defaultSystemPrompt, (args["tool_description"] as string | undefined) ?? defaultToolDescription),
};
