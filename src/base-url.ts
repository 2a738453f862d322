/**
 * An upstream's base URL as an operator writes it in a configuration file (credentials, Git hosts, inference
 * upstreams): http or https, with no user name, password, query or fragment (a secret goes in an environment
 * variable, never in a URL that may be logged). `fail` is given the reason and throws the file's own error.
 */
export function configuredBaseUrl(value: unknown, fail: (reason: string) => never): URL {
  if (typeof value !== "string") return fail("is required: an http or https URL");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail("is not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") fail("must be an http or https URL");
  if (url.username !== "" || url.password !== "") fail("may not carry a user name or password: a secret goes in an environment variable");
  if (url.search !== "" || url.hash !== "") fail("may not carry a query or a fragment");
  return url;
}
