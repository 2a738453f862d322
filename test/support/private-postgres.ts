import { execFile, execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
/** PostgreSQL 15, as on every developer's and CI machine (platform.md). */
const binaries = "/usr/lib/postgresql/15/bin";

/**
 * A PostgreSQL cluster of one test's own, on a free port, so the test may stop and start it without disturbing
 * the shared server other tests use (platform.md). Tests run as root and initdb refuses root: the cluster belongs
 * to the `postgres` user and every pg_ctl runs as it.
 */
export interface PrivatePostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  url: string;
  port: number;
  /** Fast shutdown: open sessions are terminated, as in a restart under load. Resolves once it has stopped. */
  stop(): Promise<void>;
  /** Starts it again, on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it if it runs and deletes its files; safe to call more than once. */
  remove(): Promise<void>;
}

const clusters = new Set<string>();
// A test runner that dies mid-test must not leave a server or its files behind.
process.once("exit", () => {
  for (const dir of clusters) {
    try {
      const pgCtl = path.join(binaries, "pg_ctl");
      execFileSync("runuser", ["-u", "postgres", "--", pgCtl, "-D", path.join(dir, "data"), "-m", "immediate", "stop"], { stdio: "ignore" });
    } catch {
      // not running
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "axon-pg-"));
  clusters.add(dir);
  const dataDir = path.join(dir, "data");
  const asPostgres = (binary: string, args: string[]) => run("runuser", ["-u", "postgres", "--", path.join(binaries, binary), ...args]);
  const pgCtl = (...args: string[]) => asPostgres("pg_ctl", ["-D", dataDir, "-l", path.join(dir, "log"), ...args]);
  const remove = async () => {
    if (!clusters.delete(dir)) return;
    // Whatever state a failed test left it in: stopping one that does not run merely fails.
    await pgCtl("-m", "immediate", "-w", "stop").catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { uid, gid } = await postgresUser();
    chownSync(dir, uid, gid);
    await asPostgres("initdb", ["-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync"]);
    const port = await freePort();
    // The socket directory is the cluster's own, so no other server's lock files are touched; fsync off: throwaway data.
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    const start = async () => {
      await pgCtl("-o", options, "-w", "start");
    };
    await start();
    return {
      url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
      port,
      start,
      stop: async () => {
        await pgCtl("-m", "fast", "-w", "stop");
      },
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** A port nobody listens on now; the cluster keeps it across restarts. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
