import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { gitSandbox, type GitSandbox } from "../test/support/git.js";
import { startGitHost } from "../test/support/git-host.js";
import { machine } from "./machine.js";
import type { AxonReady } from "./serve-axon.js";
import { startServerProcess } from "./server-process.js";

/*
 * `npm run bench:git`: a clone and a push of the same repository through Axon's Git broker (`/git/<host>/...`) and
 * directly against the same upstream (git http-backend behind a node:http server that demands the token), alternated
 * in the same run: wall time of the whole `git` command, and smart-HTTP body bytes the client exchanged (counted by
 * Axon for the brokered runs, by the host for the direct ones). Then one push of a large pack of incompressible data
 * through Axon, sampling Axon's RSS. Axon runs from the build in its own process (bench/serve-axon.ts). Prints
 * Markdown for docs/benchmarks.md.
 */

const { values: flags } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    files: { type: "string", default: "3000" },
    commits: { type: "string", default: "60" },
    "large-mib": { type: "string", default: "300" },
  },
});
const runs = Number(flags.runs);
const MiB = 1024 * 1024;
const secret = randomBytes(32).toString("base64url");
const dir = mkdtempSync(path.join(os.tmpdir(), "axon-bench-git-"));
const file = (name: string, text: string) => {
  writeFileSync(path.join(dir, name), text, { mode: 0o600 });
  return path.join(dir, name);
};

const host = await startGitHost();
const axon = await startServerProcess<AxonReady>(new URL("./serve-axon.ts", import.meta.url), {
  env: {
    BENCH_AXON_ENV: JSON.stringify({
      AXON_CLIENTS_FILE: file("clients", `bench = ${secret}\n`),
      AXON_OPERATORS_FILE: file("operators", `ops = ${randomBytes(32).toString("base64url")}\n`),
      AXON_POLICY_FILE: file("policy.json", JSON.stringify({ rules: [{ id: "bench", effect: "allow", operations: ["git.*"] }] })),
      AXON_GIT_HOSTS_FILE: file("hosts.hocon", `bench { base_url: "${host.url}", token_env: "BENCH_HOST_TOKEN" }\n`),
      BENCH_HOST_TOKEN: host.token,
    }),
  },
});
const axonUrl = `http://127.0.0.1:${axon.ready.port}`;

// The agent's Git through Axon, its secret sent as a bearer; the direct Git sends the host's token the same way, as
// an agent given the token would: both authenticate their first request, neither runs a credential helper.
const brokered = gitSandbox();
await brokered.git(["config", "--global", `url.${axonUrl}/git/bench/.insteadOf`, `${host.url}/`]);
await brokered.git(["config", "--global", `http.${axonUrl}/.extraHeader`, `Authorization: Bearer ${secret}`]);
const direct = gitSandbox();
await direct.git(["config", "--global", `http.${host.url}/.extraHeader`, `Authorization: Bearer ${host.token}`]);

const source = await generateRepository(direct, Number(flags.files), Number(flags.commits));
await host.createRepository("bench/source.git", source);
const packBytes = Number((await direct.git(["count-objects", "-v"], { cwd: source })).match(/size-pack: (\d+)/)?.[1] ?? 0) * 1024;

/** Axon's count of Git body bytes, once it has settled: a request is counted just after its answer went out. */
async function axonBytes(): Promise<number> {
  const scrape = async () => {
    const text = await (await fetch(`${axonUrl}/metrics`)).text();
    return [...text.matchAll(/^axon_git_bytes_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
  };
  let last = await scrape();
  for (let same = 0; same < 3; ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = await scrape();
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return last;
}

interface Measured {
  ms: number;
  bytes: number;
  /** Axon's own CPU time for the operation (through Axon only). */
  cpuMs: number;
}

async function timed(via: "axon" | "direct", work: () => Promise<void>): Promise<Measured> {
  const bytesBefore = via === "axon" ? await axonBytes() : host.bytes.received + host.bytes.sent;
  const cpuBefore = await axon.cpuMicros();
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  const cpuMs = ((await axon.cpuMicros()) - cpuBefore) / 1000;
  const bytesAfter = via === "axon" ? await axonBytes() : host.bytes.received + host.bytes.sent;
  return { ms, bytes: bytesAfter - bytesBefore, cpuMs };
}

let counter = 0;
const clone = (sandbox: GitSandbox) => async () => {
  const target = path.join(sandbox.home, `clone-${counter++}`);
  await sandbox.git(["clone", "-q", "--no-checkout", `${host.url}/bench/source.git`, target]);
  rmSync(target, { recursive: true, force: true });
};
const push = (sandbox: GitSandbox) => async () => {
  const repository = `bench/push-${counter++}.git`;
  await host.createRepository(repository);
  await sandbox.git(["push", "-q", `${host.url}/${repository}`, "main"], { cwd: source });
  rmSync(path.join(host.root, repository), { recursive: true, force: true });
};

const results: Record<string, Record<"axon" | "direct", Measured[]>> = { clone: { axon: [], direct: [] }, push: { axon: [], direct: [] } };
// One of each first, unmeasured: the page cache, the JIT and the connection pools warm up.
for (const operation of [clone, push]) {
  await operation(direct)();
  await operation(brokered)();
}
for (let run = 0; run < runs; run++) {
  for (const [name, operation] of [["clone", clone], ["push", push]] as const) {
    // Alternating which goes first, so neither always follows the other's page-cache warmth.
    const order = run % 2 === 0 ? (["direct", "axon"] as const) : (["axon", "direct"] as const);
    for (const via of order) results[name]![via].push(await timed(via, operation(via === "axon" ? brokered : direct)));
  }
}

// The large pack: incompressible bytes, stored uncompressed so that the client's own deflate is not what is timed.
const large = path.join(brokered.home, "large");
mkdirSync(large);
await brokered.git(["init", "-q", large]);
for (let index = 0; index < Number(flags["large-mib"]) / 10; index++) writeFileSync(path.join(large, `blob-${index}.bin`), randomBytes(10 * MiB));
const fastGit = ["-c", "core.compression=0", "-c", "pack.compression=0", "-c", "core.bigFileThreshold=1m", "-c", "pack.window=0"];
await brokered.git([...fastGit, "add", "-A"], { cwd: large });
await brokered.git(["commit", "-q", "-m", "large"], { cwd: large });
await host.createRepository("bench/large.git");
await host.createRepository("bench/large-direct.git");
const largeDirect = await timed("direct", () => direct.git([...fastGit, "push", "-q", `${host.url}/bench/large-direct.git`, "main"], { cwd: large }).then(() => undefined));
const idle = await axon.sample(); // also starts the peak window
const largeAxon = await timed("axon", () => brokered.git([...fastGit, "push", "-q", `${host.url}/bench/large.git`, "main"], { cwd: large }).then(() => undefined));
const during = await axon.sample();

await axon.stop();
await host.close();
rmSync(dir, { recursive: true, force: true });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const lines = [
  `Machine: ${machine()}; load average ${os.loadavg().map((load) => load.toFixed(1)).join(", ")} at the end.`,
  "",
  `Repository: ${flags.files} files in ${flags.commits} commits, a ${(packBytes / MiB).toFixed(1)} MiB pack; ${runs} runs of each, alternated; medians.`,
  "",
  "| operation | direct | through Axon | time ratio (goal ≤ 1.15×) | Axon's CPU | bytes direct | bytes through Axon | bytes ratio (goal ≤ 1.05×) |",
  "|---|---|---|---|---|---|---|---|",
];
for (const [name, measured] of Object.entries(results)) {
  const directMs = median(measured.direct.map((m) => m.ms));
  const axonMs = median(measured.axon.map((m) => m.ms));
  const directBytes = median(measured.direct.map((m) => m.bytes));
  const axonBytesMedian = median(measured.axon.map((m) => m.bytes));
  lines.push(
    `| ${name} | ${directMs.toFixed(0)} ms | ${axonMs.toFixed(0)} ms | ${(axonMs / directMs).toFixed(2)}× | ${median(measured.axon.map((m) => m.cpuMs)).toFixed(0)} ms | ${(directBytes / MiB).toFixed(2)} MiB | ${(axonBytesMedian / MiB).toFixed(2)} MiB | ${(axonBytesMedian / directBytes).toFixed(3)}× |`,
  );
}
lines.push(
  "",
  `Large push: ${flags["large-mib"]} MiB of random bytes, ${(largeAxon.bytes / MiB).toFixed(0)} MiB on the wire: direct ${(largeDirect.ms / 1000).toFixed(1)} s, through Axon ${(largeAxon.ms / 1000).toFixed(1)} s (${(largeAxon.ms / largeDirect.ms).toFixed(2)}×, Axon's CPU ${(largeAxon.cpuMs / 1000).toFixed(1)} s); ` +
    `Axon's RSS ${(idle.rssBytes / MiB).toFixed(0)} MiB before, at most ${(during.peakRssBytes / MiB).toFixed(0)} MiB during (+${((during.peakRssBytes - idle.rssBytes) / MiB).toFixed(0)} MiB).`,
);
console.log(lines.join("\n"));

/** A repository of source-like text files (some large, some small) changed over `commits` commits. */
async function generateRepository(sandbox: GitSandbox, files: number, commits: number): Promise<string> {
  const tree = path.join(sandbox.home, "source");
  await sandbox.git(["init", "-q", tree]);
  // No gc in the background while it is being built: one runs at the end.
  await sandbox.git(["config", "gc.auto", "0"], { cwd: tree });
  const words = Array.from({ length: 2000 }, () => randomBytes(3 + (randomBytes(1)[0]! % 6)).toString("hex"));
  const text = (lines: number) =>
    Array.from({ length: lines }, () => Array.from({ length: 8 }, () => words[randomBytes(2).readUInt16BE() % words.length]).join(" ")).join("\n") + "\n";
  for (let index = 0; index < files; index++) {
    const folder = path.join(tree, `module-${index % 40}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, `file-${index}.txt`), text(20 + (index % 200)));
  }
  await sandbox.git(["add", "-A"], { cwd: tree });
  await sandbox.git(["commit", "-q", "-m", "initial"], { cwd: tree });
  for (let commit = 1; commit < commits; commit++) {
    for (let change = 0; change < 25; change++) {
      const index = randomBytes(2).readUInt16BE() % files;
      writeFileSync(path.join(tree, `module-${index % 40}`, `file-${index}.txt`), text(20 + (index % 200)));
    }
    await sandbox.git(["commit", "-q", "-am", `change ${commit}`], { cwd: tree });
  }
  await sandbox.git(["gc", "-q"], { cwd: tree });
  return tree;
}
