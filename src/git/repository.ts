import type { GitHost, GitHosts } from "./hosts.js";

/** A repository on a configured host, as a Git route names it: `/git/<host>/<owner>/<name>[.git]/<service>`. */
export interface GitRepository {
  host: GitHost;
  /** Everything between the host and the repository's name: a user or an organization, or a group path (GitLab). */
  owner: string;
  /** Without `.git`. */
  name: string;
  /** The repository's path on the host as the client wrote it (`owner/name.git` or `owner/name`). */
  path: string;
}

/** What a Git route asks for: which repository, and the service under it (`info/refs`, `git-upload-pack`, ...). */
export interface GitRoute {
  repository: GitRepository;
  service: string;
}

export const GIT_PREFIX = "/git/";

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
/** Where a repository's path ends and the service begins. */
const SERVICE = /\/(info\/refs|git-upload-pack|git-receive-pack|info\/lfs(?:\/.*)?)$/;

/** The repository and service a path names; undefined for no configured host or a path that names no repository. */
export function resolveGitRoute(path: string, hosts: GitHosts): GitRoute | { unknownHost: string } | undefined {
  if (!path.startsWith(GIT_PREFIX)) return undefined;
  const rest = path.slice(GIT_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0) return undefined;
  const hostName = rest.slice(0, slash);
  const service = SERVICE.exec(rest.slice(slash));
  if (service === null) return undefined;
  const repositoryPath = rest.slice(slash + 1, rest.length - service[0].length);
  const segments = repositoryPath.split("/");
  if (segments.length < 2 || segments.length > 8 || !segments.every((segment) => SEGMENT.test(segment) && !segment.endsWith(".lock"))) return undefined;
  const host = hosts.get(hostName);
  if (host === undefined) return { unknownHost: hostName };
  const last = segments.at(-1)!;
  const name = last.endsWith(".git") ? last.slice(0, -4) : last;
  if (name === "") return undefined;
  return { repository: { host, owner: segments.slice(0, -1).join("/"), name, path: repositoryPath }, service: service[1]! };
}

/** The host's URL for `service` of the repository (`info/refs`, `git-receive-pack`, `info/lfs/objects/batch`), with `query`. */
export function upstreamUrl(repository: GitRepository, service: string, query = ""): URL {
  const url = new URL(`${repository.host.origin}${repository.host.basePath}/${repository.path}/${service}`);
  url.search = query;
  return url;
}
