import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { runnerFile } from "./python-worker.js";

/** What is wrong with one Python file at load: `SyntaxError: invalid syntax` at a line, or an interpreter that will not start. */
export interface PythonFileProblem {
  line?: number;
  message: string;
}

/**
 * Checks the syntax of Python coded tools when networks load (compiled by the interpreter the tools will run in, never
 * run). The files of one reload go to one short `runner.py check` process; a file is checked again only when it changed.
 */
export class PythonSyntaxCheck {
  private readonly checked = new Map<string, { version: string; problem: PythonFileProblem | undefined }>();
  private batch: Map<string, { version: string; waiters: ((problem: PythonFileProblem | undefined) => void)[] }> | undefined;

  constructor(
    private readonly command: string,
    private readonly importRoots: string[],
  ) {}

  async problemOf(file: string): Promise<PythonFileProblem | undefined> {
    const version = await versionOf(file);
    const known = this.checked.get(file);
    if (known?.version === version) return known.problem;
    return new Promise((resolve) => {
      if (this.batch === undefined) {
        this.batch = new Map();
        setImmediate(() => void this.run());
      }
      const entry = this.batch.get(file) ?? { version, waiters: [] };
      entry.waiters.push(resolve);
      this.batch.set(file, entry);
    });
  }

  private async run(): Promise<void> {
    const batch = this.batch!;
    this.batch = undefined;
    const problems = await this.check([...batch.keys()]);
    for (const [file, { version, waiters }] of batch) {
      const problem = problems instanceof Map ? problems.get(file) : problems;
      this.checked.set(file, { version, problem });
      for (const resolve of waiters) resolve(problem);
    }
  }

  /** Problems by file; one problem for them all when the interpreter cannot run. */
  private check(files: string[]): Promise<Map<string, PythonFileProblem> | PythonFileProblem> {
    return new Promise((resolve) => {
      const child = execFile(this.command, [runnerFile, "check", ...this.importRoots], { timeout: 30_000 }, (error, stdout) => {
        if (error) return resolve({ message: `the Python interpreter ${this.command} could not check it (${error.message.split("\n")[0]})` });
        const { problems } = JSON.parse(stdout) as { problems: ({ file: string } & PythonFileProblem)[] };
        resolve(new Map(problems.map(({ file, line, message }) => [file, { ...(line == null ? {} : { line }), message }])));
      });
      child.stdin!.on("error", () => {});
      child.stdin!.end(JSON.stringify({ files }));
    });
  }
}

async function versionOf(file: string): Promise<string> {
  try {
    const info = await stat(file);
    return `${info.mtimeMs}:${info.size}:${info.ino}`;
  } catch {
    return "missing";
  }
}
