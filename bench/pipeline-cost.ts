import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/pipeline-cost.ts [checkout…]`: what the call pipeline costs one List call (begin, running the
 * implementation in the call's context, finish), tracing off, in this checkout and in each other one named (a build of
 * an earlier commit, say), each in its own process, alternating, three rounds: with access lines off (LOG_LEVEL=warn)
 * and on (info, written by the checkout's own writer to /dev/null). Measures to a tenth of a microsecond what a server
 * bench cannot: the server's CPU per List moves by more than that from one run to the next.
 */

const script = fileURLToPath(import.meta.url);
const [, , mode, ...rest] = process.argv;
if (mode === "--measure") console.log(await measure(rest[0]!, rest[1]!));
else compare([path.resolve(import.meta.dirname, ".."), ...process.argv.slice(2).map((dir) => path.resolve(dir))]);

function compare(checkouts: string[]): void {
  const rounds = 3;
  const figures = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const checkout of round % 2 === 0 ? checkouts : [...checkouts].reverse()) {
      for (const level of ["warn", "info"]) {
        const micros = Number(execFileSync(process.execPath, ["--import", "tsx", script, "--measure", checkout, level], { encoding: "utf8" }));
        figures.set(`${checkout}|${level}`, [...(figures.get(`${checkout}|${level}`) ?? []), micros]);
      }
    }
  }
  console.log(`Machine: ${machine()}`);
  console.log(`Date: ${new Date().toISOString()}, load average ${os.loadavg()[0]!.toFixed(2)}`);
  console.log("");
  console.log("| checkout | LOG_LEVEL=warn, µs a call | info, µs a call |");
  console.log("| --- | ---: | ---: |");
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!.toFixed(2);
  for (const checkout of checkouts) {
    console.log(`| ${checkout} | ${median(figures.get(`${checkout}|warn`)!)} | ${median(figures.get(`${checkout}|info`)!)} |`);
  }
}

/** CPU µs a call in `checkout`'s own modules; any checkout since the pipeline began (its `begin` was synchronous then). */
async function measure(checkout: string, level: string): Promise<string> {
  const load = (file: string) => import(pathToFileURL(path.join(checkout, file)).href);
  const { CallPipeline } = await load("src/server/pipeline/call-pipeline.ts");
  const { Metrics } = await load("src/server/metrics.ts");
  const { IntakeBudget } = await load("src/server/intake-budget.ts");
  const { ConciergeService } = await load("src/gen/neuro_san/api/grpc/concierge_pb.ts");
  const logging = await load("src/logger.ts");
  const { pino } = await import("pino");
  // The checkout's own way of writing stdout (an earlier one: pino's asynchronous writer).
  const destination = logging.batchedLines?.("/dev/null") ?? pino.destination({ dest: "/dev/null", sync: false });
  const pipeline = new CallPipeline({
    logger: logging.createLogger(level, destination),
    metrics: new Metrics(),
    authenticate: () => undefined,
    forwardedMetadata: ["request_id", "user_id"],
    intake: new IntakeBudget(64 * 1024 * 1024),
  });
  const header = (): string | undefined => undefined;
  // In slices, so that the writer's asynchronous work runs between them as it would between requests.
  const run = async (calls: number): Promise<void> => {
    for (let done = 0; done < calls; done += 100) {
      for (let index = 0; index < 100; index++) {
        const call = await pipeline.begin({ method: ConciergeService.method.list, protocol: "grpc", header });
        call.run?.(() => undefined);
        call.finish();
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await run(50_000);
  const calls = 300_000;
  const before = process.cpuUsage();
  await run(calls);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const used = process.cpuUsage(before);
  return ((used.user + used.system) / calls).toFixed(2);
}
