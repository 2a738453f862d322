import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface GitRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface GitSandbox {
  /** A HOME of its own: the user's Git configuration is never read nor written. */
  home: string;
  env: Record<string, string>;
  /** Runs Debian's git; rejects unless it exits 0. */
  git(args: string[], options?: { cwd?: string; input?: Buffer | string; env?: Record<string, string> }): Promise<string>;
  /** Runs git and resolves whatever it exits with. */
  run(args: string[], options?: { cwd?: string; input?: Buffer | string; env?: Record<string, string> }): Promise<GitRun>;
  /** Runs git and resolves its standard output as bytes. */
  bytes(args: string[], options?: { cwd?: string; input?: Buffer | string }): Promise<Buffer>;
  /** A new work tree with one commit of `files`, under the sandbox. */
  repository(name: string, files?: Record<string, string | Buffer>): Promise<string>;
  /** Writes `files` and commits them; resolves the new commit id. */
  commit(cwd: string, message: string, files: Record<string, string | Buffer>): Promise<string>;
}

export function gitSandbox(): GitSandbox {
  const home = mkdtempSync(path.join(os.tmpdir(), "axon-git-home-"));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_AUTHOR_NAME: "Agent",
    GIT_AUTHOR_EMAIL: "agent@example.com",
    GIT_COMMITTER_NAME: "Agent",
    GIT_COMMITTER_EMAIL: "agent@example.com",
    LANG: "C",
  };
  writeFileSync(path.join(home, ".gitconfig"), "[init]\n\tdefaultBranch = main\n[protocol]\n\tversion = 2\n");

  const spawnGit = (args: string[], options: { cwd?: string; input?: Buffer | string; env?: Record<string, string> } = {}) =>
    new Promise<{ code: number | null; stdout: Buffer; stderr: string }>((resolve, reject) => {
      const child = spawn("git", args, { cwd: options.cwd ?? home, env: { ...env, ...options.env }, stdio: ["pipe", "pipe", "pipe"] });
      const stdout: Buffer[] = [];
      let stderr = "";
      child.stdout.on("data", (piece: Buffer) => stdout.push(piece));
      child.stderr.setEncoding("utf8").on("data", (piece: string) => (stderr += piece));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, stdout: Buffer.concat(stdout), stderr }));
      // A git that exits before reading its input (a failed command) closes the pipe under us: its exit says why.
      child.stdin.on("error", () => undefined);
      child.stdin.end(options.input ?? "");
    });

  const sandbox: GitSandbox = {
    home,
    env,
    async run(args, options) {
      const { code, stdout, stderr } = await spawnGit(args, options);
      return { code, stdout: stdout.toString("utf8"), stderr };
    },
    async git(args, options) {
      const result = await spawnGit(args, options);
      if (result.code !== 0) throw new Error(`git ${args.join(" ")} exited ${result.code}\n${result.stderr}`);
      return result.stdout.toString("utf8").trim();
    },
    async bytes(args, options) {
      const result = await spawnGit(args, options);
      if (result.code !== 0) throw new Error(`git ${args.join(" ")} exited ${result.code}\n${result.stderr}`);
      return result.stdout;
    },
    async repository(name, files = { "README.md": `# ${name}\n` }) {
      const cwd = path.join(home, name);
      await sandbox.git(["init", "-q", cwd]);
      await sandbox.commit(cwd, "first", files);
      return cwd;
    },
    async commit(cwd, message, files) {
      for (const [file, content] of Object.entries(files)) writeFileSync(path.join(cwd, file), content);
      await sandbox.git(["add", "-A"], { cwd });
      await sandbox.git(["commit", "-q", "-m", message], { cwd });
      return sandbox.git(["rev-parse", "HEAD"], { cwd });
    },
  };
  return sandbox;
}
