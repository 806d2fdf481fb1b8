// /csp-report: what a browser reports under the report-only policy becomes
// one `csp-report` line on the web pod's log. The body is bounded and the
// lines are rate limited, so a page (or anyone) posting reports in a loop
// cannot flood the log.

/** Larger report bodies are refused unread. */
export const MAX_REPORT_BYTES = 16 * 1024;
/** At most this many lines a minute; the rest are counted and dropped. */
export const REPORTS_PER_MINUTE = 60;
/** Each field is cut to this length in the log line. */
const MAX_FIELD = 300;

/** The fields of a violation worth a log line. */
export type Violation = {
  disposition: string;
  directive: string;
  blocked: string;
  document: string;
  source: string;
  line: number | null;
};

function field(value: unknown): string {
  return typeof value === "string" ? value.slice(0, MAX_FIELD) : "";
}

/**
 * The violations in a report body: the `report-uri` form
 * (`{"csp-report": {...}}`, kebab-case) or the Reporting API form
 * (`[{"type": "csp-violation", "body": {...}}]`, camelCase).
 */
export function parseReport(text: string): Violation[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return [];
  }
  const bodies: Record<string, unknown>[] = [];
  if (Array.isArray(json)) {
    for (const item of json) {
      if (item && typeof item === "object" && item.type === "csp-violation" && item.body) {
        bodies.push(item.body as Record<string, unknown>);
      }
    }
  } else if (json && typeof json === "object" && "csp-report" in json) {
    bodies.push((json as Record<string, Record<string, unknown>>)["csp-report"]);
  }
  return bodies.map((b) => ({
    disposition: field(b["disposition"]),
    directive: field(b["effective-directive"] ?? b["effectiveDirective"] ?? b["violated-directive"]),
    blocked: field(b["blocked-uri"] ?? b["blockedURL"]),
    document: field(b["document-uri"] ?? b["documentURL"]),
    source: field(b["source-file"] ?? b["sourceFile"]),
    line: Number(b["line-number"] ?? b["lineNumber"]) || null,
  }));
}

/** A fixed one-minute window. */
export class RateLimit {
  private windowStart = 0;
  private used = 0;
  dropped = 0;

  constructor(private readonly perMinute: number) {}

  /** True when one more line may be written now. */
  take(now: number): boolean {
    if (now - this.windowStart >= 60_000) {
      this.windowStart = now;
      this.used = 0;
    }
    if (this.used >= this.perMinute) {
      this.dropped += 1;
      return false;
    }
    this.used += 1;
    return true;
  }
}

/** Reads at most `limit` bytes of a body; null when it is longer. */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<string | null> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
