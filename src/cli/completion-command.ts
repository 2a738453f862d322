import type { Command, Option } from "commander";
import { printLine } from "./output.js";

export type CompletionShell = "bash" | "zsh" | "fish";

/** One command of the tree as completion sees it: its path from the root ("" for axon itself, "op submit", ...). */
interface CompletedCommand {
  path: string;
  description: string;
  subcommands: { name: string; description: string }[];
  /** Its own options and the global ones, which every command takes. */
  options: CompletedOption[];
}

interface CompletedOption {
  flags: string[];
  description: string;
  takesValue: boolean;
  choices: readonly string[];
}

/**
 * `axon completion <shell>`: a script that completes commands, options and option choices, written from the
 * command tree itself, so it never falls behind a new command. Nothing runs at Tab: completion is instant and
 * needs no server.
 */
export function printCompletion(program: Command, shell: CompletionShell): void {
  const commands = commandTree(program);
  printLine(shell === "bash" ? bashScript(commands) : shell === "zsh" ? zshScript(commands) : fishScript(commands));
}

function commandTree(program: Command): CompletedCommand[] {
  // --version belongs to axon itself; the other options of the root are global.
  const globals = program.options.filter((option) => option.long !== "--version").map(completedOption);
  const help: CompletedOption = { flags: ["-h", "--help"], description: "show help", takesValue: false, choices: [] };
  const commands: CompletedCommand[] = [];
  const visit = (command: Command, path: string) => {
    const own = command.options.filter((option) => command !== program || option.long === "--version").map(completedOption);
    commands.push({
      path,
      description: command.description(),
      // A positional argument with choices (`completion <shell>`) completes like subcommands.
      subcommands: [
        ...command.commands.map((sub) => ({ name: sub.name(), description: sub.description() })),
        ...command.registeredArguments.flatMap((argument) => (argument.argChoices ?? []).map((choice) => ({ name: choice, description: argument.description }))),
      ],
      options: [...own, ...globals, help],
    });
    for (const sub of command.commands) visit(sub, path === "" ? sub.name() : `${path} ${sub.name()}`);
  };
  visit(program, "");
  return commands;
}

function completedOption(option: Option): CompletedOption {
  return {
    flags: [option.short, option.long].filter((flag): flag is string => flag !== undefined),
    description: option.description,
    takesValue: option.required || option.optional,
    choices: option.argChoices ?? [],
  };
}

/** Every flag anywhere that takes a value: the word after it is a value, never a command. */
function valueFlags(commands: CompletedCommand[]): string[] {
  return [...new Set(commands.flatMap((command) => command.options.filter((option) => option.takesValue).flatMap((option) => option.flags)))];
}

const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

function bashScript(commands: CompletedCommand[]): string {
  const paths = commands.filter((command) => command.path !== "").map((command) => quoted(command.path));
  const choiceCases = commands.flatMap((command) =>
    command.options
      .filter((option) => option.choices.length > 0)
      .map((option) => `    ${option.flags.map((flag) => quoted(`${command.path}|${flag}`)).join("|")}) COMPREPLY=($(compgen -W ${quoted(option.choices.join(" "))} -- "$cur")); return;;`),
  );
  const wordCases = commands.map((command) => {
    const words = [...command.subcommands.map((sub) => sub.name), ...command.options.flatMap((option) => option.flags)];
    return `    ${quoted(command.path)}) words=${quoted(words.join(" "))};;`;
  });
  return `# axon completion for bash. Load it with: source <(axon completion bash)
_axon() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" word words i
  # The command path so far (e.g. "op submit"), skipping options and their values.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$word" in
      ${valueFlags(commands).join("|")}) ((i++)); continue;;
    esac
    case "\${path:+$path }$word" in
      ${paths.join("|")}) path="\${path:+$path }$word";;
    esac
  done
  case "$path|$prev" in
${choiceCases.join("\n")}
  esac
  case "$prev" in
    ${valueFlags(commands).join("|")}) COMPREPLY=(); return;;
  esac
  case "$path" in
${wordCases.join("\n")}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _axon axon`;
}

function zshScript(commands: CompletedCommand[]): string {
  const paths = commands.filter((command) => command.path !== "").map((command) => quoted(command.path));
  // _describe reads "word:description"; a colon inside either must be escaped.
  const entry = (word: string, description: string) => quoted(`${word.replaceAll(":", "\\:")}:${description.replaceAll(":", "\\:")}`);
  const choiceCases = commands.flatMap((command) =>
    command.options
      .filter((option) => option.choices.length > 0)
      .map((option) => `    (${option.flags.map((flag) => quoted(`${command.path}|${flag}`)).join("|")}) compadd -- ${option.choices.map(quoted).join(" ")}; return;;`),
  );
  const candidateCases = commands.map((command) => {
    const entries = [
      ...command.subcommands.map((sub) => entry(sub.name, sub.description)),
      ...command.options.flatMap((option) => option.flags.map((flag) => entry(flag, option.description))),
    ];
    return `    (${quoted(command.path)}) candidates=(${entries.join(" ")});;`;
  });
  return `#compdef axon
# axon completion for zsh. Load it after compinit with: source <(axon completion zsh)
_axon() {
  local path_="" word i
  local -a candidates
  for ((i = 2; i < CURRENT; i++)); do
    word=\${words[i]}
    case $word in
      (${valueFlags(commands).join("|")}) ((i++)); continue;;
    esac
    case "\${path_:+$path_ }$word" in
      (${paths.join("|")}) path_="\${path_:+$path_ }$word";;
    esac
  done
  local prev=\${words[CURRENT-1]}
  case "$path_|$prev" in
${choiceCases.join("\n")}
  esac
  case $prev in
    (${valueFlags(commands).join("|")}) _default; return;;
  esac
  case $path_ in
${candidateCases.join("\n")}
  esac
  _describe -t commands axon candidates
}
compdef _axon axon`;
}

function fishScript(commands: CompletedCommand[]): string {
  const lines = ["# axon completion for fish. Load it with: axon completion fish | source", "complete -c axon -f"];
  // The root's options (the global ones and --help) are completed everywhere by one line each.
  const everywhere = new Set(commands[0]?.options.flatMap((option) => option.flags));
  for (const command of commands) {
    const words = command.path === "" ? [] : command.path.split(" ");
    // fish sees which words were typed, not their order: a path is "each of its words seen".
    const seen = words.map((word) => `__fish_seen_subcommand_from ${word}`);
    const subcommandNames = command.subcommands.map((sub) => sub.name).join(" ");
    const atThisCommand = [...(words.length === 0 ? ["__fish_use_subcommand"] : seen), ...(subcommandNames && words.length > 0 ? [`not __fish_seen_subcommand_from ${subcommandNames}`] : [])];
    for (const sub of command.subcommands) {
      lines.push(`complete -c axon -n ${quoted(atThisCommand.join("; and "))} -a ${quoted(sub.name)} -d ${quoted(sub.description)}`);
    }
    const inThisCommand = seen.length === 0 ? "" : ` -n ${quoted(seen.join("; and "))}`;
    for (const option of command.options) {
      if (command.path !== "" && option.flags.every((flag) => everywhere.has(flag))) continue;
      const flags = option.flags.map((flag) => (flag.startsWith("--") ? `-l ${flag.slice(2)}` : `-s ${flag.slice(1)}`)).join(" ");
      const value = option.choices.length > 0 ? ` -x -a ${quoted(option.choices.join(" "))}` : option.takesValue ? " -r" : "";
      lines.push(`complete -c axon${inThisCommand} ${flags}${value} -d ${quoted(option.description)}`);
    }
  }
  return lines.join("\n");
}
