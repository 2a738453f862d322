import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { runnerFile } from "./python-worker.js";

/**
 * What is wrong at load with one Python file (`SyntaxError: invalid syntax` at a line) or module (its package is not
 * installed), or with the interpreter itself (it will not start).
 */
export interface PythonProblem {
  line?: number;
  message: string;
}

type Waiter = (problem: PythonProblem | undefined) => void;

interface Batch {
  files: Map<string, { version: string; waiters: Waiter[] }>;
  modules: Map<string, Waiter[]>;
}

/**
 * Checks, when networks load, what Python tools need, with the interpreter they will run in: that coded tools' files
 * compile (never run) and that library tools' modules can be found (never imported). What one reload asks goes to one
 * short `runner.py check` process; a file is checked again only when it changed, a module at every reload (its package
 * may have been installed since).
 */
export class PythonLoadCheck {
  private readonly checked = new Map<string, { version: string; problem: PythonProblem | undefined }>();
  private batch: Batch | undefined;

  constructor(
    private readonly command: string,
    private readonly importRoots: string[],
  ) {}

  async problemOf(file: string): Promise<PythonProblem | undefined> {
    const version = await versionOf(file);
    const known = this.checked.get(file);
    if (known?.version === version) return known.problem;
    return new Promise((resolve) => {
      const { files } = this.nextBatch();
      const entry = files.get(file) ?? { version, waiters: [] };
      entry.waiters.push(resolve);
      files.set(file, entry);
    });
  }

  moduleProblem(module: string): Promise<PythonProblem | undefined> {
    return new Promise((resolve) => {
      const { modules } = this.nextBatch();
      modules.set(module, [...(modules.get(module) ?? []), resolve]);
    });
  }

  private nextBatch(): Batch {
    if (this.batch === undefined) {
      this.batch = { files: new Map(), modules: new Map() };
      setImmediate(() => void this.run());
    }
    return this.batch;
  }

  private async run(): Promise<void> {
    const { files, modules } = this.batch!;
    this.batch = undefined;
    const problems = await this.check([...files.keys()], [...modules.keys()]);
    const problemOf = (key: string) => (problems instanceof Map ? problems.get(key) : problems);
    for (const [file, { version, waiters }] of files) {
      const problem = problemOf(file);
      this.checked.set(file, { version, problem });
      for (const resolve of waiters) resolve(problem);
    }
    for (const [module, waiters] of modules) for (const resolve of waiters) resolve(problemOf(module));
  }

  /** Problems by file or module (a file's absolute path, a module's dotted name); one for them all when the interpreter cannot run. */
  private check(files: string[], modules: string[]): Promise<Map<string, PythonProblem> | PythonProblem> {
    return new Promise((resolve) => {
      const child = execFile(this.command, [runnerFile, "check", ...this.importRoots], { timeout: 30_000 }, (error, stdout) => {
        if (error) return resolve({ message: `the Python interpreter ${this.command} could not check it (${error.message.split("\n")[0]})` });
        const { problems } = JSON.parse(stdout) as { problems: ({ file?: string; module?: string } & PythonProblem)[] };
        resolve(new Map(problems.map(({ file, module, line, message }) => [file ?? module!, { ...(line == null ? {} : { line }), message }])));
      });
      child.stdin!.on("error", () => {});
      child.stdin!.end(JSON.stringify({ files, modules }));
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
