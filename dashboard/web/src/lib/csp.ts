// The security headers every page is sent with (src/middleware.ts adds
// them). The content security policy names the API the image was built for
// (NEXT_PUBLIC_API_BASE): https and wss, or http and ws for a local API.
//
// Two policies ride together:
// - the enforced one is small: no plugins, no foreign <base>, no framing by
//   other sites, forms post only to the app or the API;
// - the full one is report-only: the browser blocks nothing under it and
//   reports what it would have blocked to /csp-report, which logs one
//   `csp-report` line each. Once those lines show nothing the app needs,
//   the full policy can be enforced (docs/dashboard.md).
// Storage (S3) is in neither: the browser reaches files only through the API.

/** The API's origin, in the two schemes the browser talks to it with. */
export type ApiSources = { http: string; ws: string };

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The API's sources from NEXT_PUBLIC_API_BASE; throws, saying what to set, when it is unusable. */
export function apiSources(apiBase: string | undefined): ApiSources {
  if (!apiBase) {
    throw new Error(
      "NEXT_PUBLIC_API_BASE is not set: build the web app for its API, " +
        "e.g. NEXT_PUBLIC_API_BASE=https://dashboard.example.com/api npm run build",
    );
  }
  let url: URL;
  try {
    url = new URL(apiBase);
  } catch {
    throw new Error(`NEXT_PUBLIC_API_BASE=${apiBase} is not a URL (want https://host/api)`);
  }
  if (url.protocol === "https:") {
    return { http: `https://${url.host}`, ws: `wss://${url.host}` };
  }
  if (url.protocol === "http:" && LOCAL_HOSTS.has(url.hostname)) {
    return { http: `http://${url.host}`, ws: `ws://${url.host}` };
  }
  throw new Error(
    `NEXT_PUBLIC_API_BASE=${apiBase}: the API must be https (plain http only on localhost)`,
  );
}

/** Where the full policy's reports go. */
export const REPORT_PATH = "/csp-report";

/** The part of the policy browsers enforce today. */
export function enforcedPolicy(api: ApiSources): string {
  return [
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'self'",
    `form-action 'self' ${api.http}`,
  ].join("; ");
}

/** The whole policy, report-only for now. */
export function fullPolicy(api: ApiSources): string {
  return [
    "default-src 'self'",
    // Next.js bootstraps each page with inline scripts; enforcing script-src
    // needs per-request nonces first (docs/dashboard.md).
    "script-src 'self' 'unsafe-inline'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${api.http} ${api.ws}`,
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'self'",
    "frame-src 'none'",
    "worker-src 'self'",
    "manifest-src 'self'",
    `form-action 'self' ${api.http}`,
    `report-uri ${REPORT_PATH}`,
  ].join("; ");
}

/** Every header the web app sends with every page. */
export function securityHeaders(apiBase: string | undefined): Record<string, string> {
  const api = apiSources(apiBase);
  return {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    // For browsers that predate frame-ancestors.
    "X-Frame-Options": "SAMEORIGIN",
    "Content-Security-Policy": enforcedPolicy(api),
    "Content-Security-Policy-Report-Only": fullPolicy(api),
  };
}
