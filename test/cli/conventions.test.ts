import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";
import { runAxon, type Run } from "./run-axon.js";

let server: TestServer;
const axon = (args: string[], env: Record<string, string> = {}): Promise<Run> => runAxon(args, { AXON_URL: server.url, ...env });

beforeAll(async () => {
  server = await startTestServer({ env: { AGENT_MANIFEST_FILE: "test/fixtures/cli/manifest.hocon" } });
});
afterAll(async () => {
  await server?.close();
});

describe("axon's command-line conventions", () => {
  it("lists the global options in every command's help and marks the required options", async () => {
    for (const command of [["chat"], ["op", "submit"], ["operator", "approve"], ["completion"]]) {
      const help = await axon([...command, "--help"]);
      expect(help.status).toBe(0);
      for (const global of ["--url <url>", "--json", "--token <secret>", "--operator-token <secret>"]) expect(help.stdout).toContain(global);
    }
    const submit = (await axon(["op", "submit", "--help"])).stdout;
    const line = (flag: string) => submit.split("\n").find((each) => each.trimStart().startsWith(flag)) ?? "";
    for (const required of ["--operation", "--target", "--reason"]) expect(line(required)).toContain("(required)");
    for (const optional of ["--arguments", "--key"]) expect(line(optional)).not.toContain("(required)");
  });

  it("prints its version", async () => {
    const { version } = JSON.parse(readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version: string };
    expect(await axon(["--version"])).toEqual({ status: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("refuses a --url that is not an http(s) URL as a usage error, before calling anyone", async () => {
    for (const [args, env] of [[["--url", "not-a-url", "list"], {}], [["list"], { AXON_URL: "ftp://example.com" }]] as const) {
      const run = await runAxon([...args], env);
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/^axon: option '--url <url>' (argument|value) '(not-a-url|ftp:\/\/example\.com)'( from env 'AXON_URL')? is invalid\. it must be an http or https URL, such as http:\/\/localhost:8080\n/);
    }
  });

  it("shows a network's function as sections, without leading blank lines, sly_data included", async () => {
    const run = await axon(["function", "calc"]);
    expect(run.stdout).toBe(
      [
        "PARAMETER   TYPE          DESCRIPTION",
        "operation*  add|multiply  What to do with x and y.",
        "",
        "SLY_DATA IN  TYPE    DESCRIPTION",
        "x*           number  The left operand.",
        "y*           number  The right operand.",
        "",
        "SLY_DATA OUT  TYPE    DESCRIPTION",
        "result        number",
        "",
        "* required",
        "",
      ].join("\n"),
    );
  });

  it("completes commands, subcommands, options and their choices in bash", async () => {
    const complete = async (...words: string[]) => {
      // The words typed so far, the last one being completed, as bash hands them to the completion function.
      const script = `source <(node bin/axon.mjs completion bash); COMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _axon; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const run = await new Promise<string>((resolve, reject) => {
        const child = spawn("bash", ["-c", script], { cwd: projectRoot, env: { PATH: process.env.PATH ?? "" } });
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.on("error", reject);
        child.on("close", () => resolve(out));
      });
      return run.split("\n").filter((line) => line !== "");
    };
    expect(await complete("axon", "op", "s")).toEqual(["submit"]);
    expect(await complete("axon", "--url", "http://x", "op", "c")).toEqual(["cancel"]);
    expect(await complete("axon", "chat", "hello_world", "--protocol", "grpc")).toEqual(["grpc", "grpc-web"]);
    expect(await complete("axon", "operator", "list", "--status", "")).toEqual(["pending", "active", "history", "all"]);
    expect(await complete("axon", "op", "submit", "--re")).toEqual(["--reason"]);
    expect(await complete("axon", "completion", "")).toEqual(expect.arrayContaining(["bash", "zsh", "fish", "--url", "--help"]));
    expect(await complete("axon", "op", "")).not.toContain("--version");
    expect(await complete("axon", "")).toEqual(expect.arrayContaining(["serve", "chat", "op", "operator", "completion", "--url", "--version"]));
  });

  it("writes completion scripts for zsh and fish, and refuses other shells", async () => {
    const zsh = await axon(["completion", "zsh"]);
    expect(zsh.stdout).toMatch(/^#compdef axon\n/);
    expect(zsh.stdout).toContain("('chat|--protocol') compadd -- 'http' 'connect' 'grpc' 'grpc-web'; return;;");
    const fish = await axon(["completion", "fish"]);
    expect(fish.stdout).toContain("complete -c axon -n '__fish_seen_subcommand_from op; and not __fish_seen_subcommand_from submit get wait list cancel' -a 'submit'");
    expect(fish.stdout).toContain("complete -c axon -n '__fish_seen_subcommand_from chat' -l protocol -x -a 'http connect grpc grpc-web'");
    const other = await axon(["completion", "powershell"]);
    expect(other.status).toBe(2);
    expect(other.stderr).toContain("'powershell' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish.");
  });
});

const has = (shell: string) => existsSync(`/usr/bin/${shell}`);
const shellOutput = (shell: string, script: string) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(shell, ["-c", script], { cwd: projectRoot, env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir() } });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", () => resolve(out));
  });

describe("completion in the shells themselves", () => {
  it.skipIf(!has("fish"))(`completes subcommands and choices in fish${has("fish") ? "" : " (skipped: no fish; apt-get install -y fish)"}`, async () => {
    const out = await shellOutput("fish", 'node bin/axon.mjs completion fish | source; complete -C "axon op s"; complete -C "axon chat x --protocol g"');
    expect(out).toBe("submit\tsubmit an operation; returns at once\ngrpc\thow to call StreamingChat\ngrpc-web\thow to call StreamingChat\n");
  });

  it.skipIf(!has("zsh"))(`loads in zsh after compinit${has("zsh") ? "" : " (skipped: no zsh; apt-get install -y zsh)"}`, async () => {
    const out = await shellOutput("zsh", "autoload -U compinit; compinit -u -d $HOME/.axon-zcompdump; source <(node bin/axon.mjs completion zsh); print -r -- $_comps[axon]");
    expect(out).toBe("_axon\n");
  });
});

describe("axon serve", () => {
  /** `axon serve` on port 0 until it says where it serves, then Ctrl-C; everything it wrote. */
  async function serveUntilReady(onTerminal: boolean): Promise<string> {
    const env = { PATH: process.env.PATH ?? "", TERM: "xterm", AGENT_HTTP_PORT: "0", AXON_HOST: "127.0.0.1", LOG_LEVEL: "info", AXON_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "axon-serve-")) };
    const child = onTerminal
      ? spawn("script", ["--quiet", "--return", "--flush", "--command", "node bin/axon.mjs serve", "/dev/null"], { cwd: projectRoot, env })
      : spawn(process.execPath, ["bin/axon.mjs", "serve"], { cwd: projectRoot, env });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const closed = new Promise((resolve) => child.on("close", resolve));
    try {
      await until(() => output.includes("Axon is serving"), "axon serve to start", 20_000);
    } finally {
      // Ctrl-C as a terminal sends it (to the whole foreground group), or SIGINT to the process on a pipe.
      if (onTerminal) child.stdin.write("\x03");
      else child.kill("SIGINT");
      await closed;
    }
    return output;
  }

  it("logs JSON lines on a pipe", async () => {
    const output = await serveUntilReady(false);
    const lines = output.trim().split("\n");
    const started = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => typeof entry.url === "string");
    expect(started).toMatchObject({ level: 30, msg: expect.stringContaining("Axon is serving") });
  });

  it("shows its logs for a person on a terminal: time, level, message and fields, no JSON", async () => {
    const output = await serveUntilReady(true);
    const started = output.split(/\r?\n/).find((line) => line.includes("Axon is serving"))!;
    // eslint-disable-next-line no-control-regex
    expect(started.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(/^\d\d:\d\d:\d\d INFO  Axon is serving gRPC, gRPC-Web, Connect and REST on http:\/\/localhost:\d+ {2}url=http:\/\/localhost:\d+ /);
    expect(output).not.toContain('{"level"');
  });
});
