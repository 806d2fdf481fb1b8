import { MAX_REPORT_BYTES, parseReport, RateLimit, readBounded, REPORTS_PER_MINUTE } from "@/lib/csp-report";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const limit = new RateLimit(REPORTS_PER_MINUTE);

/** One `csp-report` line per violation reported (docs/dashboard.md). */
export async function POST(request: Request): Promise<Response> {
  if (Number(request.headers.get("content-length") ?? "0") > MAX_REPORT_BYTES) {
    return new Response(null, { status: 413 });
  }
  const text = await readBounded(request.body, MAX_REPORT_BYTES);
  if (text === null) {
    return new Response(null, { status: 413 });
  }
  for (const violation of parseReport(text)) {
    if (!limit.take(Date.now())) {
      return new Response(null, { status: 429 });
    }
    const dropped = limit.dropped;
    limit.dropped = 0;
    console.log(`csp-report ${JSON.stringify(dropped ? { ...violation, dropped } : violation)}`);
  }
  return new Response(null, { status: 204 });
}
