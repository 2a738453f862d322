import { AxonError, Code } from "../errors.js";
import type { Origin } from "../gen/neuro_san/api/grpc/chat_pb.js";
import type { LlmClient, LlmMessage, LlmResponse, LlmToolCall } from "../llm/llm.js";
import type { AgentSpec } from "./agent-network.js";
import type { ChatSession } from "./chat-session.js";
import type { OfferedTool } from "./tool-call.js";

/*
 * LangChain's agent middleware as Axon's agent loop runs it: six hooks, called in LangChain's order. `before_*` hooks
 * run in list order, `after_*` hooks in reverse, and the wraps nest with the first one outermost. A hook may replace
 * the conversation and jump (to the end of the run, back to the model, or on to the tools).
 */

/** What an agent run carries from one step to the next: its conversation, the system prompt apart. */
export interface AgentState {
  messages: LlmMessage[];
}

export type Jump = "end" | "model" | "tools";

/** What a before/after hook returns: the conversation it leaves (replacing the state's), and where the run goes next. */
export interface StateUpdate {
  messages?: LlmMessage[];
  jumpTo?: Jump;
}

/** One model call as a wrap sees it, and may change before handing it on. */
export interface ModelRequest {
  systemPrompt: string;
  messages: LlmMessage[];
  tools: OfferedTool[];
  llm: LlmClient;
}

/** One tool call as a wrap sees it: the call the model made (arguments as a wrap left them), and the tool it names. */
export interface ToolCallRequest {
  toolCall: LlmToolCall;
  tool: OfferedTool | undefined;
}

export type ModelHandler = (request: ModelRequest) => Promise<LlmResponse>;
/** Runs a tool call; answers the tool message's content. */
export type ToolHandler = (request: ToolCallRequest) => Promise<string>;

/** The agent run a middleware works for. */
export interface AgentRun {
  readonly session: ChatSession;
  readonly spec: AgentSpec;
  /** The agent's own origin. */
  readonly origin: Origin[];
  readonly state: AgentState;
  /** A model of the agent's network by its LangChain name (`gpt-4o-mini`, `openai:gpt-4o-mini`), for middleware that calls one of its own. */
  modelFor(model: string): LlmClient;
}

type Hook = (state: AgentState, run: AgentRun) => Promise<StateUpdate | undefined>;

export interface Middleware {
  /** The class, as errors and logs name it. */
  readonly name: string;
  /** Tools the middleware adds to those the agent offers its model. */
  readonly tools?: readonly OfferedTool[];
  beforeAgent?: Hook;
  beforeModel?: Hook;
  afterModel?: Hook;
  afterAgent?: Hook;
  wrapModelCall?(request: ModelRequest, handler: ModelHandler, run: AgentRun): Promise<LlmResponse>;
  wrapToolCall?(request: ToolCallRequest, handler: ToolHandler, run: AgentRun): Promise<string>;
}

type HookName = "beforeAgent" | "beforeModel" | "afterModel" | "afterAgent";
const hookNames: Record<HookName | "wrapModelCall" | "wrapToolCall", string> = {
  beforeAgent: "before_agent",
  beforeModel: "before_model",
  afterModel: "after_model",
  afterAgent: "after_agent",
  wrapModelCall: "wrap_model_call",
  wrapToolCall: "wrap_tool_call",
};

/** The middleware of one agent, its hooks sorted into the order they run. An empty chain costs nothing but the loop. */
export class MiddlewareChain {
  private readonly hooks: Record<HookName, Middleware[]>;
  private readonly modelWraps: Middleware[];
  private readonly toolWraps: Middleware[];

  constructor(readonly middleware: readonly Middleware[]) {
    const having = (hook: keyof Middleware) => middleware.filter((each) => each[hook] !== undefined);
    this.hooks = {
      beforeAgent: having("beforeAgent"),
      beforeModel: having("beforeModel"),
      afterModel: having("afterModel").reverse(),
      afterAgent: having("afterAgent").reverse(),
    };
    this.modelWraps = having("wrapModelCall");
    this.toolWraps = having("wrapToolCall");
  }

  has(hook: HookName): boolean {
    return this.hooks[hook].length > 0;
  }

  get wrapsTools(): boolean {
    return this.toolWraps.length > 0;
  }

  get tools(): OfferedTool[] {
    return this.middleware.flatMap((each) => each.tools ?? []);
  }

  /** Runs one kind of before/after hook over the state; a jump ends the round at once, as a graph edge would. */
  async run(hook: HookName, state: AgentState, run: AgentRun): Promise<Jump | undefined> {
    for (const middleware of this.hooks[hook]) {
      const update = await attributed(middleware, hook, run, () => middleware[hook]!(state, run));
      if (update?.messages !== undefined) state.messages = update.messages;
      if (update?.jumpTo !== undefined) return update.jumpTo;
    }
    return undefined;
  }

  /** The model call through every wrap, the first middleware outermost. */
  wrapModel(base: ModelHandler, run: AgentRun): ModelHandler {
    return this.modelWraps.reduceRight<ModelHandler>((inner, middleware) => {
      const handler = passThrough(inner);
      return (request) => attributed(middleware, "wrapModelCall", run, () => middleware.wrapModelCall!(request, handler, run));
    }, base);
  }

  wrapTool(base: ToolHandler, run: AgentRun): ToolHandler {
    return this.toolWraps.reduceRight<ToolHandler>((inner, middleware) => {
      const handler = passThrough(inner);
      return (request) => attributed(middleware, "wrapToolCall", run, () => middleware.wrapToolCall!(request, handler, run));
    }, base);
  }
}

/** Errors that come up from inside a wrap's handler: they are not the wrap's own, and pass through it unchanged. */
const fromHandlers = new WeakSet<object>();

function passThrough<T extends (request: never) => Promise<unknown>>(handler: T): T {
  return (async (request: never) => {
    try {
      return await handler(request);
    } catch (error) {
      if (typeof error === "object" && error !== null) fromHandlers.add(error);
      throw error;
    }
  }) as T;
}

/** A middleware that raises fails its agent's run with an error naming the class and the hook. */
async function attributed<T>(middleware: Middleware, hook: keyof typeof hookNames, run: AgentRun, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // A cancelled chat ends as cancelled, whatever was running.
    run.session.signal.throwIfAborted();
    if ((typeof error === "object" && error !== null && fromHandlers.has(error)) || error instanceof MiddlewareFailure) throw error;
    throw new MiddlewareFailure(middleware.name, hookNames[hook], error);
  }
}

/**
 * A tool that failed, as the innermost tool handler reports it: a retrying wrap may try again; unhandled, its text (the
 * error as the network formats it) is what the model gets as the tool's result.
 */
export class ToolFailure extends Error {
  override readonly name = "ToolFailure";
  constructor(
    readonly text: string,
    cause: unknown,
  ) {
    super(text, { cause });
  }
}

export class MiddlewareFailure extends AxonError {
  constructor(middleware: string, hook: string, cause: unknown) {
    const what = cause instanceof Error ? (cause instanceof AxonError ? cause.message : `${cause.name}: ${cause.message}`) : String(cause);
    super(Code.FailedPrecondition, "MIDDLEWARE_FAILED", `the middleware ${middleware} failed in ${hook}: ${what}`, {
      metadata: { middleware, hook },
      cause,
    });
  }
}
