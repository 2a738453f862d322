/**
 * The `axon` command. bin/axon.mjs runs this file's build (dist/cli/main.js); everything else is here.
 * Commands that call a server report a failure as one line on stderr, `axon: <message> (<REASON>, <CODE>)`, and exit
 * with the status EXIT_STATUS_HELP documents.
 */
import { Argument, Command, CommanderError, Help, InvalidArgumentError, Option } from "commander";
import { axonPackage } from "../project-root.js";
import { CHAT_PROTOCOLS } from "./chat-protocols.js";
import type { CompletionShell } from "./completion-command.js";
import { parseJsonObject, parsePositiveInteger, type CliContext } from "./context.js";
import { CliFailure, EXIT_STATUS_HELP, ExitStatus, failureLine } from "./cli-failure.js";
import { rerunTrusting } from "./trusted-ca.js";

// Each command loads its module when it runs: a CLI invocation pays only for what it uses.
const networkCommands = () => import("./network-commands.js");
const chatCommand = () => import("./chat-command.js");
const operationCommands = () => import("./operation-commands.js");
const operatorCommands = () => import("./operator-commands.js");
const clientsCommand = () => import("./clients-command.js");
const processCommands = () => import("./process-commands.js");
const completionCommand = () => import("./completion-command.js");

/** Commands that keep serving after their action returns: the process must not exit under them. */
const LONG_RUNNING = new Set(["serve", "mcp"]);

export function buildProgram(): Command {
  const program = new Command("axon")
    .description("Serve and use Axon: agent networks (neuro-san API) and Agent Operations V1.")
    .version(axonPackage.version, "-V, --version", "print the version")
    .addOption(new Option("--url <url>", "the server's URL").env("AXON_URL").default("http://localhost:8080").argParser(serverUrl))
    .addOption(new Option("--ca-file <pem>", "trust this CA (PEM) for an https --url").env("AXON_CA_FILE"))
    .addOption(new Option("--json", "machine output: exactly one JSON document on stdout"))
    .addOption(new Option("--token <secret>", "client secret (operations, grants, mcp)").env("AXON_TOKEN"))
    .addOption(new Option("--operator-token <secret>", "operator secret (operator commands)").env("AXON_OPERATOR_TOKEN"))
    // Every command's help lists the global options too, and says which of its own options are required.
    .configureHelp({
      showGlobalOptions: true,
      optionDescription(option) {
        const description = Help.prototype.optionDescription.call(this, option);
        return option.mandatory ? `${description} (required)` : description;
      },
    })
    .showHelpAfterError("(run axon --help for usage)")
    .addHelpText("after", `\n${EXIT_STATUS_HELP}`)
    .exitOverride()
    .configureOutput({ outputError: (message, write) => write(`axon: ${message.replace(/^error: /, "")}`) });

  const context = (command: Command): CliContext => {
    const options = command.optsWithGlobals<{ url: string; json?: boolean; token?: string; operatorToken?: string }>();
    return { url: options.url, json: options.json === true, token: options.token, operatorToken: options.operatorToken };
  };
  // commander reports an InvalidArgumentError as a usage error naming the option.
  const parsedBy =
    <T>(parse: (value: string, option: string) => T, option: string) =>
    (value: string): T => {
      try {
        return parse(value, option);
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message);
      }
    };
  const integer = (option: string) => parsedBy(parsePositiveInteger, option);
  const jsonOption = (flags: string, description: string) => new Option(flags, description).argParser(parsedBy(parseJsonObject, flags.split(" ")[0] ?? flags));

  program
    .command("serve")
    .description("run the server (configured by the environment: AGENT_HTTP_PORT, AXON_DATA_DIR, LLM keys, ...)")
    .action(async () => (await processCommands()).serve());
  program
    .command("mcp")
    .description("an MCP server on stdio for the client whose secret is --token (or AXON_MCP_TOKEN)")
    .action(async (_options, command: Command) => {
      const { token } = context(command);
      return (await processCommands()).serveMcp(token);
    });
  program
    .command("test")
    .description("run data-driven network tests (.hocon files or folders of them) against --url")
    .argument("<files...>", "test case files, or folders of them")
    .option("--timeout <seconds>", "per interaction, unless the case sets timeout_in_seconds")
    .option("--judge <model>", "the LLM that judges gist tests")
    .action(async (files: string[], options: { timeout?: string; judge?: string }, command: Command) => {
      const { url, json: asJson } = context(command);
      const { runNetworkTestsCommand } = await import("../network-tests/cli.js");
      const argv = ["--url", url, ...(asJson ? ["--json"] : []), ...(options.timeout ? ["--timeout", options.timeout] : []), ...(options.judge ? ["--judge", options.judge] : []), ...files];
      process.exitCode = await runNetworkTestsCommand(argv);
    });

  program.command("list").description("the public networks").action(async (_options, command: Command) => (await networkCommands()).listNetworks(context(command)));
  program
    .command("function")
    .description("a network's function: what it takes, in its parameters and sly_data")
    .argument("<network>", "a network name (axon list shows the public ones)")
    .action(async (network: string, _options, command: Command) => (await networkCommands()).showFunction(context(command), network));
  program
    .command("connectivity")
    .description("a network's agents and tools, as a tree")
    .argument("<network>", "a network name")
    .action(async (network: string, _options, command: Command) => (await networkCommands()).showConnectivity(context(command), network));

  program
    .command("chat")
    .description("chat with a network; interactive unless -m is given (quit or Ctrl-D ends)")
    .argument("<network>", "a network name")
    .option("-m, --message <text>", "one turn; repeat for several turns in order", (value: string, previous: string[]) => [...previous, value], [] as string[])
    .addOption(new Option("--protocol <protocol>", "how to call StreamingChat").choices(CHAT_PROTOCOLS).default("http"))
    .addOption(jsonOption("--sly-data <json>", "sly_data (a JSON object), sent on every turn with what the network returns merged over it"))
    .option("--maximal", "show the network thinking: every message as it streams, with its origin")
    .action(async (network: string, options: { message: string[]; protocol: string; slyData?: Record<string, unknown>; maximal?: boolean }, command: Command) =>
      (await chatCommand()).chat(context(command), network, {
        protocol: options.protocol,
        maximal: options.maximal === true,
        messages: options.message,
        ...(options.slyData ? { slyData: options.slyData } : {}),
      }),
    );

  const op = program.command("op").description("agent operations (needs --token)");
  op.command("submit")
    .description("submit an operation; returns at once")
    .requiredOption("--operation <type>", "e.g. agent.chat or http.request")
    .addOption(jsonOption("--target <json>", "the target (a JSON object)").makeOptionMandatory())
    .addOption(jsonOption("--arguments <json>", "the arguments (a JSON object)").default({}, "{}"))
    .requiredOption("--reason <text>", "why, for the operator and the audit")
    .option("--key <key>", "idempotency key (generated when absent)")
    .action(async (options: { operation: string; target: Record<string, unknown>; arguments: Record<string, unknown>; reason: string; key?: string }, command: Command) =>
      (await operationCommands()).submitOperation(context(command), options),
    );
  op.command("get").argument("<id>", "an operation id (op_...)").description("an operation").action(async (id: string, _options, command: Command) => (await operationCommands()).getOperation(context(command), id));
  op.command("wait")
    .argument("<id>", "an operation id")
    .description("wait until the operation is terminal; exit status 0 only if it succeeded")
    .option("--timeout <seconds>", "give up after this many seconds (exit status 1)", integer("--timeout"))
    .action(async (id: string, options: { timeout?: number }, command: Command) => (await operationCommands()).waitForOperation(context(command), id, options.timeout));
  op.command("list")
    .description("your operations, newest first")
    .option("--state <state>", "only in this state")
    .option("--limit <n>", "at most n (1-50)", integer("--limit"))
    .option("--key <key>", "only with this idempotency key")
    .action(async (options: { state?: string; limit?: number; key?: string }, command: Command) => (await operationCommands()).listOperations(context(command), options));
  op.command("cancel").argument("<id>", "an operation id").description("cancel a pending or approved operation; exit status 5 if it can no longer be").action(async (id: string, _options, command: Command) => (await operationCommands()).cancelOperation(context(command), id));

  const grant = program.command("grant").description("grants ahead of use (needs --token)");
  grant
    .command("request")
    .description("ask for a grant")
    .requiredOption("--operation <type>", "the operation type")
    .addOption(jsonOption("--target <json>", "the target (a JSON object)").makeOptionMandatory())
    .requiredOption("--reason <text>", "why")
    .option("--minutes <n>", "a window of n minutes", integer("--minutes"))
    .option("--max-uses <n>", "at most n uses", integer("--max-uses"))
    .option("--id <client_request_id>", "idempotency id (generated when absent)")
    .action(async (options: { operation: string; target: Record<string, unknown>; reason: string; minutes?: number; maxUses?: number; id?: string }, command: Command) =>
      (await operationCommands()).requestGrant(context(command), options),
    );
  grant.command("get").argument("<id>", "a grant id").description("a grant").action(async (id: string, _options, command: Command) => (await operationCommands()).getGrant(context(command), id));
  grant.command("list").description("your grants").action(async (_options, command: Command) => (await operationCommands()).listGrants(context(command)));

  const operator = program.command("operator").description("approvals (needs --operator-token)");
  operator
    .command("list")
    .description("requests awaiting or holding a decision")
    .addOption(new Option("--status <status>", "which requests").choices(["pending", "active", "history", "all"]).default("pending"))
    .action(async (options: { status: string }, command: Command) => (await operatorCommands()).listRequests(context(command), options.status));
  operator
    .command("approve")
    .argument("<id>", "a request id (an operation's approval_id)")
    .description("approve a pending request (terms may only narrow it)")
    .option("--minutes <n>", "a window of n minutes", integer("--minutes"))
    .option("--max-uses <n>", "at most n uses", integer("--max-uses"))
    .option("--reason <text>", "why, for the audit")
    .addOption(jsonOption("--arguments <json>", "a held tool call goes ahead with these arguments instead (where it allows an edit)"))
    .action(async (id: string, options: { minutes?: number; maxUses?: number; reason?: string; arguments?: Record<string, unknown> }, command: Command) =>
      (await operatorCommands()).decide(context(command), "approve", id, options),
    );
  operator
    .command("get")
    .argument("<id>", "a request id (an operation's approval_id)")
    .description("a request, with what its operation or held call asks for")
    .action(async (id: string, _options, command: Command) => (await operatorCommands()).getRequest(context(command), id));
  operator
    .command("deny")
    .argument("<id>", "a request id (an operation's approval_id)")
    .description("deny a pending request")
    .option("--reason <text>", "why, for the audit")
    .action(async (id: string, options: { reason?: string }, command: Command) => (await operatorCommands()).decide(context(command), "deny", id, options));
  operator
    .command("revoke")
    .argument("<id>", "a request id (an operation's approval_id)")
    .description("revoke an active grant")
    .option("--reason <text>", "why, for the audit")
    .action(async (id: string, options: { reason?: string }, command: Command) => (await operatorCommands()).decide(context(command), "revoke", id, options));
  operator
    .command("watch")
    .description("the operator feed, one line per event (Ctrl-C ends)")
    .option("--after <seq>", "start after this event instead of with the next one (0: from the beginning)", (value: string) => {
      if (!/^\d+$/.test(value)) throw new InvalidArgumentError("--after needs an event sequence number");
      return Number(value);
    })
    .action(async (options: { after?: number }, command: Command) => (await operatorCommands()).watchEvents(context(command), options.after));

  const clients = program.command("clients").description("the clients file the server reads at start");
  clients
    .command("add")
    .argument("<name>", "the client's name")
    .description("add a client with a new secret, shown once")
    .option("--file <path>", "the clients file (default: AXON_CLIENTS_FILE, else $AXON_DATA_DIR/clients, else ./data/clients)")
    .action(async (name: string, options: { file?: string }, command: Command) => (await clientsCommand()).addClient(context(command), name, options.file ?? (await clientsCommand()).defaultClientsFile()));

  program
    .command("completion")
    .description("a shell completion script; e.g. source <(axon completion bash) in ~/.bashrc")
    .addArgument(new Argument("<shell>", "the shell").choices(["bash", "zsh", "fish"]))
    .action(async (shell: CompletionShell) => (await completionCommand()).printCompletion(program, shell));

  return program;
}

/** --url: an http(s) URL, refused as a usage error before anything is called. */
function serverUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "http:" && url?.protocol !== "https:") throw new InvalidArgumentError("it must be an http or https URL, such as http://localhost:8080");
  return value;
}

/**
 * Runs the command line: the exit status, and whether the command keeps serving (serve, mcp) so that the process
 * must stay up after this returns.
 */
export async function runCli(argv: string[]): Promise<{ status: number; serving: boolean }> {
  const program = buildProgram();
  let url = "http://localhost:8080";
  let serving = false;
  try {
    program.hook("preAction", (_program, action) => {
      const options = action.optsWithGlobals<{ url: string; caFile?: string }>();
      url = options.url;
      if (options.caFile) rerunTrusting(options.caFile);
      serving = action.parent === program && LONG_RUNNING.has(action.name());
    });
    await program.parseAsync(argv, { from: "user" });
    return { status: typeof process.exitCode === "number" ? process.exitCode : ExitStatus.ok, serving };
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are not errors; everything else commander raises is a usage error it already printed.
      return { status: error.exitCode === 0 ? ExitStatus.ok : ExitStatus.usage, serving: false };
    }
    // Reading a server's error takes protobuf and Connect: loaded only for one, never for `axon --help`.
    const failure = error instanceof CliFailure ? error : (await import("./failure.js")).toCliFailure(error, url);
    process.stderr.write(failureLine(failure));
    return { status: failure.exitStatus, serving: false };
  }
}

const { status, serving } = await runCli(process.argv.slice(2));
if (serving) {
  process.exitCode = status;
} else {
  // Idle keep-alive connections (HTTP/2 sessions of the RPC transports) must not hold the process open.
  process.stdout.write("", () => process.exit(status));
}
